package bench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/cmd/quan/internal/app"
	"github.com/quanhq/quan/cmd/quan/internal/cli"
	"github.com/quanhq/quan/templates"
)

// shopper measures the shopper's two reads over HTTP, quan serving in
// this process on the backends the flags name:
//
//   - the wallet with display: GET /api/v1/me/coupons?limit=100 of a
//     user holding --coupons coupons, each of a template of its own (the
//     most displays a page can need), seeded by bare INSERTs (not timed);
//   - the claim centre: GET /api/v1/me/claimable?limit=20 at a random
//     cursor over --templates active templates, one in ten with an
//     eligibility rule the user does not meet.
//
// Each answer is checked (every wallet item carries its display; the
// centre holds none of the ruled templates). It prints p50, p99 and the
// slowest of each.
func (c *Command) shopper(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench shopper", flag.ContinueOnError)
	var cfg app.Config
	cfg.RegisterBackends(fs, app.Local)
	coupons := fs.Int("coupons", 200, "coupons the wallet's user holds, each of its own template")
	tpls := fs.Int("templates", 10_000, "active templates of the claim centre (in all, the wallet's included)")
	requests := fs.Int("requests", 2000, "requests timed of each route")
	conns := fs.Int("c", 2, "connections the requests go on at once")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the timed requests to this file")
	var fresh freshDB
	fresh.registerFreshDB(fs, "bench shopper", "Without it, give an empty database.")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	switch {
	case *coupons < 1 || *coupons > 10_000:
		return cli.Usagef("bench shopper: --coupons %d: want 1 to 10000", *coupons)
	case *tpls < *coupons:
		return cli.Usagef("bench shopper: --templates %d: want at least --coupons (%d)", *tpls, *coupons)
	case *requests < 1 || *conns < 1:
		return cli.Usagef("bench shopper: --requests and -c: want at least 1")
	}
	if err := fresh.checkFreshDB(cfg); err != nil {
		return err
	}
	if !cli.IsSet(fs, "data") {
		dir, err := os.MkdirTemp("", "quan-bench-shopper-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		cfg.DataDir = dir
	}
	cfg.Runner.Off = true
	drop, err := fresh.isolate(ctx, c.Stderr, &cfg)
	if err != nil {
		return err
	}
	defer drop()
	srv, err := startServer(ctx, c, cfg)
	if err != nil {
		return fmt.Errorf("bench shopper: %w", err)
	}
	defer srv.Close()
	a := srv.app
	store, _, _ := app.Kinds(a.Config)
	out := c.Stdout
	fmt.Fprintf(out, "bench shopper: store %s%s, %s active templates (1 in 10 with an eligibility rule), a wallet of %d coupons; %s requests a route on %d connections; %d cores (GOMAXPROCS %d)\n",
		store, fresh.database(), cli.Thousands(int64(*tpls)), *coupons, cli.Thousands(int64(*requests)), *conns, runtime.NumCPU(), runtime.GOMAXPROCS(0))

	began := time.Now()
	ids, ruled, err := createShopperTemplates(ctx, a, *tpls)
	if err != nil {
		return fmt.Errorf("bench shopper: %w", err)
	}
	const user = 1
	if err := seedWallet(ctx, a, ids[:*coupons], user); err != nil {
		return fmt.Errorf("bench shopper: %w", err)
	}
	fmt.Fprintf(out, "bench shopper: created the templates and the wallet in %s (not timed)\n", time.Since(began).Round(time.Millisecond))

	token, err := srv.tokens.Mint(quan.Identity{Role: quan.RoleUser, UserID: user}, 24*time.Hour)
	if err != nil {
		return fmt.Errorf("bench shopper: %w", err)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *conns}}
	defer client.CloseIdleConnections()
	get := func(path string, v any) error {
		req, err := http.NewRequestWithContext(ctx, "GET", srv.http.URL()+path, nil)
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
			return fmt.Errorf("GET %s: %s: %s", path, resp.Status, body)
		}
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			return fmt.Errorf("GET %s: %w", path, err)
		}
		return nil
	}
	wallet := func(*rand.Rand) error {
		var page struct {
			Items []struct {
				TemplateID int64
				Template   *quan.TemplateDisplay
			}
			Total int
		}
		if err := get("/api/v1/me/coupons?limit=100", &page); err != nil {
			return err
		}
		if page.Total != *coupons || len(page.Items) != min(*coupons, 100) {
			return fmt.Errorf("wallet: %d items of %d, want %d of %d", len(page.Items), page.Total, min(*coupons, 100), *coupons)
		}
		for _, it := range page.Items {
			if it.Template == nil || it.Template.ID != it.TemplateID || it.Template.RuleText.ZH == "" || it.Template.Category == "" {
				return fmt.Errorf("wallet: a coupon of template %d without its display: %+v", it.TemplateID, it.Template)
			}
		}
		return nil
	}
	highest := ids[len(ids)-1]
	centre := func(rng *rand.Rand) error {
		var page struct {
			Items []struct{ ID int64 }
		}
		cursor := 1 + rng.Int64N(highest)
		if err := get(fmt.Sprintf("/api/v1/me/claimable?limit=20&cursor=%d", cursor), &page); err != nil {
			return err
		}
		for _, it := range page.Items {
			if ruled[it.ID] {
				return fmt.Errorf("claim centre: template %d, whose rule the user does not meet, listed", it.ID)
			}
		}
		if len(page.Items) == 0 && cursor > ids[0]+20 {
			return fmt.Errorf("claim centre: an empty page at cursor %d", cursor)
		}
		return nil
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return fmt.Errorf("bench shopper: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("bench shopper: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	for _, r := range []struct {
		name string
		do   func(*rand.Rand) error
	}{{"GET /api/v1/me/coupons?limit=100 (wallet with display)", wallet}, {"GET /api/v1/me/claimable?limit=20&cursor=RANDOM (claim centre)", centre}} {
		before := sampleCPU()
		lat, wall, err := timeRequests(r.do, *requests, *conns)
		if err != nil {
			return fmt.Errorf("bench shopper: %w", err)
		}
		used := sampleCPU().since(before)
		fmt.Fprintf(out, "bench shopper: %s: %s requests in %s: %s req/s, latency p50 %s p99 %s max %s (%d cores)\n",
			r.name, cli.Thousands(int64(*requests)), wall.Round(time.Millisecond), cli.Thousands(perSecond(int64(*requests), wall)),
			fmtLatency(lat.quantile(0.50)), fmtLatency(lat.quantile(0.99)), fmtLatency(time.Duration(lat.max.Load())), runtime.NumCPU())
		if line := cpuLine(used, int64(*requests), wall, runtime.NumCPU()); line != "" {
			fmt.Fprintf(out, "bench shopper:   CPU (client and server in this process): %s\n", line)
		}
	}
	fmt.Fprintf(out, "bench shopper: verified: every wallet item carried its display; no claim centre page listed a template whose rule the user fails\n")
	return nil
}

// timeRequests runs do n times on conns goroutines after 10 untimed
// warm-up calls, and returns their latencies and the wall time.
func timeRequests(do func(*rand.Rand) error, n, conns int) (*latencies, time.Duration, error) {
	warm := rand.New(rand.NewPCG(1, 1))
	for range 10 {
		if err := do(warm); err != nil {
			return nil, 0, err
		}
	}
	var (
		lat   latencies
		next  atomic.Int64
		wg    sync.WaitGroup
		errs  = make([]error, conns)
		start = time.Now()
	)
	for i := range conns {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 2))
			for next.Add(1) <= int64(n) {
				t := time.Now()
				if err := do(rng); err != nil {
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
			return nil, 0, err
		}
	}
	return &lat, wall, nil
}

