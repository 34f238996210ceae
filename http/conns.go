package http

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quanhq/quan"
)

// cappedListener accepts at most max connections open at once. A
// connection past it is answered 503 with Retry-After as soon as it is
// accepted, without reading its request, and closed: it costs the server
// no goroutine of net/http, no buffers and no wait for its headers. The
// answer is refused, rather than the connection left in the kernel's
// backlog (as golang.org/x/net/netutil.LimitListener does), so that the
// client learns at once that it should come back.
type cappedListener struct {
	net.Listener
	max     int64
	open    atomic.Int64
	refusal []byte // the whole 503 response
	logger  *slog.Logger

	// refusing bounds the refused connections being answered at once;
	// past it, one is closed without an answer.
	refusing chan struct{}
	warned   atomic.Bool // the log said the cap was reached, until it is not
}

// maxRefusing bounds the refused connections answered at once.
const maxRefusing = 64

// refusalLinger is how long a refused connection may send its request
// after the 503 before it is closed: closing a socket with unread data
// resets it, and a reset may destroy the 503 before the client reads it
// (net/http waits as long before closing for the same reason).
const refusalLinger = 500 * time.Millisecond

func newCappedListener(ln net.Listener, max int, logger *slog.Logger) *cappedListener {
	l := &cappedListener{Listener: ln, max: int64(max), logger: logger, refusing: make(chan struct{}, maxRefusing)}
	p := Problem{
		Type:   "urn:quan:problem:" + quan.EUNAVAILABLE,
		Title:  http.StatusText(statusOf(quan.EUNAVAILABLE)),
		Status: statusOf(quan.EUNAVAILABLE),
		Detail: fmt.Sprintf("the server has as many connections open as it takes (%d): try again in a moment", max),
		Code:   quan.EUNAVAILABLE,
	}
	body, _ := json.Marshal(p)
	body = append(body, '\n')
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", p.Status, p.Title)
	fmt.Fprintf(&b, "Content-Type: application/problem+json\r\nX-Content-Type-Options: nosniff\r\n")
	fmt.Fprintf(&b, "Retry-After: %s\r\n", strconv.Itoa(int(ConnsRetryAfter/time.Second)))
	fmt.Fprintf(&b, "Connection: close\r\nContent-Length: %d\r\n\r\n", len(body))
	b.Write(body)
	l.refusal = b.Bytes()
	return l
}

// Accept returns the next connection within the cap, answering those
// past it.
func (l *cappedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if n := l.open.Add(1); n > l.max {
			l.open.Add(-1)
			if !l.warned.Swap(true) {
				l.logger.Warn("connections refused: as many open as --max-conns allows", "max_conns", l.max)
			}
			l.refuse(c)
			continue
		}
		l.warned.Store(false)
		return &cappedConn{Conn: c, l: l}, nil
	}
}

// refuse answers c 503 and closes it, in the background.
func (l *cappedListener) refuse(c net.Conn) {
	select {
	case l.refusing <- struct{}{}:
	default:
		c.Close() // a flood: no answer rather than a goroutine each
		return
	}
	go func() {
		defer func() { <-l.refusing }()
		defer c.Close()
		c.SetDeadline(time.Now().Add(refusalLinger))
		if _, err := c.Write(l.refusal); err != nil {
			return
		}
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		io.Copy(io.Discard, io.LimitReader(c, 64<<10)) // until the client closes, or the deadline
	}()
}

// Open is how many connections are open.
func (l *cappedListener) Open() int64 { return l.open.Load() }

// cappedConn is a connection counted by its listener until it is closed.
type cappedConn struct {
	net.Conn
	l      *cappedListener
	closed sync.Once
}

func (c *cappedConn) Close() error {
	err := c.Conn.Close()
	c.closed.Do(func() { c.l.open.Add(-1) })
	return err
}

// CloseWrite lets net/http half-close the connection as it would a TCP
// connection of its own.
func (c *cappedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
