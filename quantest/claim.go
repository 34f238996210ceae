package quantest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// ClaimStores are the ports of one store that claims use.
type ClaimStores struct {
	TaskStores
	Claims quan.ClaimStore
}

// TestClaimStore runs the conformance suite of quan.ClaimStore.
func TestClaimStore(t *testing.T, newStores func(t *testing.T) ClaimStores) {
	t.Helper()
	run := func(name string, test func(*testing.T, ClaimStores)) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, newStores(t))
		})
	}
	run("IssueClaims/DecidesInOrder", testIssueClaimsInOrder)
	run("IssueClaims/OnceEach", testIssueClaimsOnce)
	run("IssueClaims/TemplateInactive", testIssueClaimsInactive)
	run("IssueClaims/CouponIDs", testIssueClaimsCouponIDs)
	run("FailClaim/KeepsTheFirstRecord", testFailClaim)
	run("FailClaim/RacesIssueClaims", testFailClaimRace)
	run("FailClaim/ReasonTooLong", testFailClaimTooLong)
	run("IssueClaims/Stampede", testIssueClaimsStampede)
	run("IssueClaims/PeriodLimits", testIssueClaimsPeriods)
	run("Holdings/Periods", testHoldingsPeriods)
}

// claimAt is inside the issue window of activeTemplate's templates.
var claimAt = base.Add(2 * time.Hour)

func newClaim(template, user int64) *quan.Claim {
	return &quan.Claim{ID: quan.NewClaimID(template, user), TemplateID: template, UserID: user, Status: quan.ClaimPending, At: claimAt}
}

func issueClaims(t *testing.T, s ClaimStores, cs ...*quan.Claim) []*quan.Claim {
	t.Helper()
	got, err := s.Claims.IssueClaims(t.Context(), cs, claimAt.Add(time.Second))
	if err != nil {
		t.Fatalf("IssueClaims: %v", err)
	}
	if len(got) != len(cs) {
		t.Fatalf("IssueClaims returned %d records for %d claims", len(got), len(cs))
	}
	for i, c := range got {
		if c.ID != cs[i].ID || c.TemplateID != cs[i].TemplateID || c.UserID != cs[i].UserID || !c.At.Equal(cs[i].At) {
			t.Fatalf("record %d is %+v, for claim %+v", i, c, cs[i])
		}
	}
	return got
}

func assertClaim(t *testing.T, c *quan.Claim, status quan.ClaimStatus, reason string) {
	t.Helper()
	if c.Status != status || c.Reason != reason || (status == quan.ClaimIssued) != (c.CouponID > 0) {
		t.Errorf("claim %s: %s %q coupon %d; want %s %q", c.ID, c.Status, c.Reason, c.CouponID, status, reason)
	}
}

func testIssueClaimsInOrder(t *testing.T, s ClaimStores) {
	tpl := activeTemplate(t, s.TaskStores, "claimed", 2, 1)
	cs := []*quan.Claim{newClaim(tpl.ID, 1), newClaim(tpl.ID, 2), newClaim(tpl.ID, 3), newClaim(tpl.ID, 1)}
	got := issueClaims(t, s, cs...)
	assertClaim(t, got[0], quan.ClaimIssued, "")
	assertClaim(t, got[1], quan.ClaimIssued, "")
	assertClaim(t, got[2], quan.ClaimFailed, string(quan.CauseOutOfStock))
	assertClaim(t, got[3], quan.ClaimFailed, string(quan.CauseLimitReached))
	if left := get(t, s.Templates, tpl.ID).Stock; left != 0 {
		t.Errorf("stock %d left, want 0", left)
	}
	for i, u := range []int64{1, 2} {
		cps := coupons(t, s.TaskStores, u, tpl.ID)
		if len(cps) != 1 || cps[0].ID != got[i].CouponID || cps[0].Source != quan.FromClaim || cps[0].Seq != 1 ||
			cps[0].Status != quan.CouponAvailable {
			t.Errorf("user %d holds %+v, want the claim's coupon %d", u, cps, got[i].CouponID)
		} else if _, err := quan.ParseCode(cps[0].Code); err != nil {
			t.Errorf("user %d's coupon has no valid code: %v", u, err)
		}
	}
	for _, c := range got {
		rec, err := s.Claims.Claim(t.Context(), c.ID)
		if err != nil || rec.Status != c.Status || rec.CouponID != c.CouponID || rec.Reason != c.Reason || !rec.DecidedAt.Equal(claimAt.Add(time.Second)) {
			t.Errorf("Claim(%s) = %+v, %v; want %+v", c.ID, rec, err, c)
		}
	}
	if _, err := s.Claims.Claim(t.Context(), "c1-1-aaaaaaaaaaaaaaaa"); !errors.Is(err, quan.ErrNotFound) {
		t.Errorf("Claim of an unknown id: %v, want ErrNotFound", err)
	}
}

