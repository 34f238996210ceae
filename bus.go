package quan

import (
	"context"
	"time"
)

// Message is one message on the bus.
type Message struct {
	Subject string
	// ID de-duplicates: a second Publish of the same ID on the same
	// subject within the bus's duplicate window is dropped, so a publisher
	// that retries after a crash does not deliver twice.
	ID   string
	Data []byte
	// Attempt is 1 on the first delivery and counts redeliveries.
	Attempt int
	// Reason is set on messages consumed from a dead-letter subject: the
	// error of the last failed handling.
	Reason string
	// Header holds values by name that travel with the message, such as
	// the W3C trace context ("traceparent") of the work that published
	// it. Names are case-sensitive, delivered as published, and a dead
	// letter keeps its message's. Publish refuses (EINVALID) a name that
	// is empty or holds a space, colon or control character, a value with
	// a line break, and the names the bus uses itself (the NATS bus's:
	// Nats-*, Quan-Id, Quan-Attempts, Reason). A message published
	// without headers is consumed with none (nil or empty).
	Header map[string]string
}

// ConsumeOptions tune a consumer. The zero value works.
type ConsumeOptions struct {
	// MaxDeliver is how many times a message is delivered before it goes
	// to the dead-letter subject; 0 means DefaultMaxDeliver.
	MaxDeliver int
	// Backoff is the wait before each redelivery after a failed handling;
	// the last value repeats. Nil means DefaultBackoff.
	Backoff []time.Duration
	// AckWait is how long a delivery may be handled before it is presumed
	// lost and redelivered; 0 means DefaultAckWait. The handler's context
	// outlives Consume's but ends at AckWait.
	AckWait time.Duration
	// Concurrency is how many messages are handled at once; 0 means 1.
	// Above 1 the handler runs in parallel with itself and must be safe
	// for it; a handler that batches its work (many claims in one store
	// transaction) needs it to get a batch.
	Concurrency int
	// Prefetch is how many messages are held, beyond those being
	// handled, ready for the next handling; 0 means as many as make
	// max(64, 2×Concurrency) in all. Their AckWait runs while they wait:
	// a consumer whose messages are large batches keeps it small.
	Prefetch int
}

// Bus defaults.
const (
	DefaultMaxDeliver = 5
	DefaultAckWait    = 30 * time.Second
)

// DefaultBackoff is the redelivery schedule when ConsumeOptions has none.
var DefaultBackoff = []time.Duration{100 * time.Millisecond, time.Second, 5 * time.Second}

// DeadLetterPrefix is put before a subject to name its dead-letter subject:
// messages of "quan.claims.batch" that exhausted their deliveries are published
// on "dead.quan.claims.batch", with the last error in the header Reason.
const DeadLetterPrefix = "dead."

// Bus is a durable message bus with at-least-once delivery.
type Bus interface {
	// Publish stores m durably before it returns. A subject outside the
	// bus's streams is an error.
	Publish(ctx context.Context, m Message) error
	// PublishMany publishes ms like Publish, many at a time without
	// waiting for each to be stored: far cheaper per message for a bulk
	// or batched hand-off. It returns once every message is stored, or
	// the first error; on an error some may be stored, and publishing them
	// all again is safe when they have IDs.
	PublishMany(ctx context.Context, ms []Message) error

	// Consume delivers the messages of subject to handle until ctx ends,
	// then returns nil. Consumers with the same durable name share the
	// messages (each goes to one of them, across processes); the name
	// survives restarts, so nothing published while no consumer ran is
	// lost. handle returning nil acknowledges the message; an error has it
	// redelivered after the backoff, and after MaxDeliver deliveries it is
	// published to DeadLetterPrefix+subject with the error as its Reason
	// and acknowledged. A message whose last delivery timed out (AckWait)
	// goes there on its next delivery.
	Consume(ctx context.Context, subject, durable string, opt ConsumeOptions, handle func(context.Context, Message) error) error
	// Backlog is how many messages of subject the consumers named durable
	// have not acknowledged yet: not delivered, or delivered and not
	// handled. A durable no Consume has made yet has the whole subject as
	// its backlog.
	Backlog(ctx context.Context, subject, durable string) (int64, error)
}
