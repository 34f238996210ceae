package http_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/claims"
	"github.com/quanhq/quan/inmem"
	"github.com/quanhq/quan/internal/integration"
	"github.com/quanhq/quan/redis"
)

// promoTemplate creates and activates a template of code with stock and
// limit for the merchant of token.
func (ts *testServer) promoTemplate(t *testing.T, token, code string, stock, limit int) quan.Template {
	t.Helper()
	body := validTemplate()
	body["stock"], body["perUserLimit"], body["promoCode"] = stock, limit, code
	tpl := ts.create(t, token, body)
	ts.do(t, "POST", loc(tpl.ID)+"/activate", token, nil).want(t, 200, "")
	return tpl
}

// claimCode posts a claim by promo code for the user of token.
func (ts *testServer) claimCode(t *testing.T, token, code string) response {
	t.Helper()
	return ts.do(t, "POST", "/api/v1/promo-codes/"+code+"/claim", token, nil)
}

// TestPromoCodeClaimsUnderStockAndLimits: ten users type the code of a
// template of five coupons, in any case, at once: five get one, the rest
// are refused sold out, and nobody gets a second.
func TestPromoCodeClaimsUnderStockAndLimits(t *testing.T) {
	ts := newClaimServer(t, nil)
	m := ts.merchant(t, 1)
	tpl := ts.promoTemplate(t, m, "double11", 5, 1)
	if tpl.PromoCode != "DOUBLE11" {
		t.Fatalf("promoCode kept as %q, want DOUBLE11", tpl.PromoCode)
	}
	spellings := []string{"DOUBLE11", "double11", "Double11"}
	var (
		mu      sync.Mutex
		claimed = map[int64]string{} // user → claim id
		soldOut int
		wg      sync.WaitGroup
	)
	start := make(chan struct{})
	for u := range int64(10) {
		wg.Go(func() {
			token := ts.user(t, 100+u)
			<-start
			r := ts.claimCode(t, token, spellings[u%3])
			mu.Lock()
			defer mu.Unlock()
			switch {
			case r.Status == http.StatusAccepted:
				var c quan.Claim
				r.decode(t, &c)
				if c.TemplateID != tpl.ID || !strings.HasPrefix(r.Header.Get("Location"), "/api/v1/claims/") {
					t.Errorf("user %d: claim %+v at %q, want one of template %d", 100+u, c, r.Header.Get("Location"), tpl.ID)
				}
				claimed[100+u] = c.ID
			case r.Status == http.StatusConflict && r.Problem.Code == quan.ESOLDOUT:
				soldOut++
			default:
				t.Errorf("user %d: %d %s", 100+u, r.Status, r.Body)
			}
		})
	}
	close(start)
	wg.Wait()
	if len(claimed) != 5 || soldOut != 5 {
		t.Fatalf("%d claims accepted and %d sold out, want 5 and 5", len(claimed), soldOut)
	}
	for u, id := range claimed {
		token := ts.user(t, u)
		if c := ts.waitClaim(t, token, id); c.Status != quan.ClaimIssued {
			t.Fatalf("user %d's claim decided %+v, want issued", u, c)
		}
		// Limit 1: a second claim by code, or by id, is refused.
		ts.claimCode(t, token, "DOUBLE11").want(t, http.StatusConflict, quan.ELIMIT)
		ts.claim(t, token, tpl.ID).want(t, http.StatusConflict, quan.ELIMIT)
	}
	assertCacheAgrees(t, ts, tpl.ID)
	if got, err := ts.store.Template(t.Context(), 1, tpl.ID); err != nil || got.Stock != 0 {
		t.Fatalf("stock left %d (%v), want 0", got.Stock, err)
	}
}

