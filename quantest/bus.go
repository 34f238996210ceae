package quantest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// TestBus runs the conformance suite of quan.Bus: one function per
// behaviour area, each with its subtests. newBus returns a bus holding no
// messages, whose streams cover the subjects "quan.>" and their dead
// letters, and which shares nothing with any other bus it returns (its own
// stream names, its own subjects on the wire); it registers its cleanup
// with t.Cleanup. Every subtest gets its own bus and runs in parallel; the
// suite stops all its Consume calls before that cleanup.
//
// Timings are asserted only from below (a redelivery never comes before
// its backoff), never from above: a slow machine only makes the suite
// slower.
func TestBus(t *testing.T, newBus func(t *testing.T) quan.Bus) {
	t.Helper()
	testBusDelivery(t, newBus)
	testBusRedelivery(t, newBus)
	testBusConsume(t, newBus)
	testBusBacklog(t, newBus)
	testBusHeaders(t, newBus)
}

// testBusHeaders: a message's headers reach its consumer as published,
// names in their case, by Publish and PublishMany, large ones too (a batch
// of claims carries one trace parent per claim), and its dead letter
// keeps them; a header no bus can carry is refused.
func testBusHeaders(t *testing.T, newBus func(t *testing.T) quan.Bus) {
	t.Run("Headers", func(t *testing.T) {
		t.Parallel()
		parents := make([]string, quan.MaxClaimsPerMessage)
		for i := range parents {
			parents[i] = fmt.Sprintf("00-%032x-%016x-01", i+1, i+1)
		}
		header := map[string]string{
			"traceparent":          "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
			"Tracestate":           "vendor=a,other=b",
			quan.ClaimTracesHeader: strings.Join(parents, ","),
		}

		t.Run("PublishAndPublishMany", func(t *testing.T) {
			t.Parallel()
			bus := newBus(t)
			const subject = "quan.bus.headers"
			busPublish(t, bus, quan.Message{Subject: subject, ID: "one", Data: []byte("1"), Header: header})
			many := []quan.Message{
				{Subject: subject, ID: "many-0", Data: []byte("2"), Header: map[string]string{"traceparent": "x", "empty": ""}},
				{Subject: subject, ID: "many-1", Data: []byte("3"), Header: header},
				{Subject: subject, ID: "bare", Data: []byte("4")},
			}
			if err := bus.PublishMany(t.Context(), many); err != nil {
				t.Fatalf("PublishMany: %v", err)
			}
			rec := newBusRecorder()
			busConsume(t, bus, subject, "worker", quan.ConsumeOptions{}, rec.ok)
			byID := map[string]quan.Message{}
			for _, m := range rec.wait(t, 4) {
				byID[m.ID] = m
			}
			for id, want := range map[string]map[string]string{"one": header, "many-0": many[0].Header, "many-1": header, "bare": nil} {
				if got := byID[id].Header; !maps.Equal(got, want) {
					t.Errorf("message %s: header %.200v, want %.200v", id, got, want)
				}
			}
		})

		t.Run("DeadLetterKeepsThem", func(t *testing.T) {
			t.Parallel()
			bus := newBus(t)
			const subject = "quan.bus.headers.dead"
			busPublish(t, bus, quan.Message{Subject: subject, ID: "poison", Data: []byte("bad"), Header: header})
			busConsume(t, bus, subject, "worker", quan.ConsumeOptions{MaxDeliver: 1}, func(context.Context, quan.Message) error {
				return errors.New("cannot parse")
			})
			dead := newBusRecorder()
			busConsume(t, bus, quan.DeadLetterPrefix+subject, "inspector", quan.ConsumeOptions{}, dead.ok)
			m := dead.wait(t, 1)[0]
			if !maps.Equal(m.Header, header) || !strings.Contains(m.Reason, "cannot parse") {
				t.Errorf("dead letter: header %.200v, reason %q; want the message's header and the reason", m.Header, m.Reason)
			}
		})

		t.Run("Refused", func(t *testing.T) {
			t.Parallel()
			bus := newBus(t)
			for _, h := range []map[string]string{{"": "v"}, {"a b": "v"}, {"a:b": "v"}, {"a\nb": "v"}, {"k": "line\nbreak"}, {"k": "cr\r"}} {
				err := bus.Publish(t.Context(), quan.Message{Subject: "quan.bus.headers.bad", ID: "x", Header: h})
				if quan.ErrorCode(err) != quan.EINVALID {
					t.Errorf("publish with header %q: %v, want EINVALID", h, err)
				}
				err = bus.PublishMany(t.Context(), []quan.Message{{Subject: "quan.bus.headers.bad", ID: "x", Header: h}})
				if quan.ErrorCode(err) != quan.EINVALID {
					t.Errorf("publish many with header %q: %v, want EINVALID", h, err)
				}
			}
		})
	})
}

