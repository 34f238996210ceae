package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/rueidis"

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

// TestBenchClaimEligibility runs the bench on a template with the typical
// eligibility rule: every user is given facts that meet it, so every
// claim is decided as without it, and the verification holds.
func TestBenchClaimEligibility(t *testing.T) {
	t.Parallel()
	out, stderr, err := runBench(t, "bench", "claim", "-c", "50", "-n", "2000", "--stock", "500",
		"--eligibility", `user.level >= 2 && "vip" in user.tags`, "--warm-facts")
	if err != nil {
		t.Fatalf("bench claim: %v\n%s%s", err, out, stderr)
	}
	checkBenchClaim(t, out, 500)
	if want := `eligibility rule "user.level >= 2 && \"vip\" in user.tags" on template 1; 1,800 users given facts`; !strings.Contains(out, want) {
		t.Errorf("no %q in:\n%s", want, out)
	}
	_, _, err = runBench(t, "bench", "claim", "-n", "10", "--eligibility", "user.levl > 1")
	if err == nil || !strings.Contains(err.Error(), "undefined field 'levl'") {
		t.Errorf("a bad rule: %v", err)
	}
}

// TestBenchClaimPaced runs the bench with the store writes paced while
// claims arrive: every accepted claim is still persisted, once the load
// is over.
func TestBenchClaimPaced(t *testing.T) {
	t.Parallel()
	out, stderr, err := runBench(t, "bench", "claim", "-c", "50", "-n", "2000", "--stock", "500", "--claim-persist-rate", "1000")
	if err != nil {
		t.Fatalf("bench claim: %v\n%s%s", err, out, stderr)
	}
	checkBenchClaim(t, out, 500)
	if want := "store writes paced at 1,000 claims/s while claims arrive"; !strings.Contains(out, want) {
		t.Errorf("no %q in:\n%s", want, out)
	}
	_, _, err = runBench(t, "bench", "claim", "-n", "10", "--claim-persist-rate", "999")
	if err == nil || !strings.Contains(err.Error(), "--claim-persist-rate 999: want 0 (no limit) or at least 1000") {
		t.Errorf("--claim-persist-rate 999: %v", err)
	}
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
		benchDropRedis(t, redisURL, prefix)
		benchDropStreams(t, natsURL, stream)
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

// TestBenchClaimFreshDB runs the bench with --fresh-db on MySQL, Redis
// and NATS, to its end and failing after the claims (the ceiling's Redis
// is down), and checks each time that the database, the Redis keys and
// the NATS streams it made up are gone.
func TestBenchClaimFreshDB(t *testing.T) {
	t.Parallel()
	redisURL, natsURL := benchProdEnv(t)
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string // "": the run succeeds
	}{
		{"OK", []string{"-n", "2000", "--stock", "500", "--ceiling", "--ceiling-redis", redisURL}, ""},
		// Port 1 refuses connections: the run fails after the claims,
		// once the server is closed.
		{"ErrCeiling", []string{"-n", "1000", "--stock", "200", "--ceiling", "--ceiling-redis", "redis://127.0.0.1:1"}, "bench claim: ceiling: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := fmt.Sprintf("benchclaimtest%d:", rand.Uint32())
			stream := fmt.Sprintf("BENCHCLAIMTEST%d", rand.Uint32())
			t.Cleanup(func() { // in case the bench left something
				benchDropRedis(t, redisURL, prefix)
				for _, s := range benchStreams(t, natsURL, stream) {
					benchDropStreams(t, natsURL, s)
				}
			})
			args := append([]string{"bench", "claim", "-c", "50", "--fresh-db",
				"--store", mysqltest.URL(t), "--cache", redisURL + "?prefix=" + prefix,
				"--bus", natsURL + "?stream=" + stream + "&namespace=benchclaimtest"}, tc.args...)
			out, stderr, err := runBench(t, args...)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("bench claim: %v\n%s%s", err, out, stderr)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("bench claim: %v, want an error saying %q\n%s%s", err, tc.wantErr, out, stderr)
			}
			m := regexp.MustCompile(`bench claim: store mysql \(database (quan_bench_([0-9a-f]+))\), cache redis, bus nats; template 1,`).FindStringSubmatch(out)
			if m == nil || !strings.Contains(out, "bench claim: verified: ") {
				t.Fatalf("no setup line naming the database, or no verification, in:\n%s%s", out, stderr)
			}
			if tc.wantErr == "" {
				checkBenchClaim(t, out, 500)
			}
			if strings.Contains(stderr, "bench claim: ") {
				t.Errorf("the bench reported a failure to drop:\n%s", stderr)
			}
			db, suffix := m[1], m[2]

			srv, _ := mysqltest.Server(t)
			var n int
			if err := srv.QueryRow(`SELECT count(*) FROM information_schema.schemata WHERE schema_name = ?`, db).Scan(&n); err != nil || n != 0 {
				t.Errorf("database %s: %d left (%v)", db, n, err)
				srv.Exec("DROP DATABASE IF EXISTS " + db)
			}
			// The run's keys are under prefix+"bench_"+suffix+":"; none of
			// prefix's may be left.
			if keys := benchRedisKeys(t, redisURL, prefix+"*"); len(keys) > 0 {
				t.Errorf("%d redis keys left under %s, e.g. %s", len(keys), prefix, keys[0])
			}
			// The run's streams are stream_BENCH_SUFFIX and its dead
			// letters.
			want := stream + "_BENCH_" + strings.ToUpper(suffix)
			if left := benchStreams(t, natsURL, stream); len(left) > 0 {
				t.Errorf("streams %v left, want none (the run's was %s)", left, want)
			}
		})
	}
}