func testIssueClaimsOnce(t *testing.T, s ClaimStores) {
	tpl := activeTemplate(t, s.TaskStores, "once", 10, 3)
	a, b := newClaim(tpl.ID, 1), newClaim(tpl.ID, 1)
	first := issueClaims(t, s, a)
	// The same claim again, alone, twice in one batch and beside a new
	// one, as a bus redelivers it: decided once.
	again := issueClaims(t, s, a, a, b)
	for _, c := range again[:2] {
		if c.CouponID != first[0].CouponID || c.Status != quan.ClaimIssued {
			t.Errorf("claim %s again: %+v, want the first record %+v", a.ID, c, first[0])
		}
	}
	assertClaim(t, again[2], quan.ClaimIssued, "")
	if n := len(coupons(t, s.TaskStores, 1, tpl.ID)); n != 2 {
		t.Errorf("user 1 holds %d coupons, want 2", n)
	}
	if left := get(t, s.Templates, tpl.ID).Stock; left != 8 {
		t.Errorf("stock %d left, want 8", left)
	}
}

// testIssueClaimsCouponIDs: in a batch as large as a transaction takes,
// of users in no order, every issued claim names the coupon its user got.
func testIssueClaimsCouponIDs(t *testing.T, s ClaimStores) {
	const n = quan.MaxClaimsPerTransaction
	tpl := activeTemplate(t, s.TaskStores, "ids", n, 1)
	cs := make([]*quan.Claim, n)
	for i := range cs {
		// 7919, a prime, permutes 0 … n-1.
		cs[i] = newClaim(tpl.ID, int64(1000+i*7919%n))
		cs[i].At = claimAt.Add(time.Duration(i) * time.Microsecond) // each its own, read back
	}
	got := issueClaims(t, s, cs...)
	seen := map[int64]bool{}
	for i, c := range got {
		assertClaim(t, c, quan.ClaimIssued, "")
		if seen[c.CouponID] {
			t.Fatalf("claim %d names coupon %d, named before", i, c.CouponID)
		}
		seen[c.CouponID] = true
	}
	for _, i := range []int{0, 1, 499, 500, 501, 999, n - 1} {
		cps := coupons(t, s.TaskStores, cs[i].UserID, tpl.ID)
		if len(cps) != 1 || cps[0].ID != got[i].CouponID {
			t.Errorf("claim %d of user %d names coupon %d; the user holds %+v", i, cs[i].UserID, got[i].CouponID, cps)
		}
		if rec, err := s.Claims.Claim(t.Context(), cs[i].ID); err != nil || rec.CouponID != got[i].CouponID || !rec.At.Equal(cs[i].At) {
			t.Errorf("Claim(%s) = %+v, %v; want coupon %d, at %v", cs[i].ID, rec, err, got[i].CouponID, cs[i].At)
		}
		// The coupon itself: what quan.NewCoupon makes of the claim.
		want := quan.NewCoupon(tpl, cs[i].UserID, 1, 0, cs[i].At)
		want.Source, want.CreatedAt, want.UpdatedAt = quan.FromClaim, claimAt.Add(time.Second), claimAt.Add(time.Second)
		assertCoupons(t, s.TaskStores, cs[i].UserID, tpl.ID, want)
	}
}

func testIssueClaimsInactive(t *testing.T, s ClaimStores) {
	tpl := activeTemplate(t, s.TaskStores, "window", 10, 1)
	early := newClaim(tpl.ID, 1)
	early.At = tpl.IssueStart.Add(-time.Second)
	late := newClaim(tpl.ID, 2)
	late.At = tpl.IssueEnd
	got := issueClaims(t, s, early, late)
	assertClaim(t, got[0], quan.ClaimFailed, string(quan.CauseTemplateInactive))
	assertClaim(t, got[1], quan.ClaimFailed, string(quan.CauseTemplateInactive))

	if _, err := s.Templates.UpdateTemplate(t.Context(), 1, tpl.ID, "test", "pause", (*quan.Template).Pause); err != nil {
		t.Fatal(err)
	}
	got = issueClaims(t, s, newClaim(tpl.ID, 3))
	assertClaim(t, got[0], quan.ClaimFailed, string(quan.CauseTemplateInactive))
	if left := get(t, s.Templates, tpl.ID).Stock; left != 10 {
		t.Errorf("stock %d left, want 10", left)
	}
}

func testFailClaim(t *testing.T, s ClaimStores) {
	tpl := activeTemplate(t, s.TaskStores, "dead", 10, 1)
	now := claimAt.Add(time.Minute)
	c := newClaim(tpl.ID, 1)
	for range 2 {
		rec, err := s.Claims.FailClaim(t.Context(), c, quan.ReasonHandoffFailed, now)
		if err != nil {
			t.Fatal(err)
		}
		assertClaim(t, rec, quan.ClaimFailed, quan.ReasonHandoffFailed)
	}
	// A failed claim stays failed when it is delivered again.
	got := issueClaims(t, s, c)
	assertClaim(t, got[0], quan.ClaimFailed, quan.ReasonHandoffFailed)
	// An issued claim stays issued.
	d := newClaim(tpl.ID, 2)
	issueClaims(t, s, d)
	rec, err := s.Claims.FailClaim(t.Context(), d, "late", now)
	if err != nil {
		t.Fatal(err)
	}
	assertClaim(t, rec, quan.ClaimIssued, "")
}

