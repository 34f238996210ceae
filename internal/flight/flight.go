// Package flight runs one call per key at a time: callers that arrive
// while a key's call runs wait for it and share its error (a single-flight
// group keyed by an id, such as a template's).
package flight

import "sync"

// Group runs one call per key at a time. The zero value is ready.
type Group struct {
	mu    sync.Mutex
	calls map[int64]*call
}

type call struct {
	done chan struct{}
	err  error
}

// Do runs fn unless a call of key runs already, in which case it waits for
// that call and returns its error.
func (g *Group) Do(key int64, fn func() error) error {
	g.mu.Lock()
	if g.calls == nil {
		g.calls = map[int64]*call{}
	}
	if c, ok := g.calls[key]; ok {
		g.mu.Unlock()
		<-c.done
		return c.err
	}
	c := &call{done: make(chan struct{})}
	g.calls[key] = c
	g.mu.Unlock()
	c.err = fn()
	g.mu.Lock()
	delete(g.calls, key)
	g.mu.Unlock()
	close(c.done)
	return c.err
}
