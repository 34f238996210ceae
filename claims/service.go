package claims

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/batch"
	"github.com/quanhq/quan/internal/flight"
)

// RefusalRecorder counts the claims refused before the store for the
// statistics (stats.RefusalCounter).
type RefusalRecorder interface {
	// Add counts one claim of template refused with code.
	Add(template int64, code string)
}

// ShopCaps are what claims need of the shops' settings (shops.Service):
// each shop's daily claim cap, and the claims of a shop the store counts
// in a day, with which a cold cache is loaded.
type ShopCaps interface {
	// DailyClaimCap returns the DailyClaimCap of shop, 0 for none.
	DailyClaimCap(ctx context.Context, shop int64) (int64, error)
	// ShopClaimed returns how many coupons claims of shop's templates
	// issued in [from, to).
	ShopClaimed(ctx context.Context, shop int64, from, to time.Time) (int64, error)
}

// Service takes flash-sale claims: it checks and reserves in the
// cache at once, hands the claim to the bus durably before it answers, and
// persists claims in batches as they come off the bus.
//
// Claims go to the bus in batches: the claims that arrive while one
// message is being stored go together in the next, up to
// MaxClaimsPerMessage, encoded by EncodeClaims. A bus message costs the
// bus and both ends tens of microseconds of CPU whatever it carries, so
// under load that cost is shared by hundreds of claims.
//
// Limiter, if set, limits claims by the buckets of Limits. With a
// Reserver (Redis serving both), a claim takes its tokens and its
// reservation in one call.
type Service struct {
	Templates quan.TemplateStore
	Coupons   quan.CouponStore // the holdings a cold cache is loaded with
	Claims    quan.ClaimStore
	Cache     quan.Cache
	// Ledger, if set, is the cache's record of the claims reserved and
	// not yet handed off (a cache the processes share, Redis): the
	// reservation of a claim whose process died in between is given back
	// by Reap. nil: reservations live and die with this process's memory,
	// and one whose hand-off fails is given back at once.
	Ledger quan.ClaimLedger
	// Reserver, if set, reserves in Cache and takes the claim's tokens of
	// Limits in one call: it keeps the buckets itself (it is the Limiter,
	// Redis), and gathers the claims of concurrent calls into one call.
	// nil: Limiter.Allow, then Cache.Reserve.
	Reserver quan.LimitedReserver
	Bus      quan.Bus
	Limiter  quan.RateLimiter // nil limits nothing
	Limits   Limits
	Now      quan.Clock
	Logger   *slog.Logger
	Counters quan.ClaimCounters
	// Latency, if set, is given the seconds each Claim took.
	Latency quan.Observer
	// Refusals, if set, counts the claims refused before the store (409s
	// and 429s) for the statistics; nil counts none.
	Refusals RefusalRecorder
	// MaxDeliver is how many times a claim's hand-off is tried before it
	// is dead-lettered and fails; 0 means DefaultMaxDeliver.
	MaxDeliver int
	Backoff    []time.Duration // nil means DefaultBackoff
	// PersistRate, if set, is how many claims a second this process
	// writes to the store at most while it accepts claims (at least
	// MinPersistRate): the rest wait on the bus until the claims stop
	// for a second, and are then written at full speed. 0 writes claims
	// as fast as the store takes them.
	PersistRate float64
	// ReapAfter is how long a claim may stay reserved and not handed off
	// before Reap gives its reservation back; 0 means DefaultReapAfter.
	ReapAfter time.Duration
	// Tracer, if set, carries each claim's trace from its request to the
	// store transaction that decides it, through the batches it shares
	// with other claims (ClaimTracesHeader); nil traces nothing.
	Tracer quan.Tracer
	// Shops, if set, has claims honour the shops' DailyClaimCap (see
	// claim_shopcap.go); nil caps no shop.
	Shops ShopCaps
	// Rules, if set, holds the templates' eligibility rules, and Facts
	// the users' facts they are decided on (nil: every user's facts are
	// zero); a claim the rule in force refuses is ENOTELIGIBLE
	// (eligible).
	Rules quan.RuleSource
	Facts quan.FactsSource
	// LookupEvery is how often at most the store is asked for the
	// highest template id, when claims name ids above the highest known
	// (a template created in another process, or made up): a claim of
	// such an id waits up to this long for the next look, shared by every
	// claim waiting, so that a flood of made-up ids costs the store one
	// read per LookupEvery. 0 means DefaultLookupEvery. A template
	// created in this process is known at once (TemplateCreated).
	LookupEvery time.Duration
	// PromoLimit bounds the wrong promo codes a user types (ClaimCode),
	// in Limiter; the zero value takes the defaults.
	PromoLimit PromoLimit
	// PromoCacheFor is how long what the store answered of a promo code
	// is kept (promoIDs); 0 means DefaultPromoCacheFor.
	PromoCacheFor time.Duration

	once    sync.Once
	handoff *batch.Batcher[*quan.Claim, quan.Handoff]
	persist *batch.Batcher[*quan.Claim, *quan.Claim]
	pace    *pace
	prime   flight.Group
	known   knownIDs
	shops   templateShops
	promo   promoIDs
	// inflight counts the claims between their reservation and the end
	// of their hand-off (InFlight).
	inflight atomic.Int64
}