// TestBenchClaimFlags checks --fresh-db is refused without a MySQL store.
func TestBenchClaimFlags(t *testing.T) {
	t.Parallel()
	for _, store := range []string{"", "sqlite:"} {
		args := []string{"bench", "claim", "-n", "10", "--fresh-db"}
		if store != "" {
			args = append(args, "--store", store)
		}
		_, _, err := runBench(t, args...)
		const want = "bench claim: --fresh-db makes a MySQL database: use --store mysql://"
		if err == nil || err.Error() != want {
			t.Errorf("%v: %v, want %q", args, err, want)
		}
	}
}

// TestBenchClaimCeilingKey runs the ceiling's handler on Redis and checks
// the one key it wrote is deleted after.
func TestBenchClaimCeilingKey(t *testing.T) {
	t.Parallel()
	redisURL, _ := benchProdEnv(t)
	key := ceilingKey()
	gen := &loadGen{Method: http.MethodPost, Auth: [][]string{{"Bearer x"}}, Order: make([]int32, 200), Conns: 4}
	res, err := runCeiling(t.Context(), redisURL, key, gen)
	if err != nil {
		t.Fatal(err)
	}
	if res.Accepted != 200 {
		t.Errorf("%d of 200 requests accepted%s", res.Accepted, res.firstProblem())
	}
	if keys := benchRedisKeys(t, redisURL, key); len(keys) > 0 {
		t.Errorf("the ceiling left %s", key)
	}
}

// benchRedisKeys returns the keys matching pattern.
func benchRedisKeys(t *testing.T, redisURL, pattern string) []string {
	t.Helper()
	opt, err := rueidis.ParseURL(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	opt.DisableCache = true
	c, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var keys []string
	var cursor uint64
	for {
		e, err := c.Do(context.Background(), c.B().Scan().Cursor(cursor).Match(pattern).Count(1000).Build()).AsScanEntry()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, e.Elements...)
		if cursor = e.Cursor; cursor == 0 {
			return keys
		}
	}
}

