package prom_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/inmem"
	"github.com/quanhq/quan/internal/integration"
	natsbus "github.com/quanhq/quan/nats"
	"github.com/quanhq/quan/prom"
	"github.com/quanhq/quan/quantest"
	"github.com/quanhq/quan/redis"
	"github.com/quanhq/quan/sqlite"
)

// sample returns the value of the series name{labels} in reg (a
// histogram's count), and whether reg has it.
func sample(t *testing.T, reg *prometheus.Registry, name string, labels ...string) (float64, bool) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel())*2 != len(labels) {
				continue
			}
			for i, l := range m.GetLabel() {
				if l.GetName() != labels[2*i] || l.GetValue() != labels[2*i+1] {
					continue series
				}
			}
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM:
				return float64(m.GetHistogram().GetSampleCount()), true
			case dto.MetricType_COUNTER:
				return m.GetCounter().GetValue(), true
			default:
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

// calls returns how many calls to op of backend reg timed, and how many
// failed.
func calls(t *testing.T, reg *prometheus.Registry, backend, op string) (n, failed float64) {
	t.Helper()
	n, ok := sample(t, reg, "quan_backend_duration_seconds", "backend", backend, "op", op)
	if !ok {
		t.Errorf("no quan_backend_duration_seconds{backend=%q,op=%q}", backend, op)
	}
	failed, ok = sample(t, reg, "quan_backend_errors_total", "backend", backend, "op", op)
	if !ok {
		t.Errorf("no quan_backend_errors_total{backend=%q,op=%q}", backend, op)
	}
	return n, failed
}

func openSQLite(t *testing.T) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "quan.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// wrappedStore is a SQLite store recorded in a registry of its own.
func wrappedStore(t *testing.T) quan.Store {
	t.Helper()
	return prom.NewBackendMetrics(prometheus.NewRegistry()).Store(sqlite.NewStore(openSQLite(t)))
}

// TestStore: a call to the store is timed; not found is an answer, not a
// failure, and neither is a call its caller canceled; a store that
// cannot answer (closed) is.
func TestStore(t *testing.T) {
	reg := prometheus.NewRegistry()
	db := openSQLite(t)
	s := prom.NewBackendMetrics(reg).Store(sqlite.NewStore(db))
	ctx := t.Context()
	if n, failed := calls(t, reg, "store", "IssueClaims"); n != 0 || failed != 0 {
		t.Errorf("IssueClaims before any call: %v calls, %v failed", n, failed)
	}

	if _, err := s.Template(ctx, quan.AnyShop, 424242); !errors.Is(err, quan.ErrNotFound) {
		t.Fatalf("Template: %v, want not found", err)
	}
	if n, failed := calls(t, reg, "store", "Template"); n != 1 || failed != 0 {
		t.Errorf("Template not found: %v calls, %v failed; want 1, 0", n, failed)
	}

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.ClaimTask(canceled, "runner", time.Now(), time.Now().Add(time.Minute)); err == nil {
		t.Fatal("ClaimTask with a canceled context succeeded")
	}
	if n, failed := calls(t, reg, "store", "ClaimTask"); n != 1 || failed != 0 {
		t.Errorf("ClaimTask canceled: %v calls, %v failed; want 1, 0", n, failed)
	}

	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Template(ctx, quan.AnyShop, 1); err == nil {
		t.Fatal("Template on a closed store succeeded")
	}
	if _, err := s.ArchiveCoupons(ctx, time.Now(), time.Now(), 10); err == nil {
		t.Fatal("ArchiveCoupons on a closed store succeeded")
	}
	for _, op := range []string{"Template", "ArchiveCoupons"} {
		if _, failed := calls(t, reg, "store", op); failed != 1 {
			t.Errorf("%s on a closed store: %v failed, want 1", op, failed)
		}
	}
	for h, err := range s.Holdings(ctx, 1, time.Time{}) {
		if err == nil {
			t.Fatalf("Holdings on a closed store yielded %+v", h)
		}
	}
	if n, failed := calls(t, reg, "store", "Holdings"); n != 1 || failed != 1 {
		t.Errorf("Holdings on a closed store: %v calls, %v failed; want 1, 1", n, failed)
	}
}

