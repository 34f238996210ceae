// Package nats implements quan.Bus on NATS JetStream, on an external
// server (Open) or on one embedded in the process (StartEmbedded).
//
// Subjects map onto two streams: Config.Stream holds Config.Subjects
// (default "quan.>") and Config.Stream+"_DEAD" holds their dead letters
// (quan.DeadLetterPrefix before each). Both keep their messages in files,
// for a limited age, and drop a message whose Nats-Msg-Id was seen within
// Config.Duplicates. A Config.Namespace puts a token before every subject
// on the wire, so that several installations, or tests, share one server.
package nats

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quanhq/quan"
)

var _ quan.Bus = (*Bus)(nil)

// Header names the bus writes. Nats-Msg-Id is JetStream's own.
const (
	headerID       = "Quan-Id"       // quan.Message.ID, as given
	headerReason   = "Reason"        // on dead letters: the last handler error
	headerAttempts = "Quan-Attempts" // on dead letters: deliveries made
)

// Config describes the streams of a bus. The zero value works.
type Config struct {
	// Stream names the stream of quan's messages; default "QUAN". Its
	// dead letters go to the stream Stream+"_DEAD".
	Stream string
	// Namespace, if set, goes before every subject on the wire: with
	// "t1", quan.claims.batch is t1.quan.claims.batch. Handlers see the subject
	// without it.
	Namespace string
	// Subjects are the subject patterns of the stream; default "quan.>".
	Subjects []string
	// Duplicates is how long a message ID is remembered to drop a second
	// publish of it; default 2 minutes.
	Duplicates time.Duration
	// MaxAge is how long a message is kept, consumed or not; default 7
	// days. DeadMaxAge is the same for dead letters; default 30 days.
	MaxAge     time.Duration
	DeadMaxAge time.Duration
	// RetryFor bounds how long Publish retries through a lost connection
	// (a server restart) when its context has no deadline; default 1
	// minute.
	RetryFor time.Duration
	// Logger receives connection events and consumer trouble; nil
	// discards.
	Logger *slog.Logger
}

// withDefaults returns c with its zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.Stream == "" {
		c.Stream = "QUAN"
	}
	if len(c.Subjects) == 0 {
		c.Subjects = []string{"quan.>"}
	}
	if c.Duplicates == 0 {
		c.Duplicates = 2 * time.Minute
	}
	if c.MaxAge == 0 {
		c.MaxAge = 7 * 24 * time.Hour
	}
	if c.DeadMaxAge == 0 {
		c.DeadMaxAge = 30 * 24 * time.Hour
	}
	if c.RetryFor == 0 {
		c.RetryFor = time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports what is wrong with c as a quan.EINVALID error.
func (c Config) Validate() error {
	c = c.withDefaults()
	var fields []quan.FieldError
	bad := func(field, format string, args ...any) {
		fields = append(fields, quan.FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if !validName(c.Stream) {
		bad("Stream", "%q is not a stream name", c.Stream)
	}
	if c.Namespace != "" && (!validSubject(c.Namespace) || strings.ContainsAny(c.Namespace, "*>")) {
		bad("Namespace", "%q is not a literal subject", c.Namespace)
	}
	for _, s := range c.Subjects {
		switch {
		case !validSubject(s):
			bad("Subjects", "%q is not a subject", s)
		case strings.HasPrefix(s, "*") || strings.HasPrefix(s, ">"):
			bad("Subjects", "%q must start with a literal token", s)
		case strings.HasPrefix(s+".", quan.DeadLetterPrefix):
			bad("Subjects", "%q would hold dead letters", s)
		}
	}
	if c.Duplicates < 0 || c.MaxAge < 0 || c.DeadMaxAge < 0 || c.RetryFor < 0 {
		bad("Duplicates", "durations must not be negative")
	}
	if c.Duplicates > c.MaxAge {
		bad("Duplicates", "%s is longer than MaxAge %s", c.Duplicates, c.MaxAge)
	}
	if len(fields) > 0 {
		return &quan.Error{Code: quan.EINVALID, Message: "invalid nats bus config", Fields: fields}
	}
	return nil
}

// Bus is a quan.Bus on JetStream. Its methods are safe for concurrent use.
type Bus struct {
	cfg    Config
	dead   []string // dead-letter subject patterns
	nc     *nats.Conn
	js     jetstream.JetStream
	logger *slog.Logger
	once   sync.Once
}

// Open connects to the NATS server at url (nats://host:port) and opens a
// bus with the default Config. See OpenConfig.
func Open(ctx context.Context, url string, logger *slog.Logger) (*Bus, error) {
	return OpenConfig(ctx, url, Config{Logger: logger})
}

// OpenConfig connects to the NATS server at url and creates or updates
// the bus's streams. The server must run JetStream. Once open, the bus
// reconnects for ever after losing the server; Publish and Consume carry
// on when it is back.
func OpenConfig(ctx context.Context, url string, cfg Config) (*Bus, error) {
	return open(ctx, cfg, url)
}

// Bus opens a bus on s through an in-process connection. See OpenConfig.
// The bus stops working when s closes; close it first.
func (s *Server) Bus(ctx context.Context, cfg Config) (*Bus, error) {
	return open(ctx, cfg, "", nats.InProcessServer(s.srv))
}

func open(ctx context.Context, cfg Config, url string, opts ...nats.Option) (*Bus, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	b := &Bus{cfg: cfg, logger: cfg.Logger}
	for _, s := range cfg.Subjects {
		b.dead = append(b.dead, quan.DeadLetterPrefix+s)
	}
	timeout := 5 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	opts = append(opts,
		nats.Name("quan"),
		nats.Timeout(timeout),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250*time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				b.logger.Warn("nats disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			b.logger.Info("nats reconnected", "url", nc.ConnectedUrlRedacted())
		}),
	)
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("open bus: connect %s: %w", url, err)
	}
	b.nc = nc
	// Async publishes that see no answer (the server went away) fail
	// after this instead of waiting for ever; PublishMany retries them.
	b.js, err = jetstream.New(nc, jetstream.WithPublishAsyncTimeout(10*time.Second))
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("open bus: %w", err)
	}
	if err := b.ensureStreams(ctx); err != nil {
		nc.Close()
		return nil, fmt.Errorf("open bus: %w", err)
	}
	return b, nil
}

