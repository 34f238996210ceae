package nats

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/integration"
	"github.com/quanhq/quan/quantest"
)

// The external server is opt-in: QUAN_TEST_NATS=nats://127.0.0.1:4222.
// Set, it must answer; the test fails rather than skips.
func externalURL(t testing.TB) string {
	t.Helper()
	return integration.Need(t, integration.NATS)[0]
}

func TestBus(t *testing.T) {
	t.Run("Embedded", func(t *testing.T) {
		t.Parallel()
		srv := startTestServer(t, t.TempDir())
		quantest.TestBus(t, func(t *testing.T) quan.Bus {
			return openTestBus(t, func(cfg Config) (*Bus, error) { return srv.Bus(t.Context(), cfg) })
		})
	})
	t.Run("External", func(t *testing.T) {
		url := externalURL(t)
		t.Parallel()
		quantest.TestBus(t, func(t *testing.T) quan.Bus {
			return openTestBus(t, func(cfg Config) (*Bus, error) { return OpenConfig(t.Context(), url, cfg) })
		})
	})
}

// startTestServer starts an embedded server on dir until t ends. Its
// warnings and errors go to t's log, shown when t fails.
func startTestServer(t testing.TB, dir string) *Server {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := StartEmbedded(t.Context(), dir, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// openTestBus opens a bus on streams and subjects of its own, so that
// tests run in parallel and on a shared server, and deletes its streams
// at the end of the test.
func openTestBus(t testing.TB, open func(Config) (*Bus, error)) *Bus {
	t.Helper()
	suffix := rand.Text()[:10]
	cfg := Config{Stream: "TEST_" + suffix, Namespace: "test" + strings.ToLower(suffix)}
	b, err := open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.Drop(ctx); err != nil {
			t.Error(err)
		}
		if err := b.Close(); err != nil {
			t.Error(err)
		}
		if err := b.Close(); err != nil {
			t.Errorf("second close: %v", err)
		}
	})
	return b
}

// runConsume runs Consume until the end of the test.
func runConsume(t *testing.T, b *Bus, subject, durable string, opt quan.ConsumeOptions, handle func(context.Context, quan.Message) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Consume(ctx, subject, durable, opt, handle) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Consume: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("Consume did not return")
		}
	})
}

// TestPrefetch: a consumer holds the messages it handles and Prefetch
// more, or 64 in all by default, whatever is waiting on the stream.
func TestPrefetch(t *testing.T) {
	srv := startTestServer(t, t.TempDir())
	b := openTestBus(t, func(cfg Config) (*Bus, error) { return srv.Bus(t.Context(), cfg) })
	ms := make([]quan.Message, 200)
	for i := range ms {
		ms[i] = quan.Message{Subject: "quan.prefetch", ID: fmt.Sprint("m", i), Data: []byte("x")}
	}
	if err := b.PublishMany(t.Context(), ms); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		durable string
		opt     quan.ConsumeOptions
		want    int
	}{
		{"small", quan.ConsumeOptions{Concurrency: 2, Prefetch: 3}, 5},
		{"default", quan.ConsumeOptions{Concurrency: 2}, 64},
	} {
		var started atomic.Int64
		release := make(chan struct{})
		runConsume(t, b, "quan.prefetch", tc.durable, tc.opt, func(ctx context.Context, m quan.Message) error {
			started.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return errors.New("held")
		})
		t.Cleanup(func() { close(release) })
		for deadline := time.Now().Add(5 * time.Second); started.Load() < int64(tc.opt.Concurrency) && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		c, err := b.newConsumer("quan.prefetch", tc.durable, tc.opt, func(context.Context, quan.Message) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		var pending int
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			cons, err := b.js.Consumer(t.Context(), c.stream, c.name)
			if err != nil {
				t.Fatal(err)
			}
			info, err := cons.Info(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if pending = info.NumAckPending; pending >= tc.want {
				break
			}
		}
		time.Sleep(200 * time.Millisecond) // would it take more?
		cons, _ := b.js.Consumer(t.Context(), c.stream, c.name)
		info, err := cons.Info(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if info.NumAckPending != tc.want || started.Load() != int64(tc.opt.Concurrency) {
			t.Errorf("%s: %d messages held, %d handled (%+v); want %d held, %d handled", tc.durable, info.NumAckPending, started.Load(), tc.opt, tc.want, tc.opt.Concurrency)
		}
	}
}

// counter counts the deliveries of each message ID.
type counter struct {
	mu    sync.Mutex
	count map[string]int
	total int
	more  chan struct{}
}

func newCounter() *counter { return &counter{count: map[string]int{}, more: make(chan struct{}, 1)} }

func (c *counter) handle(_ context.Context, m quan.Message) error {
	c.mu.Lock()
	c.count[m.ID]++
	c.total++
	c.mu.Unlock()
	select {
	case c.more <- struct{}{}:
	default:
	}
	return nil
}

// waitAll waits until every id was delivered at least once and returns
// the deliveries beyond one.
func (c *counter) waitAll(t *testing.T, ids []string) (dups int) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		c.mu.Lock()
		missing := 0
		for _, id := range ids {
			if c.count[id] == 0 {
				missing++
			}
		}
		dups = c.total - (len(ids) - missing)
		c.mu.Unlock()
		if missing == 0 {
			return dups
		}
		select {
		case <-c.more:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatalf("%d of %d messages never arrived", missing, len(ids))
		}
	}
}