// The recorded store passes the conformance suites of claims (over
// templates, tasks and coupons), of archiving and of accounts. (The template suite,
// which the SQLite store's tests run, takes long and adds nothing here.)
func TestStoreConformance(t *testing.T) {
	t.Run("Claim", func(t *testing.T) {
		quantest.TestClaimStore(t, func(t *testing.T) quantest.ClaimStores {
			s := wrappedStore(t)
			return quantest.ClaimStores{TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, Claims: s}
		})
	})
	t.Run("Archiver", func(t *testing.T) {
		quantest.TestArchiver(t, func(t *testing.T) quantest.WalletStores {
			s := wrappedStore(t)
			return quantest.WalletStores{
				ClaimStores: quantest.ClaimStores{TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, Claims: s},
				Wallet:      s,
			}
		}, func(s quantest.WalletStores) quan.Archiver { return s.Wallet.(quan.Archiver) })
	})
	t.Run("Account", func(t *testing.T) {
		quantest.TestAccountStore(t, func(t *testing.T) quan.AccountStore { return wrappedStore(t) })
	})
}

// TestCacheInMemory: the in-process cache recorded is a bare Cache still
// (no ledger, no limiter: claims.Service would take it for Redis), its
// calls are timed, and a cold template is an answer, not a failure.
func TestCacheInMemory(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prom.NewBackendMetrics(reg).Cache(inmem.NewCache())
	if _, ok := c.(quan.ClaimLedger); ok {
		t.Error("the recorded in-process cache is a ClaimLedger")
	}
	if _, ok := c.(quan.LimitedReserver); ok {
		t.Error("the recorded in-process cache is a LimitedReserver")
	}
	if _, ok := c.(quan.RateLimiter); ok {
		t.Error("the recorded in-process cache is a RateLimiter")
	}
	if _, ok := c.(quan.Idempotency); ok {
		t.Error("the recorded in-process cache is an Idempotency")
	}
	if _, ok := c.(interface{ Ping(context.Context) error }); ok {
		t.Error("the recorded in-process cache has Ping")
	}
	ctx := t.Context()
	if _, err := c.Reserve(ctx, 1, "k", []int64{7}, time.Now()); !errors.Is(err, quan.ErrCacheCold) {
		t.Fatalf("Reserve cold: %v", err)
	}
	if n, failed := calls(t, reg, "cache", "Reserve"); n != 1 || failed != 0 {
		t.Errorf("Reserve cold: %v calls, %v failed; want 1, 0", n, failed)
	}
	// Holdings that fail to be read fail the Prime.
	if err := c.Prime(ctx, quan.TemplateState{ID: 1}, func(yield func(quan.Holding, error) bool) {
		yield(quan.Holding{}, errors.New("store gone"))
	}); err == nil {
		t.Fatal("Prime with failing holdings succeeded")
	}
	if n, failed := calls(t, reg, "cache", "Prime"); n != 1 || failed != 1 {
		t.Errorf("Prime failing: %v calls, %v failed; want 1, 1", n, failed)
	}
	if _, ok := sample(t, reg, "quan_backend_duration_seconds", "backend", "cache", "op", "ReserveLimited"); ok {
		t.Error("ReserveLimited timed for a cache that has none")
	}
}

func TestCacheConformance(t *testing.T) {
	t.Run("InMemory", func(t *testing.T) {
		quantest.TestCache(t, func(t *testing.T) quan.Cache {
			return prom.NewBackendMetrics(prometheus.NewRegistry()).Cache(inmem.NewCache())
		})
	})
	t.Run("Redis", func(t *testing.T) {
		quantest.TestCache(t, func(t *testing.T) quan.Cache {
			return prom.NewBackendMetrics(prometheus.NewRegistry()).SharedCache(openRedis(t))
		})
	})
}

