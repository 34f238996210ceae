package quan

import (
	"context"
	"errors"
	"sync/atomic"
)

// ClaimCounters count what happened to claims in this process; package
// prom reads them at each scrape. Every count is of
// claims, not of bus messages: a message carries a batch of claims, and a
// failed delivery of it counts each of its claims in Retried. A delivery
// redone after some of its claims were settled (a give-back that failed)
// counts those again.
type ClaimCounters struct {
	Accepted      atomic.Int64 // reserved and handed off: 202
	Refused       atomic.Int64 // refused by the cache: 409
	RateLimited   atomic.Int64 // refused by a rate limit: 429
	UnknownIDs    atomic.Int64 // answered 404 without the store
	Issued        atomic.Int64 // persisted with a coupon
	Failed        atomic.Int64 // decided by the store without a coupon
	Compensated   atomic.Int64 // reservations given back after a failure
	Retried       atomic.Int64 // claims of a delivery whose persisting failed and goes again
	DeadLettered  atomic.Int64 // claims whose hand-off ran out of deliveries
	HandoffFailed atomic.Int64 // claims whose hand-off could not be stored: 503
	Reaped        atomic.Int64 // abandoned claims whose reservation Reap gave back
	Found         atomic.Int64 // retried claims answered with the claim of their first try
	NotEligible   atomic.Int64 // refused by the template's eligibility rule: 409, before the cache

	// HandoffPending is a gauge: claims reserved whose hand-off to the
	// bus has not returned yet.
	HandoffPending atomic.Int64

	refusedBy [len(allRefusals)]atomic.Int64 // Refused by reason
}

// allRefusals are the cache's refusals, in the order ClaimCounters keeps
// them.
var allRefusals = [...]Refusal{RefusedInactive, RefusedNotStarted, RefusedEnded, RefusedLimit, RefusedSoldOut,
	RefusedDaily, RefusedWeekly, RefusedShopCap}

// Refusals returns every Refusal a cache answers, and RefusedShopCap,
// the shop's daily cap (counted in the cache too, apart from the
// template's reservation).
func Refusals() []Refusal { return append([]Refusal(nil), allRefusals[:]...) }

// RefusedBy returns how many claims the cache refused for r (they are
// counted in Refused too).
func (c *ClaimCounters) RefusedBy(r Refusal) int64 {
	for i, x := range allRefusals {
		if x == r {
			return c.refusedBy[i].Load()
		}
	}
	return 0
}

func (c *ClaimCounters) CountRefusal(r Refusal) {
	c.Refused.Add(1)
	for i, x := range allRefusals {
		if x == r {
			c.refusedBy[i].Add(1)
			return
		}
	}
}

// DistributionCounters count what a tasks.Runner did in this process;
// package prom reads them at each scrape.
type DistributionCounters struct {
	// Rows decided by the chunks this process applied, by outcome:
	// issued, then each Cause (RowOutcomes). A dry run's rows that would
	// be issued are not counted.
	rows [1 + len(causeList)]atomic.Int64

	ChunksApplied     atomic.Int64 // applied by the store in this delivery, on the first
	ChunksRedelivered atomic.Int64 // a delivery again (attempt > 1), or a chunk applied before
	ChunksFailed      atomic.Int64 // applying failed: the bus delivers it again
	// LeasesLost counts the tasks whose runner here lost its lease to
	// another runner (it stalled past the lease); a task canceled is not
	// counted.
	LeasesLost atomic.Int64
}

// causeList are the causes, in the order DistributionCounters keeps them.
var causeList = [...]Cause{CauseInvalidID, CauseInexactNumber, CauseDuplicate,
	CauseLimitReached, CauseOutOfStock, CauseTemplateInactive, CauseNotEligible}

// RowIssued is the outcome of a row that got its coupon.
const RowIssued = "issued"

// RowOutcomes returns the outcomes of a row: RowIssued and every Cause.
func RowOutcomes() []string {
	out := []string{RowIssued}
	for _, c := range causeList {
		out = append(out, string(c))
	}
	return out
}

// Rows returns how many rows had outcome (one of RowOutcomes).
func (c *DistributionCounters) Rows(outcome string) int64 {
	if outcome == RowIssued {
		return c.rows[0].Load()
	}
	for i, x := range causeList {
		if string(x) == outcome {
			return c.rows[1+i].Load()
		}
	}
	return 0
}

// Applied counts a chunk the store Applied, with its counts n.
func (c *DistributionCounters) Applied(n TaskCounts, again bool) {
	if again {
		c.ChunksRedelivered.Add(1)
	} else {
		c.ChunksApplied.Add(1)
	}
	f := n.Failed
	for i, v := range [...]int64{n.Issued, f.InvalidID, f.InexactNumber, f.Duplicate, f.LimitReached, f.OutOfStock, f.TemplateInactive, f.NotEligible} {
		if v != 0 {
			c.rows[i].Add(v)
		}
	}
}