func ids(prefix string, n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return s
}

func publishIDs(t *testing.T, b *Bus, subject string, ids []string) {
	t.Helper()
	for _, id := range ids {
		if err := b.Publish(t.Context(), quan.Message{Subject: subject, ID: id, Data: []byte(id)}); err != nil {
			t.Fatalf("publish %s: %v", id, err)
		}
	}
}

// The port has no header for it; the dead letter carries the reason and
// the ID in its headers, as operators see them with the nats CLI.
func TestDeadLetterHeaders(t *testing.T) {
	t.Parallel()
	srv := startTestServer(t, t.TempDir())
	b := openTestBus(t, func(cfg Config) (*Bus, error) { return srv.Bus(t.Context(), cfg) })

	tests := []struct {
		name    string
		opt     quan.ConsumeOptions
		handle  func(context.Context, quan.Message) error
		reason  string
		attempt string
	}{
		{
			name:    "HandlerError",
			opt:     quan.ConsumeOptions{MaxDeliver: 2, Backoff: []time.Duration{time.Millisecond}},
			handle:  func(context.Context, quan.Message) error { return errors.New("cannot parse: bad json") },
			reason:  "cannot parse: bad json",
			attempt: "2",
		},
		{
			// The last delivery is lost to AckWait: the next one is buried
			// unhandled rather than dropped by the server.
			name: "LastDeliveryTimedOut",
			opt:  quan.ConsumeOptions{MaxDeliver: 1, AckWait: 300 * time.Millisecond},
			handle: func(_ context.Context, m quan.Message) error {
				if m.Attempt == 1 {
					time.Sleep(time.Second)
				}
				return nil
			},
			reason:  "not acknowledged after 1 deliveries",
			attempt: "2",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			subject := "quan.dead." + tt.name
			runConsume(t, b, subject, "worker", tt.opt, tt.handle)
			publishIDs(t, b, subject, []string{"poison"})

			stream, err := b.js.Stream(t.Context(), b.deadStream())
			if err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(20 * time.Second)
			for {
				msg, err := stream.GetLastMsgForSubject(t.Context(), b.wire(quan.DeadLetterPrefix+subject))
				if errors.Is(err, jetstream.ErrMsgNotFound) && time.Now().Before(deadline) {
					time.Sleep(50 * time.Millisecond)
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if got := msg.Header.Get(headerReason); !strings.HasPrefix(got, tt.reason) {
					t.Errorf("Reason %q, want %q…", got, tt.reason)
				}
				if got := msg.Header.Get(headerID); got != "poison" {
					t.Errorf("Quan-Id %q, want poison", got)
				}
				if got := msg.Header.Get(headerAttempts); got != tt.attempt {
					t.Errorf("Quan-Attempts %q, want %s", got, tt.attempt)
				}
				if string(msg.Data) != "poison" {
					t.Errorf("data %q, want poison", msg.Data)
				}
				return
			}
		})
	}
}