// benchStreams returns the JetStream streams whose name starts with
// prefix, dead letters' included.
func benchStreams(t *testing.T, natsURL, prefix string) []string {
	t.Helper()
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	l := js.StreamNames(context.Background())
	for name := range l.Name() {
		if strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	if err := l.Err(); err != nil && !errors.Is(err, jetstream.ErrEndOfData) {
		t.Fatal(err)
	}
	return names
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
	if runtime.GOOS == "linux" {
		want := `CPU during the load: quan [\d.]+ s \(\d+ µs a request\).*; [\d.]+ s of the [\d.]+ s the \d+ cores had \(\d+ µs a request in all\)`
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

// TestBenchClaimMetricsCompare runs the claims with metrics off and on in
// turn, twice each, each run verified, and prints both sides and their
// ratio; the runs with metrics on timed every claim, those off had no
// registry. --metrics-compare goes without --ceiling.
func TestBenchClaimMetricsCompare(t *testing.T) {
	t.Parallel()
	out, stderr, err := runBench(t, "bench", "claim", "-c", "50", "-n", "2000", "--stock", "500", "--metrics-compare")
	if err != nil {
		t.Fatalf("bench claim: %v\n%s%s", err, out, stderr)
	}
	checkBenchClaim(t, out, 500)
	for _, want := range []string{
		`(?s)run 1 of 4: metrics off\n.*run 1 of 4: metrics off, no registry\n` +
			`.*run 2 of 4: metrics on\n.*run 2 of 4: metrics on, quan_claim_duration_seconds timed 2,000 claims\n` +
			`.*run 3 of 4: metrics on\n.*run 3 of 4: metrics on, quan_claim_duration_seconds timed 2,000 claims\n` +
			`.*run 4 of 4: metrics off\n.*run 4 of 4: metrics off, no registry\n`,
		`metrics off: [\d,]+ req/s, [\d,]+ accepted claims/s, p99 \S+ \(runs: [\d,]+, [\d,]+ req/s\) \| metrics on: [\d,]+ req/s, [\d,]+ accepted claims/s, p99 \S+ \(runs: [\d,]+, [\d,]+ req/s\)`,
		`metrics on/off [\d.]+× requests/s \(metrics cost -?[\d.]+%\), [\d.]+× accepted claims/s, p99 \S+ on, \S+ off \(medians of 2 runs each, \d+ cores\)`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("no match for %q in:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "verified: 500 coupons issued"); n != 4 {
		t.Errorf("%d runs verified, want 4", n)
	}
	_, _, err = runBench(t, "bench", "claim", "-n", "10", "--metrics-compare", "--ceiling")
	if err == nil || !strings.Contains(err.Error(), "--metrics-compare runs the claims several times") {
		t.Errorf("--metrics-compare --ceiling: %v", err)
	}
}

// TestBenchClaimKey runs the bench with --auth key: every claim is sent
// with one platform service key of scope claims, naming its user in the
// body; the verification holds as with each user's token, and a bad
// --auth is a usage error.
func TestBenchClaimKey(t *testing.T) {
	t.Parallel()
	out, stderr, err := runBench(t, "bench", "claim", "-c", "50", "-n", "2000", "--stock", "500", "--auth", "key")
	if err != nil {
		t.Fatalf("bench claim --auth key: %v\n%s%s", err, out, stderr)
	}
	if !strings.Contains(out, "; one platform service key of scope claims") {
		t.Errorf("the run does not say it used a key:\n%s", out)
	}
	checkBenchClaim(t, out, 500)
	if _, _, err := runBench(t, "bench", "claim", "-n", "10", "--auth", "rsa"); err == nil || !strings.Contains(err.Error(), `--auth "rsa": want hs256, rs256, es256, key`) {
		t.Errorf("--auth rsa: %v", err)
	}
}

// TestBenchClaimAuth runs the bench with the shoppers' tokens of a
// made-up identity provider, RS256 and ES256 against its JWKS, beside
// HS256 ones, in one comparison: every claim is decided as with HS256,
// and the comparison is printed.
func TestBenchClaimAuth(t *testing.T) {
	t.Parallel()
	out, stderr, err := runBench(t, "bench", "claim", "-c", "20", "-n", "600", "--stock", "200",
		"--auth", "hs256,rs256,es256", "--rounds", "1", "--warm-tokens")
	if err != nil {
		t.Fatalf("bench claim: %v\n%s%s", err, out, stderr)
	}
	for _, kind := range []string{"hs256", "rs256", "es256"} {
		for _, want := range []string{
			`; ` + kind + ` tokens, each verified once before the load\n`,
			`--auth ` + kind + `: [\d,]+ req/s, [\d,]+ accepted claims/s, p99 \S+ .*, quan's CPU \d+ µs a request\n`,
		} {
			if !regexp.MustCompile(want).MatchString(out) {
				t.Errorf("no line matching %q in:\n%s", want, out)
			}
		}
	}
	for _, want := range []string{
		`rs256/hs256 [\d.]+× requests/s \(rs256 costs -?[\d.]+%\).*; quan's CPU a request \d+ µs against \d+ µs \([+-][\d.]+%\)`,
		`es256/hs256 [\d.]+× requests/s \(es256 costs -?[\d.]+%\)`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("no line matching %q in:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "verified: 200 coupons issued == 200 accepted claims"); n != 3 {
		t.Errorf("%d runs verified, want 3:\n%s", n, out)
	}
	if _, _, err := runBench(t, "bench", "claim", "-n", "10", "--auth", "rs512"); err == nil || !strings.Contains(err.Error(), `--auth "rs512"`) {
		t.Errorf("--auth rs512: %v", err)
	}
}