// createShopperTemplates creates n active templates through the
// templates' service, of 10 shops and 5 categories, every tenth with the
// eligibility rule user.level >= 2 (which user 1, with no facts, fails).
// It returns their ids in order and the set of those with the rule.
func createShopperTemplates(ctx context.Context, a *app.App, n int) ([]int64, map[int64]bool, error) {
	now := time.Now()
	ids := make([]int64, 0, n)
	ruled := map[int64]bool{}
	cats := []string{"饮品", "餐饮", "服饰", "数码", "美妆"}
	for i := range n {
		spec := quan.TemplateSpec{
			Name:         fmt.Sprintf("满100减10 #%d", i),
			Kind:         quan.KindThreshold,
			Rule:         quan.Rule{Amount: 1000, Threshold: 10000},
			Source:       quan.SourceShop,
			Scope:        quan.Scope{Kind: quan.ScopeAll},
			IssueStart:   now.Add(-time.Hour),
			IssueEnd:     now.Add(30 * 24 * time.Hour),
			Validity:     quan.Validity{Kind: quan.ValidRelative, Hours: 72},
			PerUserLimit: 2,
			LogoURL:      "https://cdn.example.com/logo.png",
			Category:     cats[i%len(cats)],
			Goods:        []string{"tea", "coffee"},
			Instructions: "到店出示券码即可使用，不与其他优惠同享",
		}
		if i%10 == 9 {
			spec.Eligibility = "user.level >= 2"
		}
		tpl, err := a.Templates.Create(ctx, app.CLI, templates.NewTemplate{ShopNo: 1 + int64(i%10), Stock: 1000, TemplateSpec: spec})
		if err != nil {
			return nil, nil, fmt.Errorf("create template %d: %w", i, err)
		}
		if _, err := a.Templates.Activate(ctx, app.CLI, tpl.ID); err != nil {
			return nil, nil, fmt.Errorf("activate template %d: %w", tpl.ID, err)
		}
		ids = append(ids, tpl.ID)
		if spec.Eligibility != "" {
			ruled[tpl.ID] = true
		}
	}
	return ids, ruled, nil
}

// seedWallet gives user one coupon of each template, by the bare
// INSERTs of the wallet benchmarks' seed.
func seedWallet(ctx context.Context, a *app.App, ids []int64, user int64) error {
	raw, err := openBaseline[statsSeeder](ctx, a.Config, 2)
	if err != nil {
		return err
	}
	defer raw.Close()
	now := time.Now().UTC()
	start, end := now.Add(-time.Hour), now.Add(72*time.Hour)
	for _, id := range ids {
		tpl, err := a.Templates.Get(ctx, app.CLI, id)
		if err != nil {
			return err
		}
		if err := raw.Seed(ctx, tpl, user, 1, 1, start, func(int) time.Time { return end }, now); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
	}
	return nil
}
