package claims

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/quanhq/quan"
)

// Claims by promo code (口令券): a user types a template's shared public
// code, and claims the template it names through Claim, the same path as
// a claim by id (cache, bus, limits, eligibility, idempotency).
//
// Guessing codes is what a promo code invites, so wrong codes are
// limited per user (PromoLimit): a token bucket of the user's wrong codes
// in the Limiter, which every process shares when it is Redis. A right
// code takes no token; while the bucket is empty every code the user
// types is refused, right or wrong, so that a guesser learns nothing
// until it refills.

// Defaults of PromoLimit.
const (
	DefaultPromoWrong  = 10
	DefaultPromoWindow = 10 * time.Minute
	// DefaultPromoCacheFor is Service.PromoCacheFor when it is 0.
	DefaultPromoCacheFor = time.Second
)

// PromoLimit bounds the wrong promo codes one user may type: Wrong at
// once, refilled at Wrong per Window (a token bucket). Zero fields take
// DefaultPromoWrong and DefaultPromoWindow.
type PromoLimit struct {
	Wrong  int
	Window time.Duration
}

// bucket is the bucket of user's wrong codes, "promo:user:<id>".
func (l PromoLimit) bucket(user int64) quan.Bucket {
	wrong := cmp.Or(max(l.Wrong, 0), DefaultPromoWrong)
	window := cmp.Or(max(l.Window, 0), DefaultPromoWindow)
	return quan.Bucket{Key: "promo:user:" + strconv.FormatInt(user, 10),
		Rate: float64(wrong) / window.Seconds(), Burst: wrong}
}

// ClaimCode claims the active template whose PromoCode is code (in any
// case) for the user who, as Claim does with key. A code no template
// holds, or whose template is not active (a draft, paused, ended, or past
// its issue end), is ENOTFOUND, the same answer for each; it counts as a
// wrong code unless a template held it a moment ago. A malformed code is
// EINVALID on the field "code" and is not counted. Over the user's
// PromoLimit, every code is ERATELIMITED with the wait in RetryAfter.
// Without a Limiter wrong codes are not limited.
func (s *Service) ClaimCode(ctx context.Context, who quan.Identity, code, key string) (*quan.Claim, error) {
	if who.Role != quan.RoleUser {
		return nil, quan.Errorf(quan.EFORBIDDEN, "only users claim coupons")
	}
	if p := quan.PromoCodeProblem(code); p != "" {
		return nil, &quan.Error{Code: quan.EINVALID, Message: "the promo code is invalid",
			Fields: []quan.FieldError{{Field: "code", Message: p}}}
	}
	code = quan.NormalizePromoCode(code)
	bucket := s.PromoLimit.bucket(who.UserID)
	if s.Limiter != nil {
		wait, err := s.Limiter.Peek(ctx, bucket)
		if err != nil {
			return nil, fmt.Errorf("the wrong promo codes of user %d: %w", who.UserID, err)
		}
		if wait > 0 {
			return nil, tooManyWrong(wait)
		}
	}
	template, err := s.promo.lookup(ctx, s.Templates, code, cmp.Or(s.PromoCacheFor, DefaultPromoCacheFor))
	if errors.Is(err, quan.ErrNotFound) {
		return nil, s.wrongCode(ctx, bucket, code)
	}
	if err != nil {
		return nil, err
	}
	c, err := s.Claim(ctx, who, template, key)
	switch quan.ErrorCode(err) {
	case quan.ENOTFOUND, quan.EPAUSED, quan.EENDED:
		// The template changed since the code was looked up, or ended by
		// time: to the user, as if the code were unknown.
		return nil, unknownCode(code)
	}
	return c, err
}

// wrongCode counts a wrong code of the user of bucket: ENOTFOUND, or
// ERATELIMITED if it was one too many.
func (s *Service) wrongCode(ctx context.Context, bucket quan.Bucket, code string) error {
	if s.Limiter == nil {
		return unknownCode(code)
	}
	refused, wait, err := s.Limiter.Allow(ctx, bucket)
	if err != nil {
		return fmt.Errorf("count a wrong promo code: %w", err)
	}
	if refused >= 0 {
		return tooManyWrong(wait)
	}
	return unknownCode(code)
}

func unknownCode(code string) error {
	return quan.Errorf(quan.ENOTFOUND, "no coupon has the promo code %s now: check the code", code)
}

func tooManyWrong(wait time.Duration) error {
	e := quan.Errorf(quan.ERATELIMITED, "too many wrong promo codes: try again in %s", wait.Round(time.Second))
	e.RetryAfter = wait
	return e
}

// promoIDs keeps what the store answered of each promo code for a short
// while (Service.PromoCacheFor), the template it names or that none
// does, so that a flash sale's users typing one code cost the store one
// read a while, shared by those who ask during it. A code changes hands
// only as templates are activated and ended: an answer kept that long at
// most is stale no longer than a template the cache holds.
type promoIDs struct {
	mu sync.Mutex
	m  map[string]*promoEntry
}

type promoEntry struct {
	done  chan struct{} // closed once id and err are set
	id    int64
	err   error     // nil or ErrNotFound once kept
	until time.Time // zero while the read runs
}

// maxPromoIDs bounds promoIDs: when it is full, the answers out of date
// go, and all of them if none is.
const maxPromoIDs = 10_000

func (p *promoIDs) lookup(ctx context.Context, store quan.TemplateStore, code string, keep time.Duration) (int64, error) {
	now := time.Now()
	p.mu.Lock()
	e := p.m[code]
	if e != nil && (e.until.IsZero() || now.Before(e.until)) {
		p.mu.Unlock()
		select {
		case <-e.done:
			return e.id, e.err
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	if p.m == nil {
		p.m = map[string]*promoEntry{}
	}
	if len(p.m) >= maxPromoIDs {
		for k, old := range p.m {
			if !old.until.IsZero() && !now.Before(old.until) {
				delete(p.m, k)
			}
		}
		if len(p.m) >= maxPromoIDs {
			clear(p.m) // those waiting hold their entries
		}
	}
	e = &promoEntry{done: make(chan struct{})}
	p.m[code] = e
	p.mu.Unlock()

	// The read is shared: the client of this call leaving abandons it
	// not.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
	id, err := store.PromoCodeTemplate(rctx, code)
	cancel()
	p.mu.Lock()
	e.id, e.err = id, err
	if err == nil || errors.Is(err, quan.ErrNotFound) {
		e.until = time.Now().Add(keep)
	} else if p.m[code] == e {
		delete(p.m, code) // an error is not kept: the next call reads again
	}
	p.mu.Unlock()
	close(e.done)
	if err != nil && !errors.Is(err, quan.ErrNotFound) {
		return 0, fmt.Errorf("look up promo code %s: %w", code, err)
	}
	return id, err
}