// InFlight returns how many claims of this process are reserved in the
// cache and not yet handed to the bus (or given back): work a Reconciler
// must not take for drift when the cache keeps no Ledger.
func (s *Service) InFlight() int64 { return s.inflight.Load() }

func (s *Service) init() {
	s.once.Do(func() {
		s.handoff = batch.New(quan.MaxClaimsPerMessage, s.publish)
		s.pace = newPace(s.PersistRate)
		s.persist = batch.New(quan.MaxClaimsPerTransaction, func(ctx context.Context, cs []*quan.Claim) ([]*quan.Claim, error) {
			if _, err := s.pace.wait(ctx, len(cs)); err != nil {
				return nil, err
			}
			return s.Claims.IssueClaims(ctx, cs, s.Now.UTC())
		})
	})
}

// publish hands cs to the bus in one message, within HandoffTimeout, under
// an ID of this batch alone (batchID), so that PublishMany's own retries
// store it once. With a Ledger the claims then leave the ledger, and
// each says where it was.
func (s *Service) publish(ctx context.Context, cs []*quan.Claim) ([]quan.Handoff, error) {
	ctx, cancel := context.WithTimeout(ctx, HandoffTimeout)
	defer cancel()
	data, err := quan.EncodeClaims(cs)
	if err != nil {
		return nil, err
	}
	m := quan.Message{Subject: quan.ClaimBatchSubject, ID: batchID(cs[0].ID), Data: data}
	if traces := quan.EncodeClaimTraces(cs); traces != "" {
		m.Header = map[string]string{quan.ClaimTracesHeader: traces}
	}
	if err := s.Bus.PublishMany(ctx, []quan.Message{m}); err != nil {
		return nil, err
	}
	out := make([]quan.Handoff, len(cs))
	ledger := s.Ledger
	if ledger == nil {
		return out, nil // HandedNow
	}
	byTemplate := map[int64][]int{}
	for i, c := range cs {
		byTemplate[c.TemplateID] = append(byTemplate[c.TemplateID], i)
	}
	for template, idx := range byTemplate {
		keys := make([]string, len(idx))
		for k, i := range idx {
			keys[k] = cs[i].ID
		}
		hs, err := ledger.Handed(ctx, template, keys)
		if err != nil {
			return nil, err
		}
		for k, i := range idx {
			out[i] = hs[k]
		}
	}
	return out, nil
}

func (s *Service) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