// TestPromoCodeClaimIsIdempotent: a retry with the client's
// Idempotency-Key is the same claim, as for a claim by id.
func TestPromoCodeClaimIsIdempotent(t *testing.T) {
	ts := newClaimServer(t, nil)
	ts.promoTemplate(t, ts.merchant(t, 1), "RETRY-ME", 10, 2)
	u := ts.user(t, 7)
	first := ts.doKey(t, "POST", "/api/v1/promo-codes/retry-me/claim", u, "key-1", nil)
	first.want(t, http.StatusAccepted, "")
	var a, b quan.Claim
	first.decode(t, &a)
	ts.waitClaim(t, u, a.ID)
	again := ts.doKey(t, "POST", "/api/v1/promo-codes/retry-me/claim", u, "key-1", nil)
	if again.Status != http.StatusAccepted && again.Status != http.StatusOK {
		t.Fatalf("retry: %d %s", again.Status, again.Body)
	}
	again.decode(t, &b)
	if b.ID != a.ID {
		t.Fatalf("retry is claim %s, want %s", b.ID, a.ID)
	}
	cps, err := ts.store.UserCoupons(t.Context(), 7, a.TemplateID)
	if err != nil || len(cps) != 1 {
		t.Fatalf("user holds %d coupons (%v) after a claim and its retry, want 1", len(cps), err)
	}
}

// TestPromoCodeUnknownIsNotFound: a code nobody has and a code whose
// template is a draft, paused, ended or past its issue end answer alike.
func TestPromoCodeUnknownIsNotFound(t *testing.T) {
	ts := newClaimServer(t, nil)
	m := ts.merchant(t, 1)
	u := ts.user(t, 1)
	body := validTemplate()
	body["promoCode"] = "DRAFT-ONLY"
	ts.create(t, m, body)
	paused := ts.promoTemplate(t, m, "PAUSED-1", 10, 1)
	ts.do(t, "POST", loc(paused.ID)+"/pause", m, nil).want(t, 200, "")
	ended := ts.promoTemplate(t, m, "ENDED-1", 10, 1)
	ts.claimCode(t, ts.user(t, 2), "ENDED-1").want(t, http.StatusAccepted, "") // known to the cache
	ts.do(t, "POST", loc(ended.ID)+"/terminate", m, nil).want(t, 200, "")

	var bodies []string
	for _, code := range []string{"NOBODY-HAS", "DRAFT-ONLY", "PAUSED-1", "ENDED-1"} {
		r := ts.claimCode(t, u, code)
		r.want(t, http.StatusNotFound, quan.ENOTFOUND)
		bodies = append(bodies, strings.ReplaceAll(r.Problem.Detail, code, "CODE"))
	}
	for _, b := range bodies[1:] {
		if b != bodies[0] {
			t.Fatalf("the 404s differ: %q", bodies)
		}
	}

	short := validTemplate()
	short["issueEnd"], short["promoCode"] = testNow.Add(time.Minute).Format(time.RFC3339), "SHORT-1"
	tpl := ts.create(t, m, short)
	ts.do(t, "POST", loc(tpl.ID)+"/activate", m, nil).want(t, 200, "")
	ts.claimCode(t, ts.user(t, 3), "SHORT-1").want(t, http.StatusAccepted, "")
	ts.setNow(testNow.Add(2 * time.Minute))
	ts.claimCode(t, ts.user(t, 4), "SHORT-1").want(t, http.StatusNotFound, quan.ENOTFOUND)
	ts.setNow(testNow)

	// Malformed: 400 naming the code. Not a user: 403; nobody: 401.
	for _, code := range []string{"AB", strings.Repeat("A", 33), "双十一", "DOUBLE%2011"} {
		r := ts.claimCode(t, u, code)
		r.want(t, http.StatusBadRequest, quan.EINVALID)
		if !r.hasField("code") {
			t.Fatalf("code %q: %s does not name the field code", code, r.Body)
		}
	}
	ts.promoTemplate(t, m, "LIVE-1", 10, 1)
	ts.claimCode(t, m, "LIVE-1").want(t, http.StatusForbidden, quan.EFORBIDDEN)
	ts.claimCode(t, ts.token(t, quan.Identity{Role: quan.RoleAdmin, Subject: "ops"}), "LIVE-1").want(t, http.StatusForbidden, quan.EFORBIDDEN)
	ts.claimCode(t, "", "LIVE-1").want(t, http.StatusUnauthorized, quan.EUNAUTHORIZED)
	ts.claimCode(t, u, "live-1").want(t, http.StatusAccepted, "")
}

