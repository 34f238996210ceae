package claims

import (
	"context"
	"errors"
	"fmt"

	"github.com/quanhq/quan"
)

// How many claim messages a process handles at once. The claims of all
// meet in one store transaction at a time (the persist batcher), so this
// only needs to keep the next transaction full: a few batches do under
// load, when each carries hundreds of claims; more let the small batches
// of a light load share a transaction. Dead letters are rare, and each
// fails its claims one by one. A batch message held waits under its
// AckWait (30 s): 16 handled and 4 prefetched are 10,000 claims at most,
// 6 s of a store that persists only 1,600 a second.
const (
	batchConcurrency = 16
	batchPrefetch    = 4
	deadConcurrency  = 4
)

// ServeClaims persists the claims handed to the bus, in batches, until ctx
// ends; claims that fail give their reservation back, and claims whose
// hand-off runs out of deliveries end failed. It consumes the batches on
// ClaimBatchSubject and their dead letters.
func (s *Service) ServeClaims(ctx context.Context) error {
	if s.PersistRate != 0 && !(s.PersistRate >= MinPersistRate) {
		return quan.Errorf(quan.EINVALID, "serve claims: persist rate %v a second: want 0 (no limit) or at least %d", s.PersistRate, MinPersistRate)
	}
	s.init()
	type consumer struct {
		subject, durable string
		opt              quan.ConsumeOptions
		handle           func(context.Context, quan.Message) error
	}
	live := func(n, prefetch int) quan.ConsumeOptions {
		return quan.ConsumeOptions{MaxDeliver: s.MaxDeliver, Backoff: s.Backoff, Concurrency: n, Prefetch: prefetch}
	}
	dead := quan.ConsumeOptions{Concurrency: deadConcurrency}
	cs := []consumer{
		{quan.ClaimBatchSubject, quan.ClaimDurable, live(batchConcurrency, batchPrefetch), s.handleClaims},
		{quan.DeadLetterPrefix + quan.ClaimBatchSubject, quan.ClaimDurable + "-dead", dead, s.handleDead},
	}
	errs := make(chan error, len(cs))
	for _, c := range cs {
		go func() { errs <- s.Bus.Consume(ctx, c.subject, c.durable, c.opt, c.handle) }()
	}
	var all []error
	for range cs {
		all = append(all, <-errs)
	}
	if err := errors.Join(all...); err != nil {
		return fmt.Errorf("serve claims: %w", err)
	}
	return nil
}

// decodeClaims returns the claims of m, a batch (EncodeClaims), each with
// its trace parent if m carries them (ClaimTracesHeader). Every claim must
// name itself, its template and its user.
func decodeClaims(m quan.Message) ([]*quan.Claim, error) {
	cs, err := quan.DecodeClaims(m.Data)
	if err != nil {
		return nil, quan.Errorf(quan.EINVALID, "message %s is not a batch of claims: %v", m.ID, err)
	}
	if len(cs) == 0 {
		return nil, quan.Errorf(quan.EINVALID, "message %s holds no claims", m.ID)
	}
	for i, c := range cs {
		if c.ID == "" || c.TemplateID <= 0 || c.UserID <= 0 {
			return nil, quan.Errorf(quan.EINVALID, "message %s: claim %d of %d lacks its id, template or user: %+v", m.ID, i+1, len(cs), *c)
		}
	}
	quan.DecodeClaimTraces(cs, m.Header[quan.ClaimTracesHeader])
	return cs, nil
}

// handleClaims persists the claims of m and settles each. If the store
// fails, nothing is settled and the error has m delivered again: the
// claims the store decided meanwhile are not decided twice, it returns
// their records.
func (s *Service) handleClaims(ctx context.Context, m quan.Message) error {
	cs, err := decodeClaims(m)
	if err != nil {
		return err
	}
	recs, err := s.persist.DoMany(ctx, cs)
	if err != nil {
		s.Counters.Retried.Add(int64(len(cs)))
		s.logger().Warn("persist claims", "message", m.ID, "claims", len(cs), "attempt", m.Attempt, "err", err)
		return err
	}
	var errs []error
	for _, rec := range recs {
		errs = append(errs, s.settle(ctx, rec))
	}
	return errors.Join(errs...)
}

// settle counts a decided claim and, if it failed, gives its reservation
// back (a no-op when given back before).
func (s *Service) settle(ctx context.Context, c *quan.Claim) error {
	if c.Status == quan.ClaimIssued {
		s.Counters.Issued.Add(1)
		return nil
	}
	s.Counters.Failed.Add(1)
	if err := s.Cache.Release(ctx, c.TemplateID, c.ID); err != nil {
		return fmt.Errorf("give back the reservation of claim %s: %w", c.ID, err)
	}
	if err := s.giveShopCapOf(ctx, c); err != nil {
		return err
	}
	s.Counters.Compensated.Add(1)
	return nil
}

// handleDead fails every claim of a message whose hand-off ran out of
// deliveries (quan.ReasonHandoffFailed), and settles each: a claim the store decided before keeps
// its record. An error has the dead letter delivered again.
func (s *Service) handleDead(ctx context.Context, m quan.Message) error {
	cs, err := decodeClaims(m)
	if err != nil {
		s.logger().Error("dead letter that is not a claim", "id", m.ID, "err", err)
		return nil
	}
	// The claims record the code; the bus's error, of any length, is
	// the log's.
	s.logger().Warn("claims dead-lettered: they fail as "+quan.ReasonHandoffFailed, "message", m.ID, "claims", len(cs),
		"first", cs[0].ID, "reason", m.Reason)
	var errs []error
	for _, c := range cs {
		rec, err := s.Claims.FailClaim(ctx, c, quan.ReasonHandoffFailed, s.Now.UTC())
		if err != nil {
			return errors.Join(append(errs, fmt.Errorf("fail dead-lettered claim %s: %w", c.ID, err))...)
		}
		s.Counters.DeadLettered.Add(1)
		errs = append(errs, s.settle(ctx, rec))
	}
	return errors.Join(errs...)
}
