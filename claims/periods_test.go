package claims_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/claims"
	"github.com/quanhq/quan/inmem"
	"github.com/quanhq/quan/internal/testrig"
)

// TestClaimPeriodLimitAfterCacheLoss: a cache loaded from the store after
// it lost everything (a restart of the process, a Redis flush) knows what
// each user received today, so a claim over the daily limit is refused at
// once, daily_limit_reached (409), and not accepted (202) only to fail in
// the store. The next Shanghai day the user claims again.
func TestClaimPeriodLimitAfterCacheLoss(t *testing.T) {
	r := testrig.NewClaimRigWith(t, 10, func(tpl *quan.Template) { tpl.PerUserLimit, tpl.PerUserDaily = 5, 2 })
	r.Serve(t)
	ctx := t.Context()
	who := quan.Identity{Role: quan.RoleUser, UserID: 7}
	for i := range 2 {
		c, err := r.S.Claim(ctx, who, r.Tpl.ID, fmt.Sprint("k", i))
		if err != nil {
			t.Fatalf("claim %d: %v", i, err)
		}
		c, err = r.S.Get(ctx, who, c.ID, 10*time.Second)
		if err != nil || c.Status != quan.ClaimIssued {
			t.Fatalf("claim %d: %+v, %v; want issued", i, c, err)
		}
	}
	if _, err := r.S.Claim(ctx, who, r.Tpl.ID, "k2"); quan.ErrorCode(err) != quan.EDAILYLIMIT {
		t.Fatalf("third claim today: %v, want %s", err, quan.EDAILYLIMIT)
	}

	// The process restarts: a new claim service with an empty cache, on
	// the same store and bus.
	restarted := func(now time.Time) *claims.Service {
		return &claims.Service{Templates: r.Store, Coupons: r.Store, Claims: r.Store, Cache: inmem.NewCache(),
			Bus: r.Bus, Now: func() time.Time { return now }}
	}
	s := restarted(testrig.ClaimAt.Add(time.Minute))
	c, err := s.Claim(ctx, who, r.Tpl.ID, "k3")
	if quan.ErrorCode(err) != quan.EDAILYLIMIT {
		t.Fatalf("claim after the cache was lost: %+v, %v; want %s at once", c, err, quan.EDAILYLIMIT)
	}
	if held, err := s.Cache.Held(ctx, r.Tpl.ID, who.UserID); err != nil || held != 2 {
		t.Errorf("the cache loaded user 7 holding %d (%v), want 2", held, err)
	}
	if others, err := s.Claim(ctx, quan.Identity{Role: quan.RoleUser, UserID: 8}, r.Tpl.ID, ""); err != nil {
		t.Fatalf("another user's claim: %+v, %v", others, err)
	}

	// 01:00 the next day in Shanghai (claimAt is 19:00 there).
	s = restarted(testrig.ClaimAt.Add(6 * time.Hour))
	c, err = s.Claim(ctx, who, r.Tpl.ID, "k4")
	if err != nil {
		t.Fatalf("claim the next day: %v", err)
	}
	testrig.WaitFor(t, "the claim of the next day issued", func() bool {
		rec, err := r.Store.Claim(ctx, c.ID)
		return err == nil && rec.Status == quan.ClaimIssued
	})
}