// TestPromoCodeWrongCodesAreLimited: a user's wrong codes are limited
// (3 an hour here); past them every code is 429, right ones too, while
// another user claims on. Right codes, even refused ones, count not.
func TestPromoCodeWrongCodesAreLimited(t *testing.T) {
	ts := newClaimServer(t, func(ts *testServer) {
		ts.claims.PromoLimit = claims.PromoLimit{Wrong: 3, Window: time.Hour}
		limiter := inmem.NewRateLimiter()
		limiter.Now = ts.clock
		ts.claims.Limiter = limiter
	})
	ts.promoTemplate(t, ts.merchant(t, 1), "RIGHT-1", 100, 1)
	guesser, other := ts.user(t, 1), ts.user(t, 2)
	for i := range 3 {
		ts.claimCode(t, guesser, fmt.Sprintf("GUESS-%d", i)).want(t, http.StatusNotFound, quan.ENOTFOUND)
	}
	for _, code := range []string{"GUESS-3", "RIGHT-1"} {
		r := ts.claimCode(t, guesser, code)
		r.want(t, http.StatusTooManyRequests, quan.ERATELIMITED)
		if ra := r.Header.Get("Retry-After"); ra == "" || ra == "0" {
			t.Fatalf("%s: Retry-After %q, want the wait (about 20 minutes)", code, ra)
		}
	}
	// Another user: unaffected.
	ts.claimCode(t, other, "GUESS-9").want(t, http.StatusNotFound, quan.ENOTFOUND)
	ts.claimCode(t, other, "RIGHT-1").want(t, http.StatusAccepted, "")
	// Right codes are not counted, even refused (limit 1): two wrong ones
	// later, the user is still not limited.
	for range 4 {
		ts.claimCode(t, other, "right-1").want(t, http.StatusConflict, quan.ELIMIT)
	}
	ts.claimCode(t, other, "GUESS-10").want(t, http.StatusNotFound, quan.ENOTFOUND)
	ts.claimCode(t, other, "GUESS-11").want(t, http.StatusNotFound, quan.ENOTFOUND)
	// An hour on the guesser has its tokens back: it claims.
	ts.setNow(testNow.Add(time.Hour))
	ts.claimCode(t, ts.user(t, 1), "RIGHT-1").want(t, http.StatusAccepted, "")
}