// Messages published, and a durable's progress, survive a restart of the
// embedded server on the same directory.
func TestEmbeddedRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const subject = "quan.restart"
	cfg := Config{Stream: "RESTART"}

	srv := startTestServer(t, dir)
	b, err := srv.Bus(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	before := ids("before", 50)
	publishIDs(t, b, subject, before)
	c := newCounter()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- b.Consume(ctx, subject, "worker", quan.ConsumeOptions{}, c.handle) }()
	c.waitAll(t, before)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	after := ids("after", 50)
	var many []quan.Message
	for _, id := range after {
		many = append(many, quan.Message{Subject: subject, ID: id, Data: []byte(id)})
	}
	if err := b.PublishMany(t.Context(), many); err != nil {
		t.Fatal(err)
	}
	b.Close()
	srv.Close()
	srv.Close()

	srv = startTestServer(t, dir)
	b, err = srv.Bus(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	c2 := newCounter()
	runConsume(t, b, subject, "worker", quan.ConsumeOptions{}, c2.handle)
	if dups := c2.waitAll(t, after); dups != 0 {
		t.Errorf("%d duplicate deliveries", dups)
	}
	time.Sleep(300 * time.Millisecond)
	c2.mu.Lock()
	defer c2.mu.Unlock()
	if c2.total != len(after) {
		t.Errorf("after the restart %d deliveries, want the %d unconsumed messages only", c2.total, len(after))
	}
}