// ensureStreams creates the bus's two streams or brings them to its
// config; running it again changes nothing.
func (b *Bus) ensureStreams(ctx context.Context) error {
	streams := []jetstream.StreamConfig{{
		Name:        b.cfg.Stream,
		Description: "quan messages",
		Subjects:    b.wireAll(b.cfg.Subjects),
		MaxAge:      b.cfg.MaxAge,
	}, {
		Name:        b.deadStream(),
		Description: "quan dead letters: messages whose handling failed every delivery",
		Subjects:    b.wireAll(b.dead),
		MaxAge:      b.cfg.DeadMaxAge,
	}}
	for _, sc := range streams {
		sc.Storage = jetstream.FileStorage
		sc.Retention = jetstream.LimitsPolicy // every durable reads every message
		sc.Discard = jetstream.DiscardOld
		sc.Duplicates = b.cfg.Duplicates
		if err := b.ensureStream(ctx, sc); err != nil {
			return fmt.Errorf("stream %s: %w", sc.Name, err)
		}
	}
	return nil
}

// streamTries is how often ensureStream asks the server, streamRetryWait
// how long it waits after the first failure (doubled after each).
const (
	streamTries     = 4
	streamRetryWait = 100 * time.Millisecond
)

// ensureStream creates or updates one stream. The server's own failures
// (500: it could not create the stream's store, a cluster that is
// electing a leader) are asked again a few times, 0.7 s in all; its
// refusals of the config and other errors are final.
func (b *Bus) ensureStream(ctx context.Context, sc jetstream.StreamConfig) error {
	wait := streamRetryWait
	for try := 1; ; try++ {
		_, err := b.js.CreateOrUpdateStream(ctx, sc)
		var apiErr *jetstream.APIError
		if err == nil || try == streamTries || !errors.As(err, &apiErr) || apiErr.Code < 500 {
			return err
		}
		b.logger.Warn("nats: create or update stream: retrying", "stream", sc.Name, "try", try, "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait *= 2
	}
}

func (b *Bus) deadStream() string { return b.cfg.Stream + "_DEAD" }

// wire returns the subject on the wire of a quan subject.
func (b *Bus) wire(subject string) string {
	if b.cfg.Namespace == "" {
		return subject
	}
	return b.cfg.Namespace + "." + subject
}

func (b *Bus) wireAll(subjects []string) []string {
	w := make([]string, len(subjects))
	for i, s := range subjects {
		w[i] = b.wire(s)
	}
	return w
}

// unwire returns the quan subject of a subject on the wire.
func (b *Bus) unwire(subject string) string {
	if b.cfg.Namespace == "" {
		return subject
	}
	return strings.TrimPrefix(subject, b.cfg.Namespace+".")
}

// Publish stores m in its stream and returns once the server has
// acknowledged it. A message with an ID is published with Nats-Msg-Id
// set to its subject and ID, so JetStream drops a second one of the same
// subject and ID within Config.Duplicates (and retrying here is safe).
// While the connection is down Publish retries until ctx ends, or for
// Config.RetryFor when ctx has no deadline. A subject outside
// Config.Subjects, an ID with a line break and a header quan.Message
// refuses are quan.EINVALID. Headers ride as NATS headers.
func (b *Bus) Publish(ctx context.Context, m quan.Message) (err error) {
	defer b.unavailable(&err)
	msg, err := b.message(m)
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	if err := b.publish(ctx, msg); err != nil {
		return fmt.Errorf("publish %s: %w", m.Subject, err)
	}
	return nil
}

// message builds the NATS message of m, checking its subject and ID.
func (b *Bus) message(m quan.Message) (*nats.Msg, error) {
	if err := checkSubject(b.cfg.Subjects, m.Subject); err != nil {
		return nil, err
	}
	if strings.ContainsAny(m.ID, "\r\n") {
		return nil, quan.Errorf(quan.EINVALID, "message id %q holds a line break", m.ID)
	}
	msg := nats.NewMsg(b.wire(m.Subject))
	msg.Data = m.Data
	for k, v := range m.Header {
		if err := checkHeader(k, v); err != nil {
			return nil, err
		}
		msg.Header[k] = []string{v}
	}
	if m.ID != "" {
		msg.Header.Set(headerID, m.ID)
		// JetStream de-duplicates by Nats-Msg-Id across the whole stream;
		// the port promises it per subject, so the subject is part of it.
		msg.Header.Set(jetstream.MsgIDHeader, m.Subject+" "+m.ID)
	}
	return msg, nil
}

// reserved reports whether the header name k is one the bus writes
// itself (or JetStream reads), which a message may not carry.
func reserved(k string) bool {
	return len(k) >= 5 && strings.EqualFold(k[:5], "Nats-") ||
		strings.EqualFold(k, headerID) || strings.EqualFold(k, headerReason) || strings.EqualFold(k, headerAttempts)
}

// checkHeader refuses a header a NATS message cannot carry as it is, or
// that the bus writes itself, as quan.EINVALID.
func checkHeader(k, v string) error {
	if k == "" || strings.ContainsFunc(k, func(r rune) bool { return r <= ' ' || r == ':' || r == 0x7f }) {
		return quan.Errorf(quan.EINVALID, "header name %q: want no space, colon or control character", k)
	}
	if reserved(k) {
		return quan.Errorf(quan.EINVALID, "header %q is the bus's own", k)
	}
	if strings.ContainsAny(v, "\r\n") {
		return quan.Errorf(quan.EINVALID, "header %s holds a line break", k)
	}
	return nil
}

// userHeader returns the headers of h a message was published with,
// those the bus writes left out; nil if there are none.
func userHeader(h nats.Header) map[string]string {
	var out map[string]string
	for k, vs := range h {
		if len(vs) == 0 || reserved(k) {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(h))
		}
		out[k] = vs[0]
	}
	return out
}