// Results of a coupon state change, as WalletCounters count them.
const (
	TransitionOK      = "ok"      // written
	TransitionRefused = "refused" // an illegal transition or a conflict (another order holds the coupon)
	TransitionError   = "error"   // the store failed
)

// couponStatuses are the statuses, in the order WalletCounters keep them.
var couponStatuses = [...]CouponStatus{CouponAvailable, CouponLocked, CouponUsed, CouponExpired, CouponRevoked}

// transitionResults are the results, in the order WalletCounters keep
// them.
var transitionResults = [...]string{TransitionOK, TransitionRefused, TransitionError}

// CouponTransition is one way a coupon's status may change.
type CouponTransition struct{ From, To CouponStatus }

// CouponTransitions returns the status changes the wallet makes: what a
// lock, a payment, a release, a refund and time do to coupons, and a
// merchant's revocation.
func CouponTransitions() []CouponTransition {
	return []CouponTransition{
		{CouponAvailable, CouponLocked}, {CouponAvailable, CouponExpired}, {CouponAvailable, CouponRevoked},
		{CouponLocked, CouponAvailable}, {CouponLocked, CouponUsed}, {CouponLocked, CouponExpired}, {CouponLocked, CouponRevoked},
		{CouponUsed, CouponAvailable}, {CouponUsed, CouponExpired},
	}
}

// WalletCounters count the coupon state changes of a wallet.Service in
// this process; package prom reads them at each scrape. A change written
// counts once per coupon; a change refused or failed counts once per
// request, under the change it asked for (a lock: available → locked).
// Requests refused before any change is tried (invalid, not the user's,
// not usable, a price changed) are not counted. A sweep counts each
// coupon it changed, and a sweep the store failed as one available →
// expired error.
type WalletCounters struct {
	transitions [len(couponStatuses)][len(couponStatuses)][len(transitionResults)]atomic.Int64
	// LocksExpired counts the order locks that ran out and that the
	// sweeper released.
	LocksExpired atomic.Int64
}

// Transitions returns how many changes from → to ended in result
// (TransitionOK, TransitionRefused or TransitionError).
func (c *WalletCounters) Transitions(from, to CouponStatus, result string) int64 {
	f, t, r := statusIndex(from), statusIndex(to), resultIndex(result)
	if f < 0 || t < 0 || r < 0 {
		return 0
	}
	return c.transitions[f][t][r].Load()
}

// EachTransition calls fn with every change counted, and with every one
// of CouponTransitions, counted or not.
func (c *WalletCounters) EachTransition(fn func(from, to CouponStatus, result string, n int64)) {
	known := map[CouponTransition]bool{}
	for _, t := range CouponTransitions() {
		known[t] = true
	}
	for f, from := range couponStatuses {
		for t, to := range couponStatuses {
			for r, result := range transitionResults {
				n := c.transitions[f][t][r].Load()
				if n != 0 || known[CouponTransition{from, to}] {
					fn(from, to, result, n)
				}
			}
		}
	}
}

func (c *WalletCounters) Count(from, to CouponStatus, result string, n int64) {
	f, t, r := statusIndex(from), statusIndex(to), resultIndex(result)
	if f >= 0 && t >= 0 && r >= 0 {
		c.transitions[f][t][r].Add(n)
	}
}

// Written counts the changes events record.
func (c *WalletCounters) Written(events []CouponEvent) {
	for _, e := range events {
		c.Count(e.Old, e.New, TransitionOK, 1)
	}
}

// Failed counts a request for from → to that err ended, if err says
// the change was refused or the store Failed.
func (c *WalletCounters) Failed(from, to CouponStatus, err error) {
	switch ErrorCode(err) {
	case "":
	case ETRANSITION, ECONFLICT:
		c.Count(from, to, TransitionRefused, 1)
	case EINTERNAL, EUNAVAILABLE:
		if !errors.Is(err, context.Canceled) {
			c.Count(from, to, TransitionError, 1)
		}
	}
}

func statusIndex(s CouponStatus) int {
	for i, x := range couponStatuses {
		if x == s {
			return i
		}
	}
	return -1
}

func resultIndex(r string) int {
	for i, x := range transitionResults {
		if x == r {
			return i
		}
	}
	return -1
}

// ReconcileCounters are what Reconciler found: counters over the runs and
// gauges of the last run (package prom reads them).
type ReconcileCounters struct {
	RunsOK     atomic.Int64 // runs that read every template they could
	RunsFailed atomic.Int64 // runs that failed to read or repair one at least
	Repairs    atomic.Int64 // templates whose cache was corrected from the store

	// Of the last run, before repair: the sum over drifted templates of
	// |cache stock − store stock|, the templates with any drift, and the
	// users whose cached count (lifetime, or of today or this week for
	// the period limits) differed from the store's.
	StockDrift     atomic.Int64
	DriftTemplates atomic.Int64
	HeldDriftUsers atomic.Int64
}