// TestPromoCodeUniqueAmongActiveTemplates: drafts may share a code; one
// active (or paused) template holds it, whatever its shop, until it
// ends; activations racing for it have one winner.
func TestPromoCodeUniqueAmongActiveTemplates(t *testing.T) {
	ts := newClaimServer(t, nil)
	m1, m2 := ts.merchant(t, 1), ts.merchant(t, 2)
	body := validTemplate()
	body["promoCode"] = "sale-1"
	a, b := ts.create(t, m1, body), ts.create(t, m2, body)
	ts.do(t, "POST", loc(a.ID)+"/activate", m1, nil).want(t, 200, "")
	r := ts.do(t, "POST", loc(b.ID)+"/activate", m2, nil)
	r.want(t, http.StatusConflict, quan.ECONFLICT)
	if !r.hasField("promoCode") || !strings.Contains(r.Problem.Detail, "SALE-1") {
		t.Fatalf("%s: want a conflict naming promoCode SALE-1", r.Body)
	}
	ts.do(t, "GET", loc(b.ID), m2, nil).decode(t, &b)
	if b.Status != quan.TemplateDraft {
		t.Fatalf("the refused template is %s, want draft", b.Status)
	}
	ts.do(t, "POST", loc(a.ID)+"/pause", m1, nil).want(t, 200, "")
	ts.do(t, "POST", loc(b.ID)+"/activate", m2, nil).want(t, http.StatusConflict, quan.ECONFLICT)
	ts.do(t, "POST", loc(a.ID)+"/terminate", m1, nil).want(t, 200, "")
	ts.do(t, "POST", loc(b.ID)+"/activate", m2, nil).want(t, 200, "")
	var c quan.Claim
	r = ts.claimCode(t, ts.user(t, 2), "Sale-1")
	r.want(t, http.StatusAccepted, "")
	r.decode(t, &c)
	if c.TemplateID != b.ID {
		t.Fatalf("the code claims template %d, want %d, its holder now", c.TemplateID, b.ID)
	}

	// A draft's code is edited; a bad code is 400 naming promoCode.
	d := ts.create(t, m1, validTemplate())
	if d.PromoCode != "" {
		t.Fatalf("a template without a code has %q", d.PromoCode)
	}
	ts.do(t, "PATCH", loc(d.ID), m1, map[string]any{"promoCode": "new_year-26"}).decode(t, &d)
	if d.PromoCode != "NEW_YEAR-26" {
		t.Fatalf("edited code %q, want NEW_YEAR-26", d.PromoCode)
	}
	for _, bad := range []string{"NY", "NEW YEAR", "新年快乐券", strings.Repeat("X", 33)} {
		body := validTemplate()
		body["promoCode"] = bad
		r := ts.do(t, "POST", "/api/v1/templates", m1, body)
		r.want(t, http.StatusBadRequest, quan.EINVALID)
		if !r.hasField("promoCode") {
			t.Fatalf("promoCode %q: %s does not name promoCode", bad, r.Body)
		}
		ts.do(t, "PATCH", loc(d.ID), m1, map[string]any{"promoCode": bad}).want(t, http.StatusBadRequest, quan.EINVALID)
	}

	// Eight drafts of one code activated at once: one wins.
	racers := make([]quan.Template, 8)
	body["promoCode"] = "RACE-26"
	for i := range racers {
		racers[i] = ts.create(t, m1, body)
	}
	start := make(chan struct{})
	statuses := make([]int, len(racers))
	var wg sync.WaitGroup
	for i, tpl := range racers {
		wg.Go(func() {
			<-start
			r := ts.do(t, "POST", loc(tpl.ID)+"/activate", m1, nil)
			statuses[i] = r.Status
			if r.Status != 200 && (r.Status != http.StatusConflict || !r.hasField("promoCode")) {
				t.Errorf("activation %d: %d %s", i, r.Status, r.Body)
			}
		})
	}
	close(start)
	wg.Wait()
	won := 0
	for _, s := range statuses {
		if s == 200 {
			won++
		}
	}
	if won != 1 {
		t.Fatalf("activations answered %v, want one 200", statuses)
	}
}

// TestPromoWrongCodesSharedAcrossServers: with Redis (QUAN_TEST_REDIS)
// the wrong codes a user types on one server count on every other: two
// servers, each on a limiter of its own connection to one Redis.
func TestPromoWrongCodesSharedAcrossServers(t *testing.T) {
	url := integration.Need(t, integration.Redis)[0]
	var b [6]byte
	rand.Read(b[:])
	prefix := "quantest:" + hex.EncodeToString(b[:]) + ":"
	server := func() *testServer {
		c, err := redis.Open(t.Context(), url, prefix)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			c.Drop(context.Background())
			c.Close()
		})
		return newClaimServer(t, func(ts *testServer) {
			ts.claims.Limiter = c
			ts.claims.PromoLimit = claims.PromoLimit{Wrong: 3, Window: time.Hour}
		})
	}
	one, two := server(), server()
	two.promoTemplate(t, two.merchant(t, 1), "SHARED-1", 10, 1)
	for i := range 3 {
		one.claimCode(t, one.user(t, 1), fmt.Sprintf("GUESS-%d", i)).want(t, http.StatusNotFound, quan.ENOTFOUND)
	}
	two.claimCode(t, two.user(t, 1), "SHARED-1").want(t, http.StatusTooManyRequests, quan.ERATELIMITED)
	two.claimCode(t, two.user(t, 2), "SHARED-1").want(t, http.StatusAccepted, "")
	one.claimCode(t, one.user(t, 2), "GUESS-9").want(t, http.StatusNotFound, quan.ENOTFOUND)
}