// openRedis opens a cache on QUAN_TEST_REDIS under a prefix of its own,
// removed at the end of the test. Like package redis's tests, it skips
// without QUAN_TEST_REDIS (CI sets it).
func openRedis(t *testing.T) *redis.Cache {
	t.Helper()
	url := integration.Need(t, integration.Redis)[0]
	c, err := redis.Open(t.Context(), url, "promtest:"+strconv.FormatInt(time.Now().UnixNano(), 36)+":")
	if err != nil {
		t.Fatalf("QUAN_TEST_REDIS=%s: %v", url, err)
	}
	t.Cleanup(func() {
		if err := c.Drop(context.Background()); err != nil {
			t.Errorf("delete test keys: %v", err)
		}
		c.Close()
	})
	return c
}

// TestCacheRedis: the calls of the Redis cache recorded, in each of its
// roles (ledger, limited reserver, rate limiter), are timed; a Redis
// that cannot answer (closed) fails them.
func TestCacheRedis(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := prom.NewBackendMetrics(reg)
	c := m.SharedCache(openRedis(t))
	ledger, lr, limiter := quan.ClaimLedger(c), quan.LimitedReserver(c), quan.RateLimiter(c)
	ctx := t.Context()
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	st := quan.TemplateState{ID: 1, Status: quan.TemplateActive, IssueStart: now.Add(-time.Hour), IssueEnd: now.Add(time.Hour), PerUserLimit: 1, Stock: 10}
	if err := c.Prime(ctx, st, quantest.Holdings(nil)); err != nil {
		t.Fatal(err)
	}
	bucket := quan.Bucket{Key: "u7", Rate: 1, Burst: 5}
	if refused, _, out, err := lr.ReserveLimited(ctx, 1, "claim-1", []int64{7}, now, []quan.Bucket{bucket}); err != nil || refused != -1 || out[0] != "" {
		t.Fatalf("ReserveLimited: %d %v %v", refused, out, err)
	}
	if _, _, err := limiter.Allow(ctx, bucket); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.Handed(ctx, 1, []string{"claim-1"}); err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"Prime", "ReserveLimited", "Allow", "Handed"} {
		if n, failed := calls(t, reg, "cache", op); n != 1 || failed != 0 {
			t.Errorf("%s: %v calls, %v failed; want 1, 0", op, n, failed)
		}
	}
	// A second cache, recorded in the same metrics, whose connection is
	// closed: it writes no key, so there is nothing to delete.
	gone, err := redis.Open(ctx, os.Getenv("QUAN_TEST_REDIS"), "promtest:closed:")
	if err != nil {
		t.Fatal(err)
	}
	gone.Close()
	if _, err := m.SharedCache(gone).Reserve(ctx, 1, "claim-2", []int64{8}, now); err == nil {
		t.Fatal("Reserve on a closed Redis succeeded")
	}
	if n, failed := calls(t, reg, "cache", "Reserve"); n != 1 || failed != 1 {
		t.Errorf("Reserve on a closed Redis: %v calls, %v failed; want 1, 1", n, failed)
	}
}

