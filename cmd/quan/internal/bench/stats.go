package bench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/cmd/quan/internal/app"
	"github.com/quanhq/quan/cmd/quan/internal/cli"
)

// statsSeedBatch is how many coupons one seeding transaction writes.
const statsSeedBatch = 100_000

// statsSeeder is what `bench stats` needs of the bare SQL next to the
// store: the wallet benchmarks' seed, and the counters of what it seeded.
type statsSeeder interface {
	Seed(ctx context.Context, tpl *quan.Template, first int64, n, rows int, start time.Time, end func(k int) time.Time, created time.Time) error
	// CountSeeded adds n coupons seeded at created to tpl's statistics,
	// as the store counts the coupons it issues.
	CountSeeded(ctx context.Context, tpl *quan.Template, n int64, created time.Time) error
	Close() error
}

// stats measures GET /api/v1/templates/{id}/stats on a template with
// --coupons coupons: quan serving in this process on the backends the
// flags name, its store filled by bare multi-row INSERTs (not timed) with
// the counters the store would have kept, then --requests requests on -c
// connections, each checked to count every coupon. It prints p50, p99
// and the slowest.
func (c *Command) stats(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench stats", flag.ContinueOnError)
	var cfg app.Config
	cfg.RegisterBackends(fs, app.Local) // --log-level warn: no access log line per request
	coupons := fs.Int("coupons", 10_000_000, "coupons of the template the statistics are asked of")
	requests := fs.Int("requests", 2000, "requests timed")
	conns := fs.Int("c", 4, "connections the requests go on at once")
	var fresh freshDB
	fresh.registerFreshDB(fs, "bench stats", "Without it, give an empty database.")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	switch {
	case *coupons < 1:
		return cli.Usagef("bench stats: --coupons %d: want at least 1", *coupons)
	case *requests < 1 || *conns < 1:
		return cli.Usagef("bench stats: --requests and -c: want at least 1")
	}
	if err := fresh.checkFreshDB(cfg); err != nil {
		return err
	}
	if !cli.IsSet(fs, "data") {
		dir, err := os.MkdirTemp("", "quan-bench-stats-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		cfg.DataDir = dir
	}
	// As `quan serve --runner=false`: no runner polls the store for tasks
	// while the seed holds SQLite's write lock.
	cfg.Runner.Off = true
	drop, err := fresh.isolate(ctx, c.Stderr, &cfg)
	if err != nil {
		return err
	}
	defer drop()
	srv, err := startServer(ctx, c, cfg)
	if err != nil {
		return fmt.Errorf("bench stats: %w", err)
	}
	defer srv.Close()
	a := srv.app
	tpl, err := a.CreateDemoTemplate(ctx, int64(*coupons))
	if err != nil {
		return fmt.Errorf("bench stats: %w", err)
	}
	store, _, _ := app.Kinds(a.Config)
	out := c.Stdout
	fmt.Fprintf(out, "bench stats: store %s%s, template %d with %s coupons, %s requests on %d connections; %d cores (GOMAXPROCS %d)\n",
		store, fresh.database(), tpl.ID, cli.Thousands(int64(*coupons)), cli.Thousands(int64(*requests)), *conns, runtime.NumCPU(), runtime.GOMAXPROCS(0))

	began := time.Now()
	if err := seedStats(ctx, a, tpl, *coupons); err != nil {
		return fmt.Errorf("bench stats: %w", err)
	}
	fmt.Fprintf(out, "bench stats: seeded %s coupons in %s (not timed)\n", cli.Thousands(int64(*coupons)), time.Since(began).Round(time.Millisecond))

	token, err := srv.tokens.Mint(quan.Identity{Role: quan.RoleMerchant, ShopNo: tpl.ShopNo}, 24*time.Hour)
	if err != nil {
		return fmt.Errorf("bench stats: %w", err)
	}
	url := fmt.Sprintf("%s/api/v1/templates/%d/stats", srv.http.URL(), tpl.ID)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *conns}}
	defer client.CloseIdleConnections()
	get := func() error {
		req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 500))
			return fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
		}
		var st quan.TemplateStats
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			return fmt.Errorf("GET %s: %w", url, err)
		}
		if st.Issued.Total != int64(*coupons) || st.Available != int64(*coupons) {
			return fmt.Errorf("GET %s: %d issued, %d available; want %d each", url, st.Issued.Total, st.Available, *coupons)
		}
		return nil
	}
	for range 10 { // warm up the connections and the statements
		if err := get(); err != nil {
			return fmt.Errorf("bench stats: %w", err)
		}
	}
	var (
		lat   latencies
		next  atomic.Int64
		wg    sync.WaitGroup
		errs  = make([]error, *conns)
		start = time.Now()
	)
	for i := range *conns {
		wg.Go(func() {
			for next.Add(1) <= int64(*requests) {
				t := time.Now()
				if err := get(); err != nil {
					errs[i] = err
					return
				}
				lat.record(time.Since(t))
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("bench stats: %w", err)
		}
	}
	fmt.Fprintf(out, "bench stats: GET /api/v1/templates/{id}/stats: %s requests in %s: %s req/s, latency p50 %s p99 %s max %s (%d cores)\n",
		cli.Thousands(int64(*requests)), wall.Round(time.Millisecond), cli.Thousands(perSecond(int64(*requests), wall)),
		fmtLatency(lat.quantile(0.50)), fmtLatency(lat.quantile(0.99)), fmtLatency(time.Duration(lat.max.Load())), runtime.NumCPU())
	fmt.Fprintf(out, "bench stats: verified: every answer counted %s coupons issued, all available\n", cli.Thousands(int64(*coupons)))
	return nil
}

// seedStats fills the store with n available coupons of tpl, one per
// user, statsSeedBatch a transaction, and counts them in its statistics.
func seedStats(ctx context.Context, a *app.App, tpl *quan.Template, n int) error {
	raw, err := openBaseline[statsSeeder](ctx, a.Config, 2)
	if err != nil {
		return err
	}
	defer raw.Close()
	now := time.Now().UTC()
	start, end := now.Add(-time.Hour), now.Add(72*time.Hour)
	for first := 0; first < n; first += statsSeedBatch {
		k := min(statsSeedBatch, n-first)
		if err := raw.Seed(ctx, tpl, int64(first)+1, k, 5000, start, func(int) time.Time { return end }, now); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
	}
	if err := raw.CountSeeded(ctx, tpl, int64(n), now); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	return nil
}