// testBusBacklog: a durable's backlog counts the messages of its subject
// it has not acknowledged, before its first Consume too, and none of
// another subject.
func testBusBacklog(t *testing.T, newBus func(t *testing.T) quan.Bus) {
	t.Run("Backlog", func(t *testing.T) {
		t.Parallel()
		bus := newBus(t)
		const subject = "quan.bus.backlog"
		backlog := func(want int64) {
			t.Helper()
			n, err := bus.Backlog(t.Context(), subject, "worker")
			if err != nil || n != want {
				t.Fatalf("backlog %d %v, want %d", n, err, want)
			}
		}
		backlog(0)
		busPublishN(t, bus, subject, "m", 3)
		busPublishN(t, bus, "quan.bus.other", "o", 2)
		backlog(3) // no consumer yet
		release := make(chan struct{})
		held := newBusRecorder()
		c := busConsume(t, bus, subject, "worker", quan.ConsumeOptions{Concurrency: 3}, func(ctx context.Context, m quan.Message) error {
			held.ok(ctx, m)
			<-release
			return nil
		})
		held.wait(t, 3)
		backlog(3) // delivered, not acknowledged
		close(release)
		deadline := time.Now().Add(10 * time.Second)
		for {
			n, err := bus.Backlog(t.Context(), subject, "worker")
			if err == nil && n == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("backlog %d %v after every message was handled", n, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		c.stop(t)
	})
}

// testBusDelivery: what is published is delivered, once per message id,
// whether or not a consumer is there yet; a subject outside the streams
// is refused.
func testBusDelivery(t *testing.T, newBus func(t *testing.T) quan.Bus) {
	t.Run("Delivery", func(t *testing.T) {
		t.Parallel()
		t.Run("PublishConsume", func(t *testing.T) {
			t.Parallel()
			bus := newBus(t)
			busPublish(t, bus, quan.Message{Subject: "quan.bus.one", ID: "id-1", Data: []byte("hello 券")})
			rec := newBusRecorder()
			busConsume(t, bus, "quan.bus.one", "worker", quan.ConsumeOptions{}, rec.ok)
			got := rec.wait(t, 1)
			want := quan.Message{Subject: "quan.bus.one", ID: "id-1", Data: []byte("hello 券"), Attempt: 1}
			if !busEqual(got[0], want) {
				t.Errorf("got %+v, want %+v", got[0], want)
			}
		})

		t.Run("DurableWhileNoConsumer", func(t *testing.T) {
			t.Parallel()
			bus := newBus(t)
			const subject = "quan.bus.durable"
			busPublishN(t, bus, subject, "early", 3)
			rec := newBusRecorder()
			c := busConsume(t, bus, subject, "worker", quan.ConsumeOptions{}, rec.ok)
			rec.wait(t, 3)
			c.stop(t)

			// Published while the durable has no consumer: delivered when it
			// is back, and the messages it acknowledged are not.
			busPublishN(t, bus, subject, "late", 2)
			rec2 := newBusRecorder()
			busConsume(t, bus, subject, "worker", quan.ConsumeOptions{}, rec2.ok)
			got := rec2.wait(t, 2)
			rec2.none(t)
			ids := busIDs(got)
			slices.Sort(ids)
			if !slices.Equal(ids, []string{"late-0", "late-1"}) {
				t.Errorf("after restart got %v, want [late-0 late-1]", ids)
			}
		})

		t.Run("DeDuplicateByID", func(t *testing.T) {
			t.Parallel()
			bus := newBus(t)
			const s1, s2 = "quan.bus.dedup1", "quan.bus.dedup2"
			busPublish(t, bus, quan.Message{Subject: s1, ID: "a", Data: []byte("first")})
			busPublish(t, bus, quan.Message{Subject: s1, ID: "a", Data: []byte("retry")})
			busPublish(t, bus, quan.Message{Subject: s1, ID: "b", Data: []byte("other")})
			// The window is per subject: the same ID elsewhere is another
			// message.
			busPublish(t, bus, quan.Message{Subject: s2, ID: "a", Data: []byte("elsewhere")})
			rec1, rec2 := newBusRecorder(), newBusRecorder()
			busConsume(t, bus, s1, "worker", quan.ConsumeOptions{}, rec1.ok)
			busConsume(t, bus, s2, "worker", quan.ConsumeOptions{}, rec2.ok)
			got1, got2 := rec1.wait(t, 2), rec2.wait(t, 1)
			rec1.none(t)
			byID := map[string]string{}
			for _, m := range got1 {
				byID[m.ID] = string(m.Data)
			}
			if byID["a"] != "first" || byID["b"] != "other" {
				t.Errorf("%s got %v, want a=first b=other", s1, byID)
			}
			if string(got2[0].Data) != "elsewhere" {
				t.Errorf("%s got %q, want elsewhere", s2, got2[0].Data)
			}
		})

		t.Run("ManyExactlyOnce", func(t *testing.T) {
			t.Parallel()
			bus := newBus(t)
			const subject, n, publishers = "quan.bus.many", 10000, 4
			rec := newBusRecorder()
			for range 2 {
				busConsume(t, bus, subject, "many", quan.ConsumeOptions{}, rec.ok)
			}
			var wg sync.WaitGroup
			for p := range publishers {
				wg.Go(func() {
					for i := p; i < n; i += publishers {
						id := fmt.Sprintf("m-%d", i)
						if err := bus.Publish(t.Context(), quan.Message{Subject: subject, ID: id, Data: []byte(id)}); err != nil {
							t.Errorf("publish %s: %v", id, err)
							return
						}
					}
				})
			}
			wg.Wait()
			rec.exactlyOnce(t, "m", n)
		})

		t.Run("PublishOutsideStreams", func(t *testing.T) {
			t.Parallel()
			bus := newBus(t)
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			if err := bus.Publish(ctx, quan.Message{Subject: "elsewhere.x", ID: "1"}); err == nil {
				t.Error("publish on a subject outside the bus's streams: no error")
			}
		})
	})
}

// testBusRedelivery: a message whose handler fails, or holds it past its
// ack wait, comes again after its backoff, until it runs out of
// deliveries and goes to the dead letters.
func testBusRedelivery(t *testing.T, newBus func(t *testing.T) quan.Bus) {
	t.Run("Redelivery", func(t *testing.T) {
		t.Parallel()
		t.Run("AfterError", func(t *testing.T) {
			t.Parallel()
			bus := newBus(t)
			const subject = "quan.bus.retry"
			backoff := []time.Duration{200 * time.Millisecond, 400 * time.Millisecond}
			busPublish(t, bus, quan.Message{Subject: subject, ID: "flaky", Data: []byte("x")})
			rec := newBusRecorder()
			busConsume(t, bus, subject, "worker", quan.ConsumeOptions{Backoff: backoff}, func(ctx context.Context, m quan.Message) error {
				rec.ok(ctx, m)
				if m.Attempt < 3 {
					return fmt.Errorf("attempt %d fails", m.Attempt)
				}
				return nil
			})
			got := rec.wait(t, 3)
			rec.none(t)
			for i, m := range got {
				if m.Attempt != i+1 || m.ID != "flaky" {
					t.Errorf("delivery %d: id %q attempt %d, want flaky attempt %d", i, m.ID, m.Attempt, i+1)
				}
			}
			// Backoff honoured, roughly: never well before it.
			at := rec.times()
			for i := 1; i < len(got); i++ {
				if gap := at[i].Sub(at[i-1]); gap < backoff[i-1]/2 {
					t.Errorf("redelivery %d came %s after the failure, backoff is %s", i+1, gap, backoff[i-1])
				}
			}
		})

		t.Run("AfterAckWait", func(t *testing.T) {
			t.Parallel()
			bus := newBus(t)
			const subject = "quan.bus.slow"
			const ackWait = 500 * time.Millisecond
			busPublish(t, bus, quan.Message{Subject: subject, ID: "slow", Data: []byte("x")})
			rec := newBusRecorder()
			busConsume(t, bus, subject, "worker", quan.ConsumeOptions{AckWait: ackWait}, func(ctx context.Context, m quan.Message) error {
				rec.ok(ctx, m)
				if m.Attempt == 1 {
					time.Sleep(4 * ackWait) // past AckWait, ignoring ctx: presumed lost
				}
				return nil
			})
			got := rec.wait(t, 2)
			if got[0].Attempt != 1 || got[1].Attempt != 2 || got[1].ID != "slow" {
				t.Errorf("deliveries %v, want attempts [1 2] of slow", busAttempts(got))
			}
		})

		t.Run("DeadLetter", func(t *testing.T) {
			t.Parallel()
			bus := newBus(t)
			const subject = "quan.bus.poison"
			busPublish(t, bus, quan.Message{Subject: subject, ID: "poison", Data: []byte("bad")})
			busPublish(t, bus, quan.Message{Subject: subject, ID: "fine", Data: []byte("good")})
			failing := newBusRecorder()
			opt := quan.ConsumeOptions{MaxDeliver: 3, Backoff: []time.Duration{10 * time.Millisecond}}
			busConsume(t, bus, subject, "worker", opt, func(ctx context.Context, m quan.Message) error {
				if m.ID == "fine" {
					return nil
				}
				failing.ok(ctx, m)
				return errors.New("cannot parse")
			})
			dead := newBusRecorder()
			busConsume(t, bus, quan.DeadLetterPrefix+subject, "inspector", quan.ConsumeOptions{}, dead.ok)
			got := dead.wait(t, 1)
			dead.none(t)
			if m := got[0]; m.ID != "poison" || string(m.Data) != "bad" || m.Subject != quan.DeadLetterPrefix+subject ||
				!strings.Contains(m.Reason, "cannot parse") {
				t.Errorf("dead letter %+v, want poison/bad on %s with the reason", m, quan.DeadLetterPrefix+subject)
			}
			if attempts := busAttempts(failing.all()); !slices.Equal(attempts, []int{1, 2, 3}) {
				t.Errorf("the handler saw attempts %v, want [1 2 3]", attempts)
			}
		})
	})
}

// testBusConsume: consumers of one durable share its messages, a consumer
// handles up to its Concurrency at once, and Consume returns when its
// context ends.
func testBusConsume(t *testing.T, newBus func(t *testing.T) quan.Bus) {
	t.Run("Consume", func(t *testing.T) {
		t.Parallel()
		t.Run("SharedDurable", func(t *testing.T) {
			t.Parallel()
			bus := newBus(t)
			const subject, n = "quan.bus.shared", 1000
			busPublishN(t, bus, subject, "m", n)
			// Each consumer waits on its first message until the other has
			// one too: while one is held, the other must get messages. An
			// adapter may prefetch, but not all n for one consumer.
			var started [2]atomic.Bool
			bothStarted := make(chan struct{})
			var once sync.Once
			rec := newBusRecorder()
			for i := range 2 {
				busConsume(t, bus, subject, "shared", quan.ConsumeOptions{}, func(ctx context.Context, m quan.Message) error {
					if !started[i].Swap(true) && started[1-i].Load() {
						once.Do(func() { close(bothStarted) })
					}
					select {
					case <-bothStarted:
					case <-time.After(20 * time.Second):
						t.Errorf("consumer %d was held 20s and the other got nothing: the durable is not shared", i)
						once.Do(func() { close(bothStarted) })
					}
					return rec.ok(ctx, m)
				})
			}
			rec.exactlyOnce(t, "m", n)
		})

		t.Run("Concurrency", func(t *testing.T) {
			// With Concurrency 8, eight handlers run at once: each waits
			// until all eight are in, which one at a time could never reach.
			t.Parallel()
			bus := newBus(t)
			const subject, conc, n = "quan.bus.parallel", 8, 40
			var (
				mu       sync.Mutex
				inFlight int
				most     int
				arrived  = make(chan struct{})
			)
			rec := newBusRecorder()
			handle := func(ctx context.Context, m quan.Message) error {
				mu.Lock()
				inFlight++
				most = max(most, inFlight)
				if inFlight == conc {
					select {
					case <-arrived:
					default:
						close(arrived)
					}
				}
				mu.Unlock()
				select {
				case <-arrived:
				case <-time.After(busWait):
					return fmt.Errorf("only %d handlers ran at once", conc-1)
				}
				mu.Lock()
				inFlight--
				mu.Unlock()
				return rec.ok(ctx, m)
			}
			busConsume(t, bus, subject, "parallel", quan.ConsumeOptions{Concurrency: conc}, handle)
			busPublishN(t, bus, subject, "p", n)
			rec.exactlyOnce(t, "p", n)
			mu.Lock()
			defer mu.Unlock()
			if most != conc {
				t.Errorf("at most %d handlers ran at once, want %d", most, conc)
			}
		})

		t.Run("ReturnsWhenContextEnds", func(t *testing.T) {
			t.Parallel()
			bus := newBus(t)
			const subject = "quan.bus.stop"

			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			if err := bus.Consume(ctx, subject, "worker", quan.ConsumeOptions{}, func(context.Context, quan.Message) error { return nil }); err != nil {
				t.Fatalf("Consume with an ended context: %v, want nil", err)
			}

			busPublish(t, bus, quan.Message{Subject: subject, ID: "inflight", Data: []byte("x")})
			entered, release := make(chan struct{}), make(chan struct{})
			var finished atomic.Bool
			c := busConsume(t, bus, subject, "worker", quan.ConsumeOptions{}, func(ctx context.Context, m quan.Message) error {
				close(entered)
				<-release
				finished.Store(true)
				return nil
			})
			busWaitClosed(t, entered, "the handler never ran")
			c.cancel()
			go func() {
				time.Sleep(200 * time.Millisecond)
				close(release)
			}()
			if err := c.wait(t); err != nil {
				t.Errorf("Consume returned %v after its context ended, want nil", err)
			}
			if !finished.Load() {
				t.Error("Consume returned before the handling in flight finished")
			}

			// The handling finished, so it was acknowledged: the next consumer
			// of the durable gets only what follows.
			busPublish(t, bus, quan.Message{Subject: subject, ID: "next", Data: []byte("y")})
			rec := newBusRecorder()
			busConsume(t, bus, subject, "worker", quan.ConsumeOptions{}, rec.ok)
			got := rec.wait(t, 1)
			rec.none(t)
			if got[0].ID != "next" {
				t.Errorf("got %q, want next", got[0].ID)
			}
		})
	})
}

// busWait bounds every wait of the suite for something that must happen.
const busWait = 20 * time.Second

// busQuiet is how long the suite watches for a delivery that must not
// come.
const busQuiet = 300 * time.Millisecond

func busPublish(t *testing.T, bus quan.Bus, m quan.Message) {
	t.Helper()
	if err := bus.Publish(t.Context(), m); err != nil {
		t.Fatalf("publish %s %s: %v", m.Subject, m.ID, err)
	}
}

// publishN publishes n messages whose ID and data are prefix-i.
func busPublishN(t *testing.T, bus quan.Bus, subject, prefix string, n int) {
	t.Helper()
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		busPublish(t, bus, quan.Message{Subject: subject, ID: id, Data: []byte(id)})
	}
}

// consumer is a Consume call running in the background.
type busConsumer struct {
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// consume starts Consume and stops it at the end of the test, before the
// bus's cleanup (registered earlier, so run later).
func busConsume(t *testing.T, bus quan.Bus, subject, durable string, opt quan.ConsumeOptions, handle func(context.Context, quan.Message) error) *busConsumer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := &busConsumer{cancel: cancel, done: make(chan error, 1)}
	go func() { c.done <- bus.Consume(ctx, subject, durable, opt, handle) }()
	t.Cleanup(func() { c.stop(t) })
	return c
}

// stop ends the Consume call and fails the test unless it returns nil.
func (c *busConsumer) stop(t *testing.T) {
	t.Helper()
	c.cancel()
	if err := c.wait(t); err != nil {
		t.Errorf("Consume returned %v, want nil", err)
	}
}

// wait waits for the Consume call to return, at most busWait.
func (c *busConsumer) wait(t *testing.T) error {
	t.Helper()
	c.once.Do(func() {
		select {
		case c.err = <-c.done:
		case <-time.After(busWait):
			c.err = fmt.Errorf("Consume did not return %s after its context ended", busWait)
		}
	})
	return c.err
}

// busRecorder keeps the messages a handler saw and when.
type busRecorder struct {
	mu   sync.Mutex
	msgs []quan.Message
	at   []time.Time
	seen chan struct{} // a token per message
}

func newBusRecorder() *busRecorder { return &busRecorder{seen: make(chan struct{}, 100000)} }

// ok records m and succeeds; it is a handler.
func (r *busRecorder) ok(_ context.Context, m quan.Message) error {
	r.mu.Lock()
	m.Data = slices.Clone(m.Data)
	r.msgs = append(r.msgs, m)
	r.at = append(r.at, time.Now())
	r.mu.Unlock()
	r.seen <- struct{}{}
	return nil
}

func (r *busRecorder) all() []quan.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.msgs)
}

