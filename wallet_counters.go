package quan

import (
	"context"
	"errors"
	"sync/atomic"
)

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

// WalletCounters count the coupon state changes of a WalletService in
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

func (c *WalletCounters) add(from, to CouponStatus, result string, n int64) {
	f, t, r := statusIndex(from), statusIndex(to), resultIndex(result)
	if f >= 0 && t >= 0 && r >= 0 {
		c.transitions[f][t][r].Add(n)
	}
}

// written counts the changes events record.
func (c *WalletCounters) written(events []CouponEvent) {
	for _, e := range events {
		c.add(e.Old, e.New, TransitionOK, 1)
	}
}

// failed counts a request for from → to that err ended, if err says
// the change was refused or the store failed.
func (c *WalletCounters) failed(from, to CouponStatus, err error) {
	switch ErrorCode(err) {
	case "":
	case ETRANSITION, ECONFLICT:
		c.add(from, to, TransitionRefused, 1)
	case EINTERNAL, EUNAVAILABLE:
		if !errors.Is(err, context.Canceled) {
			c.add(from, to, TransitionError, 1)
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