// testFailClaimTooLong: a reason longer than quan.MaxClaimReasonLen is
// refused as invalid and records nothing, on every store alike; one of
// that length is kept whole.
func testFailClaimTooLong(t *testing.T, s ClaimStores) {
	tpl := activeTemplate(t, s.TaskStores, "long", 10, 1)
	c := newClaim(tpl.ID, 1)
	long := strings.Repeat("x", quan.MaxClaimReasonLen+1)
	if _, err := s.Claims.FailClaim(t.Context(), c, long, claimAt); quan.ErrorCode(err) != quan.EINVALID {
		t.Fatalf("FailClaim with a reason of %d bytes: %v, want invalid", len(long), err)
	}
	if _, err := s.Claims.Claim(t.Context(), c.ID); !errors.Is(err, quan.ErrNotFound) {
		t.Fatalf("the refused claim was recorded: %v", err)
	}
	rec, err := s.Claims.FailClaim(t.Context(), c, long[1:], claimAt)
	if err != nil {
		t.Fatal(err)
	}
	assertClaim(t, rec, quan.ClaimFailed, long[1:])
	if rec, err := s.Claims.Claim(t.Context(), c.ID); err != nil {
		t.Fatal(err)
	} else {
		assertClaim(t, rec, quan.ClaimFailed, long[1:])
	}
}

// testFailClaimRace fails claims while they are issued, as a dead letter
// may be handled while a late delivery of the same claim persists: each
// claim ends decided once, issued with its coupon or failed without one,
// and both calls return that decision.
func testFailClaimRace(t *testing.T, s ClaimStores) {
	const claims = 40
	tpl := activeTemplate(t, s.TaskStores, "race", claims, 1)
	for i := range claims {
		c := newClaim(tpl.ID, int64(100+i))
		var (
			issued, failed *quan.Claim
			err1, err2     error
			wg             sync.WaitGroup
		)
		wg.Go(func() {
			var got []*quan.Claim
			if got, err1 = s.Claims.IssueClaims(t.Context(), []*quan.Claim{c}, claimAt); err1 == nil {
				issued = got[0]
			}
		})
		wg.Go(func() { failed, err2 = s.Claims.FailClaim(t.Context(), c, "dead", claimAt) })
		wg.Wait()
		if err1 != nil || err2 != nil {
			t.Fatalf("claim %d: IssueClaims %v, FailClaim %v", i, err1, err2)
		}
		rec, err := s.Claims.Claim(t.Context(), c.ID)
		if err != nil {
			t.Fatal(err)
		}
		held := coupons(t, s.TaskStores, c.UserID, tpl.ID)
		if issued.Status != rec.Status || failed.Status != rec.Status || issued.CouponID != rec.CouponID || failed.CouponID != rec.CouponID {
			t.Fatalf("claim %d: IssueClaims gave %+v, FailClaim %+v, the record is %+v", i, issued, failed, rec)
		}
		if want := map[quan.ClaimStatus]int{quan.ClaimIssued: 1, quan.ClaimFailed: 0}[rec.Status]; len(held) != want {
			t.Fatalf("claim %d is %s and its user holds %d coupons", i, rec.Status, len(held))
		}
	}
}

// testIssueClaimsStampede has 50 goroutines issue 10,000 claims in
// batches, a fifth of them from users claiming again, for a stock of
// 1,000 with a limit of one per user: exactly 1,000 coupons, no user above
// the limit.
func testIssueClaimsStampede(t *testing.T, s ClaimStores) {
	const stock, claims, workers, batch = 1000, 10_000, 50, 40
	tpl := activeTemplate(t, s.TaskStores, "stampede", stock, 1)
	var wg sync.WaitGroup
	var mu sync.Mutex
	issued := 0
	for w := range workers {
		wg.Go(func() {
			var cs []*quan.Claim
			for i := w; i < claims; i += workers {
				u := int64(i)
				if i%5 == 0 {
					u = int64(i % 500) // repeats
				}
				cs = append(cs, newClaim(tpl.ID, 1+u))
				if len(cs) < batch && i+workers < claims {
					continue
				}
				got, err := s.Claims.IssueClaims(t.Context(), cs, claimAt)
				if err != nil {
					t.Errorf("IssueClaims: %v", err)
					return
				}
				mu.Lock()
				for _, c := range got {
					if c.Status == quan.ClaimIssued {
						issued++
					}
				}
				mu.Unlock()
				cs = cs[:0]
			}
		})
	}
	wg.Wait()
	st := stats(t, s.TaskStores, tpl.ID, 0)
	left := get(t, s.Templates, tpl.ID).Stock
	if issued != stock || st.Coupons != stock || st.MaxPerUser != 1 || left != 0 {
		t.Errorf("%d claims issued, %s; stock left %d; want %d, one per user, 0 left", issued, fmt.Sprintf("%+v", st), left, stock)
	}
}
