package nats

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quanhq/quan"
)

// prefetch is how many messages a Consume call holds, those it handles
// included, unless ConsumeOptions.Prefetch says otherwise. Their AckWait runs while they wait, so it stays small: 64
// handlings must fit in AckWait or the last of them are redelivered
// (to someone) before they are handled here. Each prefetched message
// handed back when Consume stops counts as a delivery too (JetStream
// cannot take one back), so a consumer that restarts very often brings
// the messages it held closer to MaxDeliver.
const prefetch = 64

// Consume handles the messages of subject (wildcards allowed, within the
// bus's subjects or their dead letters) with a JetStream durable pull
// consumer named after durable and subject, created if missing. Calls
// with the same durable and subject, in any process, share it; the last
// to start sets its ConsumeOptions. A new durable starts from the oldest
// message the stream holds.
//
// handle runs on one message at a time. Its context is not cancelled when
// ctx ends (the handling in flight finishes first) but expires after
// AckWait, when the delivery is presumed lost anyway. nil acknowledges;
// an error asks for redelivery after the backoff of that attempt. A
// message that fails its MaxDeliver-th delivery, or that comes back once
// more after an AckWait expired on its last delivery, is published to
// quan.DeadLetterPrefix+subject, with the message's headers and Reason
// (the error) and Quan-Id (its ID), and terminated. Dead letters that fail are not moved
// further: they stay in the dead-letter stream.
//
// Consume rides out a lost connection and recreates a missing consumer.
// It returns nil when ctx ends, after giving back the messages it had
// prefetched, and an error if the bus is closed under it or the
// arguments are invalid (quan.EINVALID).
func (b *Bus) Consume(ctx context.Context, subject, durable string, opt quan.ConsumeOptions, handle func(context.Context, quan.Message) error) (err error) {
	defer b.unavailable(&err)
	c, err := b.newConsumer(subject, durable, opt, handle)
	if err != nil {
		return fmt.Errorf("consume %s: %w", subject, err)
	}
	wait := 100 * time.Millisecond
	for {
		if ctx.Err() != nil {
			return nil
		}
		cons, err := c.ensure(ctx)
		if err == nil {
			err = c.iterate(ctx, cons)
			if err == nil {
				return nil
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		if b.nc.IsClosed() {
			return fmt.Errorf("consume %s: bus closed: %w", subject, err)
		}
		b.logger.Warn("nats consume: restarting", "subject", subject, "durable", durable, "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// consumer is one Consume call.
type consumer struct {
	b       *Bus
	stream  string
	subject string
	durable string
	name    string // of the JetStream consumer
	opt     quan.ConsumeOptions
	handle  func(context.Context, quan.Message) error
}

func (b *Bus) newConsumer(subject, durable string, opt quan.ConsumeOptions, handle func(context.Context, quan.Message) error) (*consumer, error) {
	var stream string
	for _, p := range b.cfg.Subjects {
		if validSubject(subject) && subsetOf(subject, p) {
			stream = b.cfg.Stream
		}
	}
	for _, p := range b.dead {
		if validSubject(subject) && subsetOf(subject, p) {
			stream = b.deadStream()
		}
	}
	switch {
	case stream == "":
		return nil, quan.Errorf(quan.EINVALID, "subject %q is on none of the bus's streams", subject)
	case !validName(durable):
		return nil, quan.Errorf(quan.EINVALID, "bad durable name %q", durable)
	case handle == nil:
		return nil, quan.Errorf(quan.EINVALID, "no handler")
	case opt.MaxDeliver < 0 || opt.AckWait < 0 || opt.Concurrency < 0 || opt.Prefetch < 0:
		return nil, quan.Errorf(quan.EINVALID, "negative MaxDeliver, AckWait, Concurrency or Prefetch")
	}
	for _, d := range opt.Backoff {
		if d < 0 {
			return nil, quan.Errorf(quan.EINVALID, "negative backoff %s", d)
		}
	}
	if opt.MaxDeliver == 0 {
		opt.MaxDeliver = quan.DefaultMaxDeliver
	}
	if len(opt.Backoff) == 0 {
		opt.Backoff = quan.DefaultBackoff
	}
	if opt.AckWait == 0 {
		opt.AckWait = quan.DefaultAckWait
	}
	opt.Concurrency = max(opt.Concurrency, 1)
	if opt.Prefetch == 0 {
		opt.Prefetch = max(prefetch, 2*opt.Concurrency) - opt.Concurrency
	}
	// One stream holds every subject, so the consumer's name carries the
	// subject too: two uses of a durable name on two subjects must not
	// take over each other's consumer.
	name := consumerName(subject, durable)
	return &consumer{b: b, stream: stream, subject: subject, durable: durable, name: name, opt: opt, handle: handle}, nil
}

// ensure creates the JetStream consumer or brings it to c's options, and
// the streams too if they are gone (a server that lost its data).
func (c *consumer) ensure(ctx context.Context) (jetstream.Consumer, error) {
	cfg := jetstream.ConsumerConfig{
		Durable:       c.name,
		Description:   fmt.Sprintf("quan %s on %s", c.durable, c.subject),
		FilterSubject: c.b.wire(c.subject),
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       c.opt.AckWait,
		// The server would drop a message silently after MaxDeliver; we
		// count deliveries ourselves so that the last one, even if it is
		// lost to AckWait, ends as a dead letter. For the same reason
		// the server's BackOff is not used: it replaces AckWait per
		// delivery, while quan's Backoff follows failed handlings only,
		// and those are delayed with NakWithDelay.
		MaxDeliver:   -1,
		ReplayPolicy: jetstream.ReplayInstantPolicy,
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cons, err := c.b.js.CreateOrUpdateConsumer(ctx, c.stream, cfg)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		if err := c.b.ensureStreams(ctx); err != nil {
			return nil, err
		}
		cons, err = c.b.js.CreateOrUpdateConsumer(ctx, c.stream, cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", c.name, err)
	}
	return cons, nil
}

// iterate handles the consumer's messages until ctx ends (nil) or the
// iterator fails for good (an error: the caller starts over).
func (c *consumer) iterate(ctx context.Context, cons jetstream.Consumer) error {
	it, err := cons.Messages(
		jetstream.PullMaxMessages(c.opt.Concurrency+c.opt.Prefetch),
		jetstream.PullExpiry(10*time.Second),
		jetstream.PullHeartbeat(2*time.Second),
		jetstream.WithMessagesErrOnMissingHeartbeat(true),
	)
	if err != nil {
		return err
	}
	defer it.Stop()
	// Up to Concurrency deliveries are handled at once; iterate returns
	// only when all have been settled.
	slots := make(chan struct{}, c.opt.Concurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		switch {
		case err == nil && c.opt.Concurrency == 1:
			c.deliver(ctx, msg)
		case err == nil:
			slots <- struct{}{}
			wg.Go(func() {
				defer func() { <-slots }()
				c.deliver(ctx, msg)
			})
		case ctx.Err() != nil:
			c.giveBack(it)
			return nil
		case errors.Is(err, jetstream.ErrNoHeartbeat):
			// The server went quiet: it restarts, or came back without
			// our consumer. Put the consumer back if it is missing; the
			// iterator pulls again by itself.
			if _, err := c.ensure(ctx); err != nil && ctx.Err() == nil {
				c.b.logger.Warn("nats consume: no heartbeat", "subject", c.subject, "durable", c.durable, "err", err)
			}
		default:
			return err
		}
	}
}

// giveBack stops pulling and hands back the messages prefetched but not
// handled, so others get them now rather than after AckWait.
func (c *consumer) giveBack(it jetstream.MessagesContext) {
	it.Drain()
	for {
		msg, err := it.Next(jetstream.NextMaxWait(time.Second))
		if err != nil {
			return
		}
		_ = msg.Nak()
	}
}

// deliver handles one delivery and settles it: ack, nak with backoff, or
// dead letter.
func (c *consumer) deliver(ctx context.Context, msg jetstream.Msg) {
	md, err := msg.Metadata()
	if err != nil {
		c.b.logger.Error("nats consume: not a jetstream message", "subject", msg.Subject(), "err", err)
		_ = msg.Term()
		return
	}
	m := quan.Message{
		Subject: c.b.unwire(msg.Subject()),
		ID:      msg.Headers().Get(headerID),
		Data:    msg.Data(),
		Attempt: int(md.NumDelivered),
		Reason:  msg.Headers().Get(headerReason),
		Header:  userHeader(msg.Headers()),
	}
	if m.Attempt > c.opt.MaxDeliver {
		c.bury(ctx, msg, md, m, fmt.Sprintf("not acknowledged after %d deliveries: handling exceeded AckWait %s or its consumer stopped", m.Attempt-1, c.opt.AckWait))
		return
	}
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opt.AckWait)
	err = c.handle(hctx, m)
	cancel()
	switch {
	case err == nil:
		_ = msg.Ack()
	case m.Attempt >= c.opt.MaxDeliver:
		c.bury(ctx, msg, md, m, err.Error())
	default:
		c.b.logger.Debug("nats consume: handler failed", "subject", m.Subject, "id", m.ID, "attempt", m.Attempt, "err", err)
		_ = msg.NakWithDelay(c.backoff(m.Attempt))
	}
}

// backoff is the wait before redelivering after failed attempt n.
func (c *consumer) backoff(n int) time.Duration {
	return c.opt.Backoff[min(n, len(c.opt.Backoff))-1]
}

// bury publishes m as a dead letter and terminates its delivery. If the
// publish fails the message is redelivered and buried on that delivery.
func (c *consumer) bury(ctx context.Context, msg jetstream.Msg, md *jetstream.MsgMetadata, m quan.Message, reason string) {
	log := c.b.logger.With("subject", m.Subject, "id", m.ID, "attempt", m.Attempt, "reason", reason)
	if strings.HasPrefix(m.Subject, quan.DeadLetterPrefix) {
		// A dead letter of a dead letter would need a third stream; it
		// stays where it is, in the dead-letter stream.
		log.Error("nats consume: dead letter failed, dropped from consumer " + c.name)
		_ = msg.Term()
		return
	}
	dead := quan.DeadLetterPrefix + m.Subject
	dm := nats.NewMsg(c.b.wire(dead))
	dm.Data = m.Data
	for k, v := range m.Header {
		dm.Header[k] = []string{v} // checked when m was published
	}
	dm.Header.Set(headerReason, reason)
	dm.Header.Set(headerAttempts, strconv.Itoa(m.Attempt))
	id := "seq:" + strconv.FormatUint(md.Sequence.Stream, 10)
	if m.ID != "" {
		dm.Header.Set(headerID, m.ID)
		id = m.ID
	}
	// Burying the same delivery twice (the ack below got lost) stores
	// one dead letter.
	dm.Header.Set(jetstream.MsgIDHeader, dead+" "+id)
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := c.b.publish(pctx, dm); err != nil {
		log.Error("nats consume: publish dead letter", "err", err)
		_ = msg.Nak()
		return
	}
	log.Warn("nats consume: dead letter")
	_ = msg.TermWithReason("dead letter")
}

// consumerName is the JetStream consumer of durable on subject.
func consumerName(subject, durable string) string {
	h := fnv.New32a()
	h.Write([]byte(subject))
	return fmt.Sprintf("%s_%08x", durable, h.Sum32())
}

// Backlog implements quan.Bus from the consumer's info: its messages not
// yet delivered and those delivered and not acknowledged. Without the
// consumer, it counts the subject's messages in the stream.
func (b *Bus) Backlog(ctx context.Context, subject, durable string) (_ int64, err error) {
	defer b.unavailable(&err)
	c, err := b.newConsumer(subject, durable, quan.ConsumeOptions{}, func(context.Context, quan.Message) error { return nil })
	if err != nil {
		return 0, fmt.Errorf("backlog of %s: %w", subject, err)
	}
	cons, err := b.js.Consumer(ctx, c.stream, c.name)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		st, err := b.js.Stream(ctx, c.stream)
		if err != nil {
			return 0, fmt.Errorf("backlog of %s: %w", subject, err)
		}
		info, err := st.Info(ctx, jetstream.WithSubjectFilter(b.wire(subject)))
		if err != nil {
			return 0, fmt.Errorf("backlog of %s: %w", subject, err)
		}
		var n uint64
		for _, k := range info.State.Subjects {
			n += k
		}
		return int64(n), nil
	}
	if err != nil {
		return 0, fmt.Errorf("backlog of %s: %w", subject, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("backlog of %s: %w", subject, err)
	}
	return int64(info.NumPending) + int64(info.NumAckPending), nil
}