// promoCounting counts the look-ups of promo codes that reach the store.
type promoCounting struct {
	quan.TemplateStore
	reads atomic.Int64
}

func (p *promoCounting) PromoCodeTemplate(ctx context.Context, code string) (int64, error) {
	p.reads.Add(1)
	return p.TemplateStore.PromoCodeTemplate(ctx, code)
}

// TestPromoCodeLookupsSpareTheStore: a hundred users typing one code at
// once, and others typing one wrong code, cost the store one read of
// each while the answer is kept (an hour here).
func TestPromoCodeLookupsSpareTheStore(t *testing.T) {
	var counted *promoCounting
	ts := newClaimServer(t, func(ts *testServer) {
		counted = &promoCounting{TemplateStore: ts.store}
		ts.claims.Templates = counted
		ts.claims.PromoCacheFor = time.Hour
	})
	ts.promoTemplate(t, ts.merchant(t, 1), "FLASH-1", 1000, 1)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for u := range int64(100) {
		wg.Go(func() {
			token := ts.user(t, 1000+u)
			<-start
			ts.claimCode(t, token, "flash-1").want(t, http.StatusAccepted, "")
		})
	}
	close(start)
	wg.Wait()
	if n := counted.reads.Load(); n != 1 {
		t.Fatalf("100 claims of one code read the store %d times, want 1", n)
	}
	for u := range int64(5) {
		ts.claimCode(t, ts.user(t, 2000+u), "NO-SUCH").want(t, http.StatusNotFound, quan.ENOTFOUND)
	}
	if n := counted.reads.Load(); n != 2 {
		t.Fatalf("then 5 claims of one wrong code: %d reads in all, want 2", n)
	}
}

// TestPromoCodeHonoursEligibility: a members-only template claimed by
// its code refuses a non-member 409 not_eligible (not a wrong code) and
// accepts a member.
func TestPromoCodeHonoursEligibility(t *testing.T) {
	ts := newClaimServer(t, func(ts *testServer) {
		ts.claims.PromoLimit = claims.PromoLimit{Wrong: 1, Window: time.Hour}
	})
	m := ts.merchant(t, 1)
	admin := ts.token(t, quan.Identity{Role: quan.RoleAdmin, Subject: "upstream"})
	body := validTemplate()
	body["eligibility"], body["promoCode"] = `user.level >= 2`, "VIP-ONLY"
	tpl := ts.create(t, m, body)
	ts.do(t, "POST", loc(tpl.ID)+"/activate", m, nil).want(t, http.StatusOK, "")
	for range 3 { // refused, but never counted as wrong (one allowed)
		ts.claimCode(t, ts.user(t, 7), "VIP-ONLY").want(t, http.StatusConflict, quan.ENOTELIGIBLE)
	}
	ts.claimCode(t, ts.user(t, 7), "NOT-VIP").want(t, http.StatusNotFound, quan.ENOTFOUND)
	ts.do(t, "PUT", attributesPath(8), admin, map[string]any{"level": 2}).want(t, http.StatusOK, "")
	ts.claimCode(t, ts.user(t, 8), "vip-only").want(t, http.StatusAccepted, "")
}