// publish sends msg until JetStream acknowledges it, retrying what a
// server restart causes: no responders, timeouts, a lost connection.
func (b *Bus) publish(ctx context.Context, msg *nats.Msg) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b.cfg.RetryFor)
		defer cancel()
	}
	wait := 50 * time.Millisecond
	for try := 1; ; try++ {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := b.js.PublishMsg(actx, msg)
		cancel()
		if err == nil {
			return nil
		}
		if !retryable(err) || ctx.Err() != nil {
			return err
		}
		if errors.Is(err, jetstream.ErrNoStreamResponse) && try%5 == 0 {
			// Still no stream after a while: the server may have come
			// back without its data. Put the streams back.
			if err := b.ensureStreams(ctx); err != nil {
				b.logger.Warn("nats publish: recreate streams", "err", err)
			}
		}
		b.logger.Warn("nats publish: retrying", "subject", msg.Subject, "try", try, "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// retryable reports whether a failed publish may succeed if sent again.
// The server's refusals (a full stream, a bad subject) and a closed
// connection are final.
func retryable(err error) bool {
	var apiErr *jetstream.APIError
	switch {
	case errors.As(err, &apiErr),
		errors.Is(err, nats.ErrConnectionClosed),
		errors.Is(err, nats.ErrBadSubject),
		errors.Is(err, nats.ErrMaxPayload):
		return false
	}
	return true
}

// PublishMany publishes ms like Publish, but many at a time without
// waiting for each acknowledgement: far faster for a bulk hand-off. It
// returns once every message is stored, or the first error; on an error
// some messages may be stored, and publishing them all again is safe
// when they have IDs.
func (b *Bus) PublishMany(ctx context.Context, ms []quan.Message) (err error) {
	defer b.unavailable(&err)
	// At most window acks are awaited at once, below JetStream's default
	// of 4000 pending, where PublishMsgAsync would stall.
	const window = 3000
	msgs := make([]*nats.Msg, len(ms))
	for i, m := range ms {
		msg, err := b.message(m)
		if err != nil {
			return fmt.Errorf("publish many: %w", err)
		}
		msgs[i] = msg
	}
	var (
		pending []jetstream.PubAckFuture
		retry   []*nats.Msg
	)
	// await waits for the oldest pending ack; a failure goes to retry.
	await := func() error {
		f := pending[0]
		pending = pending[1:]
		select {
		case <-f.Ok():
		case <-f.Err():
			retry = append(retry, f.Msg())
		case <-ctx.Done():
			return fmt.Errorf("publish many: %w", ctx.Err())
		}
		return nil
	}
	for _, msg := range msgs {
		f, err := b.js.PublishMsgAsync(msg)
		if err != nil {
			retry = append(retry, msg)
			continue
		}
		pending = append(pending, f)
		if len(pending) >= window {
			if err := await(); err != nil {
				return err
			}
		}
	}
	for len(pending) > 0 {
		if err := await(); err != nil {
			return err
		}
	}
	// The rare message that failed (a reconnect) goes the slow way, which
	// retries until the server answers.
	for _, msg := range retry {
		if err := b.publish(ctx, msg); err != nil {
			return fmt.Errorf("publish many: %s: %w", b.unwire(msg.Subject), err)
		}
	}
	return nil
}

// Drop deletes the bus's streams, with every message and consumer on
// them. For tests on a shared server, and for retiring a stream.
func (b *Bus) Drop(ctx context.Context) (err error) {
	defer b.unavailable(&err)
	for _, s := range []string{b.cfg.Stream, b.deadStream()} {
		if err := b.js.DeleteStream(ctx, s); err != nil {
			return fmt.Errorf("nats: delete stream %s: %w", s, err)
		}
	}
	return nil
}

// Close closes the bus's connection after sending what it buffered.
// Consume calls still running return an error. Safe to call twice.
func (b *Bus) Close() error {
	b.once.Do(func() {
		if b.nc.IsConnected() {
			_ = b.nc.FlushTimeout(2 * time.Second)
		}
		b.nc.Close()
	})
	return nil
}

// Ping checks that the bus's JetStream answers, for readiness probes: a
// connection that is down or reconnecting, or a server without JetStream,
// fails it.
func (b *Bus) Ping(ctx context.Context) (err error) {
	defer b.unavailable(&err)
	if st := b.nc.Status(); st != nats.CONNECTED {
		return quan.Unavailable(quan.BackendBus, fmt.Errorf("nats: connection %s", st))
	}
	if _, err := b.js.AccountInfo(ctx); err != nil {
		return fmt.Errorf("nats jetstream: %w", err)
	}
	return nil
}