// Claim reserves one coupon of template for the user who, hands the claim
// to the bus and returns it pending. key, the client's Idempotency-Key
// ("" for none), makes the claim's id and so its reservation the same on
// every try: a retry after a try whose answer was lost (its process died)
// finds that claim, pending or as the store decided it, and never a
// refusal of its own coupon. A claim over a rate limit (Limits) is
// ERATELIMITED, naming the user's or the template's bucket, with the
// bucket's wait in RetryAfter (the longest, if both refused); it takes no
// token and reserves nothing. Otherwise a token is taken from each bucket,
// and a refusal is a 409 with a code that says why (sold_out,
// limit_reached, not_started, ended, paused; not_eligible, before any
// token or reservation, when the template's eligibility rule refuses the
// user: eligible; shop_daily_cap when the template's shop has a
// DailyClaimCap it reached today); a template that does not
// exist (or is a draft) is ErrNotFound, never said of one that exists:
// ids above the highest known are answered by one look in the store
// every LookupEvery at most, shared by all who wait for it. Once the reservation is made, the client
// going away does not abandon it or its hand-off.
func (s *Service) Claim(ctx context.Context, who quan.Identity, template int64, key string) (*quan.Claim, error) {
	if s.Latency == nil {
		return s.claim(ctx, who, template, key)
	}
	start := time.Now()
	c, err := s.claim(ctx, who, template, key)
	s.Latency.Observe(time.Since(start).Seconds())
	return c, err
}

func (s *Service) claim(ctx context.Context, who quan.Identity, template int64, key string) (*quan.Claim, error) {
	// A user claims for itself; a platform's key with the claims scope
	// for the user it names (quan.Identity.ForUser).
	if _, err := who.Holder(); err != nil || who.Role == quan.RoleService && !who.HasScope(quan.ScopeClaims) {
		return nil, quan.Errorf(quan.EFORBIDDEN, "only users claim coupons")
	}
	s.init()
	// From here on the work must finish whatever the client does. The
	// batches a claim waits for run on contexts of their own, with a
	// deadline (batch.Timeout); loading a cold template has one too.
	ctx = context.WithoutCancel(ctx)
	now := s.Now.UTC()
	id := quan.NewClaimID(template, who.UserID)
	if key != "" {
		id = quan.KeyedClaimID(template, who.UserID, key)
	}
	c := &quan.Claim{ID: id, TemplateID: template, UserID: who.UserID, Status: quan.ClaimPending, At: now}
	if s.Tracer != nil {
		c.TraceParent = s.Tracer.TraceParent(ctx)
	}
	if err := s.eligible(ctx, template, who.UserID, now, false); err != nil {
		switch quan.ErrorCode(err) {
		case quan.ENOTFOUND:
			s.Counters.UnknownIDs.Add(1)
		case quan.ENOTELIGIBLE:
			s.Counters.NotEligible.Add(1)
			s.refused(template, quan.ENOTELIGIBLE)
		}
		return nil, err
	}
	s.inflight.Add(1)
	defer s.inflight.Add(-1)
	// The shop's daily cap: counted before the reservation, given back
	// unless the claim is accepted (take.keep).
	take, err := s.takeShopCap(ctx, template, c.ID, key, quan.ShanghaiDay(now))
	if err != nil {
		return nil, s.shopCapRefusal(template, err)
	}
	defer take.giveBack(ctx)
	refusals, err := s.reserve(ctx, template, c.ID, who.UserID, now)
	if errors.Is(err, quan.ErrNotFound) {
		s.Counters.UnknownIDs.Add(1)
		return nil, err
	}
	if quan.ErrorCode(err) == quan.ERATELIMITED {
		s.Counters.RateLimited.Add(1)
		s.refused(template, quan.ERATELIMITED)
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("claim template %d: %w", template, err)
	}
	if refusals[0] != "" {
		// A retry whose first try issued the coupon, the cache's record
		// of it forgotten since (a reload), is refused the limit: its
		// claim is in the store.
		if refusals[0] == quan.RefusedLimit && key != "" {
			if rec, err := s.Claims.Claim(ctx, c.ID); err == nil {
				s.Counters.Found.Add(1)
				return rec, nil
			}
		}
		s.Counters.CountRefusal(refusals[0])
		err := s.refusal(ctx, template, refusals[0])
		if code := quan.ErrorCode(err); code != quan.ENOTFOUND {
			s.refused(template, code)
		}
		return nil, err
	}
	s.Counters.HandoffPending.Add(1)
	h, err := s.handoff.Do(ctx, c)
	s.Counters.HandoffPending.Add(-1)
	if err != nil {
		s.Counters.HandoffFailed.Add(1)
		// The claim may be on the bus all the same (a time-out). With a
		// ledger the reaper fences it in the store before it gives the
		// reservation back; without one (the cache dies with this
		// process) it goes back now.
		if s.Ledger == nil {
			if rerr := s.Cache.Release(ctx, template, c.ID); rerr != nil {
				s.logger().Error("give back the reservation of a claim not handed off", "claim", c.ID, "err", rerr)
			}
		} else {
			take.keep()
		}
		// The bus's error stays in the log: a client is told what to do,
		// not how the servers failed.
		s.logger().Error("hand a claim to the bus", "claim", c.ID, "template", template, "err", err)
		return nil, notStored(cmp.Or(quan.ErrorBackend(err), quan.BackendBus), "the claim could not be stored")
	}
	switch h {
	case quan.HandedReaping:
		// This process stalled past ReapAfter: the reaper is giving the
		// reservation back and fails the claim. It is not confirmed.
		take.keep()
		s.Counters.HandoffFailed.Add(1)
		return nil, notStored(quan.BackendBus, "the claim could not be stored in time")
	case quan.HandedBefore:
		// A retry of a claim handed off before: as the store decided it,
		// or pending on the bus.
		rec, err := s.Claims.Claim(ctx, c.ID)
		if err == nil {
			s.Counters.Found.Add(1)
			return rec, nil
		}
		if !errors.Is(err, quan.ErrNotFound) {
			return nil, fmt.Errorf("claim %s: %w", c.ID, err)
		}
		s.Counters.Found.Add(1)
		return c, nil
	}
	take.keep()
	s.Counters.Accepted.Add(1)
	s.pace.accepted()
	return c, nil
}

