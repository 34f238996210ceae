package main

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/mysql/mysqltest"
)

// TestBenchClaimEmbedded claims 500 coupons with 2,000 requests on the
// embedded default and checks the figures are printed and the tool's own
// verification passed: every 202 became a coupon, none beyond the stock,
// none beyond one per user.
func TestBenchClaimEmbedded(t *testing.T) {
	t.Parallel()
	out, stderr, err := runBench(t, "bench", "claim", "-c", "50", "-n", "2000", "--stock", "500")
	if err != nil {
		t.Fatalf("bench claim: %v\n%s%s", err, out, stderr)
	}
	checkBenchClaim(t, out, 500)
}

// TestBenchClaimProduction does the same on MySQL, Redis and NATS, on a
// database, key prefix and stream of the test's own, with the ceiling.
func TestBenchClaimProduction(t *testing.T) {
	t.Parallel()
	redisURL, natsURL := benchProdEnv(t)
	store := mysqltest.URL(t)
	prefix := fmt.Sprintf("benchclaimtest%d:", rand.Uint32())
	suffix := fmt.Sprint(rand.Uint32())
	stream, ns := "BENCHCLAIMTEST"+suffix, "benchclaimtest"+suffix
	t.Cleanup(func() {
		deleteRedisKeys(t, redisURL, prefix)
		dropStreams(t, natsURL, stream, ns)
	})
	out, stderr, err := runBench(t, "bench", "claim", "-c", "50", "-n", "2000", "--stock", "500",
		"--store", store, "--cache", redisURL+"?prefix="+prefix,
		"--bus", natsURL+"?stream="+stream+"&namespace="+ns,
		"--ceiling", "--ceiling-redis", redisURL)
	if err != nil {
		t.Fatalf("bench claim: %v\n%s%s", err, out, stderr)
	}
	checkBenchClaim(t, out, 500)
	for _, want := range []string{
		`ceiling: bare handler, one Redis script call per request \(rueidis\), same load: 2,000 requests in \S+: [\d,]+ req/s, latency p50 \S+ p99 \S+ max \S+ \(\d+ cores\)`,
		`claims/ceiling [\d.]+×`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("no line matching %q in:\n%s", want, out)
		}
	}
}

// checkBenchClaim checks out has the figures of a run that claimed all of
// stock, and the verification line.
func checkBenchClaim(t *testing.T, out string, stock int) {
	t.Helper()
	for _, want := range []string{
		`client and server share the \d+ cores`,
		`2,000 requests in \S+: [\d,]+ req/s, latency p50 \S+ p99 \S+ max \S+ \(\d+ cores\)`,
		fmt.Sprintf(`202 accepted %d \([\d,]+ claims/s\), 409 sold_out [\d,]+, 409 limit_reached [\d,]+, other 409 0, 429 0, other status 0, no response 0\n`, stock),
		`drain: [\d,]+ persisted when the load ended, all \d+ \S+ after it began: [\d,]+ coupons/s`,
		fmt.Sprintf(`verified: %d coupons issued == %d accepted claims \(no claim lost\), ≤ stock %d \(no oversell\), at most 1 per user \(no over-limit\), cache stock 0 == store stock 0`, stock, stock, stock),
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("no line matching %q in:\n%s", want, out)
		}
	}
}

// TestBenchClaimAudit checks the verification fails the run for each
// broken invariant.
func TestBenchClaimAudit(t *testing.T) {
	t.Parallel()
	ok := claimAudit{Stock: 10, Accepted: 4, ClientAccepted: 4, Coupons: quan.CouponStats{Coupons: 4, Users: 4, MaxPerUser: 1}, CacheStock: 6, StoreStock: 6}
	tests := []struct {
		name  string
		edit  func(*claimAudit)
		wants string
	}{
		{"OK", func(*claimAudit) {}, ""},
		{"OKClientLostResponses", func(a *claimAudit) { a.ClientAccepted, a.ClientErrors = 3, 1 }, ""},
		{"ClaimLost", func(a *claimAudit) { a.Coupons.Coupons, a.StoreStock, a.CacheStock = 3, 7, 7 }, "3 coupons issued for 4 accepted claims"},
		{"ClientMiscounted", func(a *claimAudit) { a.ClientAccepted = 5 }, "the client read 5 202s"},
		{"Oversold", func(a *claimAudit) {
			a.Stock, a.Accepted, a.ClientAccepted, a.Coupons.Coupons, a.StoreStock, a.CacheStock = 3, 4, 4, 4, -1, -1
		}, "oversold"},
		{"OverLimit", func(a *claimAudit) { a.Coupons.MaxPerUser = 2 }, "over the limit"},
		{"CacheDrift", func(a *claimAudit) { a.CacheStock = 5 }, "the cache's stock 5 is not the store's 6"},
		{"StoreDrift", func(a *claimAudit) { a.CacheStock, a.StoreStock = 7, 7 }, "the store's stock 7 is not 10 less 4 issued"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := ok
			tt.edit(&a)
			err := a.check()
			switch {
			case tt.wants == "" && err != nil:
				t.Fatalf("check: %v", err)
			case tt.wants != "" && (err == nil || !strings.Contains(err.Error(), tt.wants)):
				t.Fatalf("check: %v, want an error saying %q", err, tt.wants)
			}
		})
	}
}

// TestLatencies checks the histogram's quantiles are within its
// resolution.
func TestLatencies(t *testing.T) {
	t.Parallel()
	var l latencies
	for i := int64(1); i <= 100_000; i++ {
		l.record(time.Duration(i) * time.Microsecond)
	}
	for _, q := range []float64{0.5, 0.99} {
		want := time.Duration(q*100_000) * time.Microsecond
		if got := l.quantile(q); got < want*96/100 || got > want*104/100 {
			t.Errorf("quantile(%v) = %s, want %s within 4%%", q, got, want)
		}
	}
	if got := l.quantile(1); got != 100*time.Millisecond {
		t.Errorf("quantile(1) = %s, want the max, 100ms", got)
	}
}