// A bus on a TCP connection rides out a server restart: publishes made
// while the server is down wait for it, and the consumer carries on.
func TestReconnect(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv, err := startServer(t.Context(), dir, nil, -1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	url := srv.clientURL()
	port := srv.srv.Addr().(*net.TCPAddr).Port

	b, err := Open(t.Context(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	const subject = "quan.reconnect"
	c := newCounter()
	runConsume(t, b, subject, "worker", quan.ConsumeOptions{}, c.handle)

	before := ids("before", 100)
	publishIDs(t, b, subject, before)
	c.waitAll(t, before)

	srv.Close()
	during, batch := ids("during", 20), ids("batch", 500)
	published := make(chan error, 2)
	go func() {
		for _, id := range during {
			if err := b.Publish(t.Context(), quan.Message{Subject: subject, ID: id, Data: []byte(id)}); err != nil {
				published <- err
				return
			}
		}
		published <- nil
	}()
	go func() {
		var ms []quan.Message
		for _, id := range batch {
			ms = append(ms, quan.Message{Subject: subject, ID: id, Data: []byte(id)})
		}
		published <- b.PublishMany(t.Context(), ms)
	}()
	time.Sleep(500 * time.Millisecond)
	srv, err = startServer(t.Context(), dir, nil, port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	for range 2 {
		if err := <-published; err != nil {
			t.Fatalf("publish during the restart: %v", err)
		}
	}
	after := ids("after", 100)
	publishIDs(t, b, subject, after)
	all := slices.Concat(before, during, batch, after)
	dups := c.waitAll(t, all)
	t.Logf("%d messages through a restart, %d redelivered", len(all), dups)
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		field string // "" if valid
	}{
		{"ZeroValue", Config{}, ""},
		{"Namespaced", Config{Stream: "T1", Namespace: "t1.x", Subjects: []string{"quan.>", "coupon.*.issued"}}, ""},
		{"StreamWithDot", Config{Stream: "a.b"}, "Stream"},
		{"WildcardNamespace", Config{Namespace: "t.*"}, "Namespace"},
		{"EverySubject", Config{Subjects: []string{">"}}, "Subjects"},
		{"DeadSubjects", Config{Subjects: []string{"dead.>"}}, "Subjects"},
		{"BadSubject", Config{Subjects: []string{"quan..x"}}, "Subjects"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if quan.ErrorCode(err) != quan.EINVALID {
				t.Fatalf("Validate: %v, want invalid", err)
			}
			if f := quan.ErrorFields(err); len(f) == 0 || f[0].Field != tt.field {
				t.Errorf("fields %v, want %s", f, tt.field)
			}
		})
	}
}

func TestSubsetOf(t *testing.T) {
	tests := []struct {
		filter, pattern string
		want            bool
	}{
		{"quan.claims", "quan.>", true},
		{"quan.claims.x", "quan.>", true},
		{"quan", "quan.>", false},
		{"quan.*", "quan.>", true},
		{"quan.>", "quan.>", true},
		{"quan.>", "quan.*", false},
		{"quan.a", "quan.*", true},
		{"quan.a.b", "quan.*", false},
		{"dead.quan.a", "quan.>", false},
		{"quan.a", "quan.a", true},
	}
	for _, tt := range tests {
		if got := subsetOf(tt.filter, tt.pattern); got != tt.want {
			t.Errorf("subsetOf(%q, %q) = %v, want %v", tt.filter, tt.pattern, got, tt.want)
		}
	}
}

func TestPublishInvalid(t *testing.T) {
	t.Parallel()
	srv := startTestServer(t, t.TempDir())
	b := openTestBus(t, func(cfg Config) (*Bus, error) { return srv.Bus(t.Context(), cfg) })
	for _, m := range []quan.Message{
		{Subject: "other.x"},
		{Subject: "quan.*"},
		{Subject: "quan.x", ID: "a\r\nNats-Msg-Id: b"},
	} {
		if err := b.Publish(t.Context(), m); quan.ErrorCode(err) != quan.EINVALID {
			t.Errorf("Publish(%q, %q): %v, want invalid", m.Subject, m.ID, err)
		}
	}
	err := b.Consume(t.Context(), "quan.x", "bad.name", quan.ConsumeOptions{}, func(context.Context, quan.Message) error { return nil })
	if quan.ErrorCode(err) != quan.EINVALID {
		t.Errorf("Consume with durable bad.name: %v, want invalid", err)
	}
}

// testLog writes to a test's log.
type testLog struct{ t testing.TB }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log("nats server: " + strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// onRecord is a slog.Handler that calls fn with each record's message.
type onRecord struct{ fn func(msg string) }

func (h onRecord) Enabled(context.Context, slog.Level) bool      { return true }
func (h onRecord) Handle(_ context.Context, r slog.Record) error { h.fn(r.Message); return nil }
func (h onRecord) WithAttrs([]slog.Attr) slog.Handler            { return h }
func (h onRecord) WithGroup(string) slog.Handler                 { return h }

// TestOpenRetriesStreamStore: when the server fails to create a stream's
// store (here a file lies where the stream's directory goes: a 500
// "error creating store for stream", which CI once met with nothing in
// the way), opening the bus asks again, and succeeds once the store can
// be made; if it never can, the open fails with the server's error after
// a few tries.
func TestOpenRetriesStreamStore(t *testing.T) {
	for _, tc := range []struct {
		name  string
		clear bool // the obstacle goes at the first retry
	}{{"Transient", true}, {"Lasting", false}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			srv := startTestServer(t, dir)
			// The server makes its account's directories on the first
			// stream: open a bus once to have them.
			openTestBus(t, func(cfg Config) (*Bus, error) { return srv.Bus(t.Context(), cfg) })
			streams := filepath.Join(dir, "jetstream", "$G", "streams")
			blocker := filepath.Join(streams, "BLOCKED")
			if err := os.WriteFile(blocker, []byte("not a directory"), 0o644); err != nil {
				t.Fatal(err)
			}
			// The server deletes what lies in the way of a store it
			// failed to make: a lasting obstacle is put back for each try.
			var retries atomic.Int64
			logger := slog.New(onRecord{func(msg string) {
				if !strings.Contains(msg, "create or update stream: retrying") {
					return
				}
				retries.Add(1)
				if !tc.clear {
					if err := os.WriteFile(blocker, []byte("not a directory"), 0o644); err != nil {
						t.Error(err)
					}
				} else if err := os.Remove(blocker); err != nil && !errors.Is(err, os.ErrNotExist) {
					t.Error(err)
				}
			}})
			b, err := srv.Bus(t.Context(), Config{Stream: "BLOCKED", Namespace: "blocked", Logger: logger})
			if !tc.clear {
				if err == nil || !strings.Contains(err.Error(), "error creating store for stream") || retries.Load() != streamTries-1 {
					t.Fatalf("open with the store blocked: %v after %d retries; want the server's error after %d", err, retries.Load(), streamTries-1)
				}
				return
			}
			if err != nil {
				t.Fatalf("open after one failed try: %v", err)
			}
			t.Cleanup(func() { b.Drop(context.Background()); b.Close() })
			if retries.Load() != 1 {
				t.Errorf("%d retries, want 1", retries.Load())
			}
			if err := b.Publish(t.Context(), quan.Message{Subject: quan.ClaimBatchSubject, ID: "m1", Data: []byte("x")}); err != nil {
				t.Errorf("publish on the bus opened at the second try: %v", err)
			}
		})
	}
}