// notStored is the EUNAVAILABLE answer to a claim the bus did not take
// (or the ledger, on backend, did not record): the bus's error stays in
// the log, the client is told which backend failed and to retry.
func notStored(backend, what string) error {
	return &quan.Error{Code: quan.EUNAVAILABLE, Backend: backend, RetryAfter: quan.UnavailableRetryAfter,
		Message: fmt.Sprintf("%s (the %s is unavailable); try again with the same Idempotency-Key", what, backend)}
}

// shopCapRefusal counts and returns err, the refusal of a claim of
// template by its shop's daily cap (or the error of checking it).
func (s *Service) shopCapRefusal(template int64, err error) error {
	switch quan.ErrorCode(err) {
	case quan.ENOTFOUND:
		s.Counters.UnknownIDs.Add(1)
		return err
	case quan.ESHOPDAILYCAP:
		s.Counters.CountRefusal(quan.RefusedShopCap)
		s.refused(template, quan.ESHOPDAILYCAP)
		return err
	}
	return fmt.Errorf("claim template %d: %w", template, err)
}

// reserve takes user's rate-limit tokens and reserves the coupon under
// key. A template the cache lacks is loaded from the store first (once,
// however many claims wait for it), unless its id is above the highest
// the store has handed out: then it is ErrNotFound, and the store is
// spared.
//
// With a LimitedReserver serving as the Limiter too, tokens and
// reservation are one call, and a cold cache takes no token: a claim of a
// template that does not exist costs none. Otherwise Allow goes first,
// and its tokens are taken whatever the reservation answers. A
// LimitedReserver reserves by ReserveLimited even without buckets: the
// Redis cache gathers the claims of concurrent calls into one script
// call.
func (s *Service) reserve(ctx context.Context, template int64, key string, user int64, now time.Time) ([]quan.Refusal, error) {
	var (
		cb      claimBuckets
		buckets []quan.Bucket
	)
	if s.Limiter != nil {
		cb = s.Limits.buckets(user, template)
		buckets = cb.list()
	}
	lr := s.Reserver
	if len(buckets) > 0 && lr == nil {
		refused, wait, err := s.Limiter.Allow(ctx, buckets...)
		if err != nil {
			return nil, fmt.Errorf("rate limit: %w", err)
		}
		if err := cb.refusal(template, refused, wait); err != nil {
			return nil, err
		}
		buckets = nil
	}
	for attempt := 0; ; attempt++ {
		var (
			refusals []quan.Refusal
			err      error
		)
		if lr != nil {
			var (
				refused int
				wait    time.Duration
			)
			refused, wait, refusals, err = lr.ReserveLimited(ctx, template, key, []int64{user}, now, buckets)
			if err == nil {
				if err := cb.refusal(template, refused, wait); err != nil {
					return nil, err
				}
			}
		} else {
			refusals, err = s.Cache.Reserve(ctx, template, key, []int64{user}, now)
		}
		if !errors.Is(err, quan.ErrCacheCold) || attempt == 2 {
			return refusals, err
		}
		if err := s.loadCold(ctx, template); err != nil {
			return nil, err
		}
	}
}