func (r *busRecorder) times() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.at)
}

// wait returns the first n messages once they are in, failing the test
// if they are not within busWait.
func (r *busRecorder) wait(t *testing.T, n int) []quan.Message {
	t.Helper()
	deadline := time.After(busWait)
	for i := range n {
		select {
		case <-r.seen:
		case <-deadline:
			t.Fatalf("got %d messages in %s, want %d: %v", i, busWait, n, busIDs(r.all()))
		}
	}
	return r.all()[:n]
}

// none fails the test if one more message comes within busQuiet.
func (r *busRecorder) none(t *testing.T) {
	t.Helper()
	select {
	case <-r.seen:
		all := r.all()
		t.Errorf("an unexpected delivery: %+v", all[len(all)-1])
	case <-time.After(busQuiet):
	}
}

// exactlyOnce waits for the n messages prefix-0 … prefix-(n-1) and fails
// the test if one is missing or comes twice.
func (r *busRecorder) exactlyOnce(t *testing.T, prefix string, n int) {
	t.Helper()
	got := r.wait(t, n)
	r.none(t)
	count := map[string]int{}
	for _, m := range got {
		count[m.ID]++
	}
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		if count[id] != 1 {
			t.Errorf("%s handled %d times, want 1", id, count[id])
		}
	}
}

func busWaitClosed(t *testing.T, ch <-chan struct{}, msg string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(busWait):
		t.Fatal(msg)
	}
}

func busEqual(a, b quan.Message) bool {
	return a.Subject == b.Subject && a.ID == b.ID && string(a.Data) == string(b.Data) && a.Attempt == b.Attempt
}

func busIDs(ms []quan.Message) []string {
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	return ids
}

func busAttempts(ms []quan.Message) []int {
	a := make([]int, len(ms))
	for i, m := range ms {
		a[i] = m.Attempt
	}
	return a
}
