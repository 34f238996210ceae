package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/claims"
	"github.com/quanhq/quan/inmem"
	"github.com/quanhq/quan/nats"
	"github.com/quanhq/quan/quantest"
	"github.com/quanhq/quan/reconcile"
)

// newClaimServer is a test server that takes claims, handing them over an
// embedded NATS server and persisting them in the background. setup may
// change the claim use case before it serves.
func newClaimServer(t *testing.T, setup func(ts *testServer)) *testServer {
	t.Helper()
	srv, err := nats.StartEmbedded(t.Context(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	bus, err := srv.Bus(t.Context(), nats.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bus.Close() })
	var rec *reconcile.Reconciler
	ts := newServer(t, func(ts *testServer) {
		ts.claims = &claims.Service{
			Templates: ts.store, Coupons: ts.store, Claims: ts.store, Cache: ts.cache, Bus: bus, Now: ts.clock,
			Limiter: inmem.NewRateLimiter(), MaxDeliver: 3, Backoff: []time.Duration{10 * time.Millisecond},
			Rules: ts.api.Templates.Book, Facts: ts.api.Facts,
		}
		if setup != nil {
			setup(ts)
		}
		ts.api.Claims = ts.claims
		ts.api.Centre = ts.claims
		ts.api.Templates.Created = ts.claims // as cmd/quan wires them
		// A process that takes claims reconciles its cache through a
		// Reconciler, which tells drift from claims in flight: the
		// runner's own reload after a distribution would give back a
		// claim reserved meanwhile.
		rec = &reconcile.Reconciler{Templates: ts.store, Tasks: ts.store, Coupons: ts.store, Cache: ts.cache,
			Buses: []quan.Bus{bus}, Local: []reconcile.InFlight{ts.api.Templates, ts.runner, ts.claims}, Now: ts.clock}
		ts.runner.Reconciler = rec
	})
	quantest.ServeClaims(t, ts.claims)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		if err := rec.Run(ctx, time.Second); err != nil {
			t.Errorf("reconciler: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-ran })
	return ts
}

func (ts *testServer) user(t *testing.T, id int64) string {
	return ts.token(t, quan.Identity{Role: quan.RoleUser, UserID: id})
}

// claim posts a claim of template tpl for the user of token.
func (ts *testServer) claim(t *testing.T, token string, tpl int64) response {
	t.Helper()
	return ts.do(t, "POST", fmt.Sprintf("/api/v1/templates/%d/claim", tpl), token, nil)
}

// claimed posts a claim that must be accepted and waits for its outcome.
func (ts *testServer) claimed(t *testing.T, token string, tpl int64) quan.Claim {
	t.Helper()
	r := ts.claim(t, token, tpl)
	r.want(t, http.StatusAccepted, "")
	var c quan.Claim
	r.decode(t, &c)
	if c.Status != quan.ClaimPending || r.Header.Get("Location") != "/api/v1/claims/"+c.ID {
		t.Fatalf("claim accepted as %+v at %q", c, r.Header.Get("Location"))
	}
	return ts.waitClaim(t, token, c.ID)
}

// waitClaim polls a claim with ?wait= until it is decided.
func (ts *testServer) waitClaim(t *testing.T, token, id string) quan.Claim {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		var c quan.Claim
		r := ts.do(t, "GET", "/api/v1/claims/"+id+"?wait=2s", token, nil)
		r.want(t, http.StatusOK, "")
		r.decode(t, &c)
		if c.Status != quan.ClaimPending {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("claim %s still pending", id)
		}
	}
}

func TestClaimIssuesACoupon(t *testing.T) {
	ts := newClaimServer(t, nil)
	tpl := ts.activeTemplate(t, ts.merchant(t, 1), 10, 1)
	u := ts.user(t, 42)
	c := ts.claimed(t, u, tpl.ID)
	if c.Status != quan.ClaimIssued || c.CouponID == 0 || c.UserID != 42 || c.TemplateID != tpl.ID {
		t.Fatalf("claim decided as %+v, want issued with a coupon", c)
	}
	cps, err := ts.store.UserCoupons(t.Context(), 42, tpl.ID)
	if err != nil || len(cps) != 1 || cps[0].ID != c.CouponID || cps[0].Source != quan.FromClaim {
		t.Fatalf("user 42 holds %+v (%v), want the claim's coupon", cps, err)
	}
	// Another user cannot see it; a bad id is no claim.
	ts.do(t, "GET", "/api/v1/claims/"+c.ID, ts.user(t, 43), nil).want(t, http.StatusNotFound, quan.ENOTFOUND)
	ts.do(t, "GET", "/api/v1/claims/nonsense", u, nil).want(t, http.StatusNotFound, quan.ENOTFOUND)
	ts.do(t, "GET", "/api/v1/claims/"+c.ID+"?wait=forever", u, nil).want(t, http.StatusBadRequest, quan.EINVALID)
	if got := ts.claims.Counters.Issued.Load(); got != 1 {
		t.Errorf("%d claims counted issued, want 1", got)
	}
	assertCacheAgrees(t, ts, tpl.ID)
}

// assertCacheAgrees checks that the cache and the store agree on the
// stock of template, once every claim is decided.
func assertCacheAgrees(t *testing.T, ts *testServer, template int64) {
	t.Helper()
	st, err := ts.cache.State(t.Context(), template)
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := ts.store.Template(t.Context(), quan.AnyShop, template)
	if err != nil {
		t.Fatal(err)
	}
	if st.Stock != tpl.Stock {
		t.Errorf("the cache holds a stock of %d, the store %d", st.Stock, tpl.Stock)
	}
}

func TestClaimRefusals(t *testing.T) {
	ts := newClaimServer(t, nil)
	m := ts.merchant(t, 1)
	one := ts.activeTemplate(t, m, 1, 1)
	ts.claimed(t, ts.user(t, 1), one.ID)
	ts.claim(t, ts.user(t, 2), one.ID).want(t, http.StatusConflict, quan.ESOLDOUT)
	ts.claim(t, ts.user(t, 1), one.ID).want(t, http.StatusConflict, quan.ELIMIT)

	later := validTemplate()
	later["issueStart"] = testNow.Add(time.Hour).Format(time.RFC3339)
	tpl := ts.create(t, m, later)
	ts.do(t, "POST", loc(tpl.ID)+"/activate", m, nil).want(t, 200, "")
	ts.claim(t, ts.user(t, 3), tpl.ID).want(t, http.StatusConflict, quan.ENOTSTARTED)

	short := validTemplate()
	short["issueEnd"] = testNow.Add(time.Minute).Format(time.RFC3339)
	ended := ts.create(t, m, short)
	ts.do(t, "POST", loc(ended.ID)+"/activate", m, nil).want(t, 200, "")
	ts.claimed(t, ts.user(t, 3), ended.ID) // loads it into the cache while open
	ts.setNow(testNow.Add(2 * time.Minute))
	ts.claim(t, ts.user(t, 4), ended.ID).want(t, http.StatusConflict, quan.EENDED)
	ts.setNow(testNow)

	paused := ts.activeTemplate(t, m, 10, 1)
	ts.claimed(t, ts.user(t, 5), paused.ID)
	ts.do(t, "POST", loc(paused.ID)+"/pause", m, nil).want(t, 200, "")
	ts.claim(t, ts.user(t, 6), paused.ID).want(t, http.StatusConflict, quan.EPAUSED)
	ts.do(t, "POST", loc(paused.ID)+"/terminate", m, nil).want(t, 200, "")
	ts.claim(t, ts.user(t, 6), paused.ID).want(t, http.StatusConflict, quan.EENDED)

	draft := ts.create(t, m, validTemplate())
	ts.claim(t, ts.user(t, 7), draft.ID).want(t, http.StatusNotFound, quan.ENOTFOUND)
	ts.claim(t, ts.user(t, 7), 999_999).want(t, http.StatusNotFound, quan.ENOTFOUND)
	ts.claim(t, m, one.ID).want(t, http.StatusForbidden, quan.EFORBIDDEN)
	ts.claim(t, "", one.ID).want(t, http.StatusUnauthorized, quan.EUNAUTHORIZED)
	if got := ts.claims.Counters.Refused.Load(); got < 5 {
		t.Errorf("%d refusals counted, want at least 5", got)
	}
}

// countingTemplates counts the calls that reach the template store.
type countingTemplates struct {
	quan.TemplateStore
	calls atomic.Int64
}

func (c *countingTemplates) Template(ctx context.Context, shop, id int64) (*quan.Template, error) {
	c.calls.Add(1)
	return c.TemplateStore.Template(ctx, shop, id)
}

func (c *countingTemplates) Templates(ctx context.Context, f quan.TemplateFilter) ([]*quan.Template, int, error) {
	c.calls.Add(1)
	return c.TemplateStore.Templates(ctx, f)
}

func (c *countingTemplates) HighestTemplateID(ctx context.Context) (int64, error) {
	c.calls.Add(1)
	return c.TemplateStore.HighestTemplateID(ctx)
}

// TestClaimUnknownTemplatesSpareTheStore floods the claim route with
// template ids that do not exist: at most one look in the store per
// claims.DefaultLookupEvery answers them all.
func TestClaimUnknownTemplatesSpareTheStore(t *testing.T) {
	var counted *countingTemplates
	ts := newClaimServer(t, func(ts *testServer) {
		counted = &countingTemplates{TemplateStore: ts.store}
		ts.claims.Templates = counted
	})
	tpl := ts.activeTemplate(t, ts.merchant(t, 1), 10, 1)
	ts.claimed(t, ts.user(t, 1), tpl.ID)
	before := counted.calls.Load()
	start := time.Now()
	var wg sync.WaitGroup
	for g := range 10 {
		wg.Go(func() {
			u := ts.user(t, int64(100+g))
			for i := range 100 {
				ts.claim(t, u, int64(1_000_000+g*1000+i)).want(t, http.StatusNotFound, quan.ENOTFOUND)
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	calls := counted.calls.Load() - before
	t.Logf("1,000 claims of unknown templates in %s: %d reads of the store", took, calls)
	if max := int64(took/claims.DefaultLookupEvery) + 1; calls > max || calls == 0 {
		t.Errorf("1,000 claims of unknown templates in %s reached the store %d times, want 1 to %d", took, calls, max)
	}
	if got := ts.claims.Counters.UnknownIDs.Load(); got != 1000 {
		t.Errorf("%d unknown ids counted, want 1000", got)
	}
}

// flakyClaims fails IssueClaims while failures is above zero, or always
// when forever is set.
type flakyClaims struct {
	quan.ClaimStore
	failures atomic.Int64
	forever  atomic.Bool
}

func (f *flakyClaims) IssueClaims(ctx context.Context, cs []*quan.Claim, now time.Time) ([]*quan.Claim, error) {
	if f.forever.Load() || f.failures.Add(-1) >= 0 {
		return nil, errors.New("the store is down")
	}
	return f.ClaimStore.IssueClaims(ctx, cs, now)
}

func TestClaimPersistRetriesThenDeadLetters(t *testing.T) {
	flaky := &flakyClaims{}
	ts := newClaimServer(t, func(ts *testServer) {
		flaky.ClaimStore = ts.store
		ts.claims.Claims = flaky
	})
	tpl := ts.activeTemplate(t, ts.merchant(t, 1), 2, 1)

	// Two failed attempts, then the third delivery persists it.
	flaky.failures.Store(2)
	c := ts.claimed(t, ts.user(t, 1), tpl.ID)
	if c.Status != quan.ClaimIssued || ts.claims.Counters.Retried.Load() < 2 {
		t.Fatalf("claim %+v after %d retries, want issued after 2", c, ts.claims.Counters.Retried.Load())
	}

	// A store down for good: after MaxDeliver deliveries the claim is
	// dead-lettered, ends failed, and its reservation is given back.
	flaky.forever.Store(true)
	c = ts.claimed(t, ts.user(t, 2), tpl.ID)
	if c.Status != quan.ClaimFailed || c.Reason != quan.ReasonHandoffFailed {
		t.Fatalf("claim %+v, want failed by the dead letter", c)
	}
	// The poll says in words what the reason means.
	var said struct{ Reason, Message string }
	polled := ts.do(t, "GET", "/api/v1/claims/"+c.ID, ts.user(t, 2), nil)
	polled.want(t, http.StatusOK, "")
	polled.decode(t, &said)
	if said.Reason != quan.ReasonHandoffFailed || said.Message != quan.DescribeClaimReason(quan.ReasonHandoffFailed) ||
		!strings.Contains(said.Message, "claim again") {
		t.Errorf("the failed claim reads %+v, want its reason and what it means", said)
	}
	// The claim is recorded failed before its reservation is given back
	// (the record decides: a claim the store issued after all keeps it).
	for deadline := time.Now().Add(5 * time.Second); ts.claims.Counters.Compensated.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if ts.claims.Counters.DeadLettered.Load() != 1 || ts.claims.Counters.Compensated.Load() != 1 {
		t.Errorf("counters %d dead-lettered, %d compensated; want 1, 1",
			ts.claims.Counters.DeadLettered.Load(), ts.claims.Counters.Compensated.Load())
	}
	flaky.forever.Store(false)
	// The stock and the user's count came back: user 2 may claim again
	// and gets the last coupon.
	if c := ts.claimed(t, ts.user(t, 2), tpl.ID); c.Status != quan.ClaimIssued {
		t.Fatalf("claim after the give-back: %+v", c)
	}
	assertCacheAgrees(t, ts, tpl.ID)
}

// slowBus delays every hand-off, so a client can leave in the middle.
type slowBus struct {
	quan.Bus
	delay time.Duration
}

func (b slowBus) PublishMany(ctx context.Context, ms []quan.Message) error {
	time.Sleep(b.delay)
	return b.Bus.PublishMany(ctx, ms)
}

// TestClaimSurvivesClientDisconnect: a client that gives up while its
// claim is being handed off still gets the coupon it reserved, and the
// stock it took is accounted for.
func TestClaimSurvivesClientDisconnect(t *testing.T) {
	ts := newClaimServer(t, func(ts *testServer) {
		ts.claims.Bus = slowBus{Bus: ts.claims.Bus, delay: 300 * time.Millisecond}
	})
	tpl := ts.activeTemplate(t, ts.merchant(t, 1), 5, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", fmt.Sprintf("%s/api/v1/templates/%d/claim", ts.URL, tpl.ID), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+ts.user(t, 9))
	if res, err := ts.Client().Do(req); err == nil {
		res.Body.Close()
		t.Fatalf("the client got %d before it left; make the hand-off slower", res.StatusCode)
	}
	// The claim counts as accepted once its hand-off returns, which may be
	// after the consumer stored its coupon: wait for both.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		cps, err := ts.store.UserCoupons(t.Context(), 9, tpl.ID)
		if err != nil {
			t.Fatal(err)
		}
		accepted := ts.claims.Counters.Accepted.Load()
		if len(cps) == 1 && accepted == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the claim of a client that left: %d coupons, %d claims accepted; want 1 and 1", len(cps), accepted)
		}
	}
	assertCacheAgrees(t, ts, tpl.ID)
}

// TestClaimsAndDistributionsShareLimits: a user who got the coupon from a
// distribution is refused a claim, and a user who claimed it is refused by
// a distribution.
func TestClaimsAndDistributionsShareLimits(t *testing.T) {
	ts := newClaimServer(t, nil)
	m := ts.merchant(t, 1)
	tpl := ts.activeTemplate(t, m, 10, 1)
	task := ts.distribute(t, m, tpl.ID, "users.csv", []byte("userId\n501\n"), nil)
	if task.Counts.Issued != 1 {
		t.Fatalf("distribution: %+v", task.Counts)
	}
	ts.claim(t, ts.user(t, 501), tpl.ID).want(t, http.StatusConflict, quan.ELIMIT)

	ts.claimed(t, ts.user(t, 502), tpl.ID)
	task = ts.distribute(t, m, tpl.ID, "users.csv", []byte("userId\n502\n503\n"), nil)
	if task.Counts.Issued != 1 || task.Counts.Failed.LimitReached != 1 {
		t.Fatalf("distribution after a claim: %+v, want 1 issued and 1 limit_reached", task.Counts)
	}
	assertCacheAgrees(t, ts, tpl.ID)
}

// doKey is do with an Idempotency-Key.
func (ts *testServer) doKey(t *testing.T, method, path, token, key string, body any) response {
	t.Helper()
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequest(method, ts.URL+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Idempotency-Key", key)
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := response{Status: res.StatusCode, Header: res.Header, Body: out}
	if res.StatusCode >= 400 {
		r.decode(t, &r.Problem)
	}
	return r
}

func TestClaimIdempotencyKey(t *testing.T) {
	ts := newClaimServer(t, nil)
	m := ts.merchant(t, 1)
	tpl := ts.activeTemplate(t, m, 10, 1)
	other := ts.activeTemplate(t, m, 10, 1)
	u := ts.user(t, 7)
	path := fmt.Sprintf("/api/v1/templates/%d/claim", tpl.ID)

	first := ts.doKey(t, "POST", path, u, "k-1", nil)
	first.want(t, http.StatusAccepted, "")
	again := ts.doKey(t, "POST", path, u, "k-1", nil)
	again.want(t, http.StatusAccepted, "")
	if !bytes.Equal(again.Body, first.Body) || again.Header.Get("Location") != first.Header.Get("Location") ||
		again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay %s %v, want the first response %s", again.Body, again.Header, first.Body)
	}
	// The same key for another request is refused; another user's key of
	// the same name is another key.
	ts.doKey(t, "POST", fmt.Sprintf("/api/v1/templates/%d/claim", other.ID), u, "k-1", nil).
		want(t, http.StatusUnprocessableEntity, quan.EIDEMMISMATCH)
	ts.doKey(t, "POST", path, ts.user(t, 8), "k-1", nil).want(t, http.StatusAccepted, "")

	// Concurrent requests with one key: one runs, all get its answer.
	var wg sync.WaitGroup
	bodies := make([][]byte, 20)
	for i := range bodies {
		wg.Go(func() {
			r := ts.doKey(t, "POST", path, ts.user(t, 9), "k-2", nil)
			if r.Status != http.StatusAccepted {
				t.Errorf("concurrent request %d: %d %s", i, r.Status, r.Body)
			}
			bodies[i] = r.Body
		})
	}
	wg.Wait()
	for i, b := range bodies {
		if !bytes.Equal(b, bodies[0]) {
			t.Fatalf("concurrent request %d got %s, request 0 %s", i, b, bodies[0])
		}
	}
	if got := ts.claims.Counters.Accepted.Load(); got != 3 {
		t.Errorf("%d claims accepted, want 3 (users 7, 8 and 9 once each)", got)
	}

	// Every POST honours the key: one template for two creates.
	body := validTemplate()
	c1 := ts.doKey(t, "POST", "/api/v1/templates", m, "create-1", body)
	c2 := ts.doKey(t, "POST", "/api/v1/templates", m, "create-1", body)
	c1.want(t, http.StatusCreated, "")
	if !bytes.Equal(c1.Body, c2.Body) {
		t.Fatalf("second create answered %s, want the first %s", c2.Body, c1.Body)
	}
	body["name"] = "another"
	ts.doKey(t, "POST", "/api/v1/templates", m, "create-1", body).want(t, http.StatusUnprocessableEntity, quan.EIDEMMISMATCH)
	var page struct{ Total int }
	ts.do(t, "GET", "/api/v1/templates", m, nil).decode(t, &page)
	if page.Total != 3 {
		t.Errorf("%d templates, want 3", page.Total)
	}
}

func TestClaimRateLimits(t *testing.T) {
	ts := newClaimServer(t, func(ts *testServer) {
		ts.claims.Limits = claims.Limits{UserRate: 0.01, UserBurst: 2, TemplateRate: 0.01, TemplateBurst: 3}
	})
	m := ts.merchant(t, 1)
	tpl := ts.activeTemplate(t, m, 100, 5)
	u := ts.user(t, 1)
	ts.claim(t, u, tpl.ID).want(t, http.StatusAccepted, "")
	ts.claim(t, u, tpl.ID).want(t, http.StatusAccepted, "")
	r := ts.claim(t, u, tpl.ID)
	r.want(t, http.StatusTooManyRequests, quan.ERATELIMITED)
	if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 90 || ra > 100 {
		t.Errorf("Retry-After %q, want about 100 seconds", r.Header.Get("Retry-After"))
	}
	// The template's bucket of 3 holds one more claim, from anyone.
	ts.claim(t, ts.user(t, 2), tpl.ID).want(t, http.StatusAccepted, "")
	ts.claim(t, ts.user(t, 3), tpl.ID).want(t, http.StatusTooManyRequests, quan.ERATELIMITED)
}