// loadCold loads template into the cache (once, however many claims
// wait for it), unless its id is above the highest the store has handed
// out: then it is ErrNotFound.
func (s *Service) loadCold(ctx context.Context, template int64) error {
	ctx, cancel := context.WithTimeout(ctx, maxBacklogWait+batch.Timeout)
	defer cancel()
	exists, err := s.known.exists(ctx, s.Templates, cmp.Or(s.LookupEvery, DefaultLookupEvery), template)
	if err != nil {
		return err
	}
	if !exists {
		return quan.Errorf(quan.ENOTFOUND, "template %d not found", template)
	}
	return s.prime.Do(template, func() error { return s.load(ctx, template) })
}

// maxBacklogWait bounds how long a cold load waits for the claims on the
// bus to be persisted. It outlasts the claims' AckWait: a process that
// died leaves the claims it was persisting unacknowledged, and the bus
// hands them to another only when their AckWait runs out. So after a
// crash of the one process of the embedded default, claims wait up to
// that long rather than be answered from a cache that counts the stock of
// those claims as free.
const maxBacklogWait = quan.DefaultAckWait + 5*time.Second

// load primes the cache with template from the store, once the claims
// handed to the bus before are in the store: a cache loaded while some
// wait there would count their stock and users as free (after a restart
// of a process whose cache was its own, or a Redis that lost its data)
// and accept claims the store then refuses. If the backlog does not
// drain within maxBacklogWait (no process persists claims), it loads
// anyway.
func (s *Service) load(ctx context.Context, template int64) error {
	if err := s.awaitBacklog(ctx); err != nil {
		return err
	}
	t, err := s.Templates.Template(ctx, quan.AnyShop, template)
	if err != nil {
		return err
	}
	start := time.Now()
	// With the users' counts of today and this week, for the period
	// limits: a cache that lost them would accept a claim the store then
	// refuses.
	loaded, err := s.Cache.Load(ctx, quan.StateOf(t), s.Coupons.Holdings(ctx, template, t.PeriodsAt(s.Now.UTC())))
	if err != nil {
		return fmt.Errorf("load template %d into the cache: %w", template, err)
	}
	if loaded {
		s.logger().Info("cache loaded from the store", "template", template, "stock", t.Stock, "took", time.Since(start))
	}
	return nil
}