// TestBus: the embedded NATS bus recorded still has Ping; Publish and
// Backlog are timed, and a bus closed fails them. A bus without Ping
// gets none.
func TestBus(t *testing.T) {
	reg := prometheus.NewRegistry()
	ctx := t.Context()
	srv, err := natsbus.StartEmbedded(ctx, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	raw, err := srv.Bus(ctx, natsbus.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	b := prom.NewBackendMetrics(reg).Bus(raw)
	p, ok := b.(interface{ Ping(context.Context) error })
	if !ok {
		t.Fatal("the recorded NATS bus has no Ping")
	}
	if err := p.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(ctx, quan.Message{Subject: quan.ClaimBatchSubject, ID: "m1", Data: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if n, err := b.Backlog(ctx, quan.ClaimBatchSubject, "test"); err != nil || n != 1 {
		t.Fatalf("Backlog: %d %v", n, err)
	}
	for _, op := range []string{"Publish", "Backlog"} {
		if n, failed := calls(t, reg, "bus", op); n != 1 || failed != 0 {
			t.Errorf("%s: %v calls, %v failed; want 1, 0", op, n, failed)
		}
	}
	raw.Close()
	if err := b.PublishMany(ctx, []quan.Message{{Subject: quan.ClaimBatchSubject, ID: "m2", Data: []byte("x")}}); err == nil {
		t.Fatal("PublishMany on a closed bus succeeded")
	}
	if n, failed := calls(t, reg, "bus", "PublishMany"); n != 1 || failed != 1 {
		t.Errorf("PublishMany on a closed bus: %v calls, %v failed; want 1, 1", n, failed)
	}

	if _, ok := prom.NewBackendMetrics(prometheus.NewRegistry()).Bus(struct{ quan.Bus }{raw}).(interface{ Ping(context.Context) error }); ok {
		t.Error("a recorded bus without Ping has one")
	}
}

// TestReady: each check is 1 when it passes and 0 when it fails, at
// every scrape.
func TestReady(t *testing.T) {
	reg := prometheus.NewRegistry()
	cacheDown := errors.New("dial tcp: refused")
	reg.MustRegister(prom.Ready(map[string]func(context.Context) error{
		"store": func(context.Context) error { return nil },
		"cache": func(context.Context) error { return cacheDown },
	}))
	for check, want := range map[string]float64{"store": 1, "cache": 0} {
		if v, ok := sample(t, reg, "quan_ready", "check", check); !ok || v != want {
			t.Errorf("quan_ready{check=%q} %v (%v), want %v", check, v, ok, want)
		}
	}
}

// TestHTTP: a request counts under its route and status and is timed
// under its route.
func TestHTTP(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := prom.NewHTTP(reg)
	route := "POST /api/v1/templates/{id}/claim"
	h.Observe(route, 202, time.Millisecond)
	h.Observe(route, 202, time.Millisecond)
	h.Observe(route, 429, time.Millisecond)
	h.Observe("unmatched", 404, time.Millisecond)
	for _, tc := range []struct {
		route, code string
		want        float64
	}{{route, "202", 2}, {route, "429", 1}, {"unmatched", "404", 1}} {
		if v, _ := sample(t, reg, "quan_http_requests_total", "code", tc.code, "route", tc.route); v != tc.want {
			t.Errorf("quan_http_requests_total{route=%q,code=%q} %v, want %v", tc.route, tc.code, v, tc.want)
		}
	}
	if v, _ := sample(t, reg, "quan_http_request_duration_seconds", "route", route); v != 3 {
		t.Errorf("quan_http_request_duration_seconds_count{route=%q} %v, want 3", route, v)
	}
}

// TestHTTPUnavailable: requests answered 503 for a backend down are
// counted by backend; every backend's series is there from the start.
func TestHTTPUnavailable(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := prom.NewHTTP(reg)
	for _, b := range []string{"store", "cache", "bus"} {
		if v, ok := sample(t, reg, "quan_unavailable_total", "backend", b); !ok || v != 0 {
			t.Errorf("quan_unavailable_total{backend=%q} %v (there: %v), want 0", b, v, ok)
		}
	}
	h.Unavailable("cache")
	h.Unavailable("cache")
	h.Unavailable("store")
	for b, want := range map[string]float64{"cache": 2, "store": 1, "bus": 0} {
		if v, _ := sample(t, reg, "quan_unavailable_total", "backend", b); v != want {
			t.Errorf("quan_unavailable_total{backend=%q} %v, want %v", b, v, want)
		}
	}
}

// TestTokensVerified: accepted bearer tokens are counted by kind; the
// known kinds' series are there from the start, and another kind gets
// one when first seen.
func TestTokensVerified(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := prom.NewHTTP(reg)
	for _, k := range prom.TokenKinds {
		if v, ok := sample(t, reg, "quan_tokens_verified_total", "kind", k); !ok || v != 0 {
			t.Errorf("quan_tokens_verified_total{kind=%q} %v (there: %v), want 0", k, v, ok)
		}
	}
	h.TokenVerified("hs256")
	h.TokenVerified("jwks")
	h.TokenVerified("jwks")
	h.TokenVerified("key")
	for k, want := range map[string]float64{"hs256": 1, "jwks": 2, "key": 1} {
		if v, _ := sample(t, reg, "quan_tokens_verified_total", "kind", k); v != want {
			t.Errorf("quan_tokens_verified_total{kind=%q} %v, want %v", k, v, want)
		}
	}
}