// refusal turns a cache refusal into the error a user reads.
func (s *Service) refusal(ctx context.Context, template int64, r quan.Refusal) error {
	switch r {
	case quan.RefusedSoldOut:
		return quan.Errorf(quan.ESOLDOUT, "template %d is sold out", template)
	case quan.RefusedLimit:
		return quan.Errorf(quan.ELIMIT, "you hold as many coupons of template %d as one user may", template)
	case quan.RefusedDaily:
		return quan.Errorf(quan.EDAILYLIMIT, "you received as many coupons of template %d today as one user may a day (days in Asia/Shanghai time)", template)
	case quan.RefusedWeekly:
		return quan.Errorf(quan.EWEEKLYLIMIT, "you received as many coupons of template %d this week as one user may a week (weeks from Monday, Asia/Shanghai time)", template)
	case quan.RefusedNotStarted:
		return quan.Errorf(quan.ENOTSTARTED, "template %d does not issue yet", template)
	case quan.RefusedEnded:
		return quan.Errorf(quan.EENDED, "template %d no longer issues", template)
	}
	st, err := s.Cache.State(ctx, template)
	switch {
	case err != nil:
		return quan.Errorf(quan.EPAUSED, "template %d does not issue now", template)
	case st.Status == quan.TemplateDraft:
		return quan.Errorf(quan.ENOTFOUND, "template %d not found", template)
	case st.Status == quan.TemplateEnded:
		return quan.Errorf(quan.EENDED, "template %d has ended", template)
	}
	return quan.Errorf(quan.EPAUSED, "template %d is paused", template)
}

// Get returns claim id of the user who, waiting up to wait for it to be
// decided. A claim of another user is ErrNotFound.
func (s *Service) Get(ctx context.Context, who quan.Identity, id string, wait time.Duration) (*quan.Claim, error) {
	template, user, err := quan.ParseClaimID(id)
	if err != nil {
		return nil, err
	}
	// A platform's key with the claims scope reads any user's claims.
	mine := who.Role == quan.RoleUser && who.UserID == user
	if !mine && !(who.HasScope(quan.ScopeClaims) && who.ShopNo == 0) {
		return nil, quan.Errorf(quan.ENOTFOUND, "no claim %q", id)
	}
	deadline := time.Now().Add(wait)
	for {
		c, err := s.Claims.Claim(ctx, id)
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, quan.ErrNotFound) {
			return nil, fmt.Errorf("claim %s: %w", id, err)
		}
		// Not decided: pending if the cache knows the reservation.
		if _, err := s.Cache.Reservation(ctx, template, id); err != nil {
			if !errors.Is(err, quan.ErrNotFound) && !errors.Is(err, quan.ErrCacheCold) {
				return nil, fmt.Errorf("claim %s: %w", id, err)
			}
			// The persister records a claim before it drops its
			// reservation: one decided between the two reads above is
			// in the store now.
			c, err := s.Claims.Claim(ctx, id)
			if err == nil {
				return c, nil
			}
			if !errors.Is(err, quan.ErrNotFound) {
				return nil, fmt.Errorf("claim %s: %w", id, err)
			}
			return nil, quan.Errorf(quan.ENOTFOUND, "no claim %q", id)
		}
		if !time.Now().Before(deadline) {
			return &quan.Claim{ID: id, TemplateID: template, UserID: user, Status: quan.ClaimPending}, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(20*time.Millisecond, time.Until(deadline))):
		}
	}
}

// awaitBacklog waits until no claim waits on the bus, or maxBacklogWait.
func (s *Service) awaitBacklog(ctx context.Context) error {
	deadline := time.Now().Add(maxBacklogWait)
	for {
		n, err := s.Bus.Backlog(ctx, quan.ClaimBatchSubject, quan.ClaimDurable)
		if err != nil {
			return fmt.Errorf("the claims on the bus: %w", err)
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			s.logger().Warn("claims still on the bus after waiting for them: loading the cache all the same", "messages", n)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// batchID is the bus message ID of a hand-off batch whose first claim is
// first: the claim's id and random bits. The claim's id alone would not
// do: a retry with an Idempotency-Key hands the same claim off again, and
// its batch, with other users' claims in it, would be dropped as a
// duplicate of the first try's.
func batchID(first string) string {
	var r [8]byte
	rand.Read(r[:])
	return "claims:" + first + ":" + hex.EncodeToString(r[:])
}

// refused counts a claim of template refused with code before the store,
// if s has Refusals.
func (s *Service) refused(template int64, code string) {
	if s.Refusals != nil {
		s.Refusals.Add(template, code)
	}
}
