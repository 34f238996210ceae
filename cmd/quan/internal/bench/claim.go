package bench

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"math/bits"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/apikeys"
	"github.com/quanhq/quan/claims"
	"github.com/quanhq/quan/cmd/quan/internal/app"
	"github.com/quanhq/quan/cmd/quan/internal/cli"
	qhttp "github.com/quanhq/quan/http"
	"github.com/quanhq/quan/templates"
)

// claimBench are the flags of `quan bench claim`.
type claimBench struct {
	Config app.Config

	Conns        int
	Requests     int
	Stock        int64
	Users        int
	Duration     time.Duration
	Ceiling      bool
	CeilingRedis string
	CPUProfile   string
	RateLimits   bool
	PersistRate  float64
	// MetricsCompare runs the claims 2×Rounds times, metrics off and on
	// in turn, and prints both side by side.
	MetricsCompare bool
	Rounds         int
	// Eligibility, if set, is the template's eligibility rule; every
	// user of the run is given facts that meet the typical one first
	// (level 2, tagged vip), and WarmFacts reads them into the facts
	// cache before the load.
	Eligibility string
	WarmFacts   bool
	// Auth is the kinds of shoppers' token (claimauth.go), WarmTokens
	// whether they are verified once before the load.
	Auth       string
	WarmTokens bool
	auths      map[string]*benchAuth // by kind, while compareAuth runs
	freshDB
}

func (b *claimBench) register(fs *flag.FlagSet) {
	b.Config.RegisterBackends(fs, app.Local) // --data defaults to a fresh temporary folder, removed after
	fs.IntVar(&b.Conns, "c", 1000, "concurrent keep-alive connections, one request in flight on each")
	fs.IntVar(&b.Requests, "n", 200_000, "claims to send (at most: --duration may stop sooner)")
	fs.Int64Var(&b.Stock, "stock", 0, "stock of the template claimed, one per user (default: -n)")
	fs.IntVar(&b.Users, "users", 0, "distinct users the requests come from, in a shuffled order, so that with fewer users than requests some repeat and get 409 limit_reached (default: 90% of -n)")
	fs.DurationVar(&b.Duration, "duration", 0, "stop sending after this long (default: when -n are sent)")
	fs.BoolVar(&b.Ceiling, "ceiling", false, "in the same run, after the claims, drive a bare HTTP handler making one Redis script call per request with the same load: the ceiling the claims are compared with")
	fs.StringVar(&b.CeilingRedis, "ceiling-redis", "redis://127.0.0.1:6379", "the Redis --ceiling calls; it writes one key, quanbench:ceiling:RANDOM:stock, deleted at the end")
	fs.BoolVar(&b.RateLimits, "rate-limits", true, "serve with the claim rate limits of `quan serve` (false: --claim-rate-user 0 --claim-rate-template 0, to see what they cost)")
	fs.Float64Var(&b.PersistRate, "claim-persist-rate", 0, "serve with this --claim-persist-rate: while claims arrive, write at most this many a second to the store, the rest after (0: as fast as the store goes)")
	fs.BoolVar(&b.MetricsCompare, "metrics-compare", false, "run the claims with metrics off (as quan serve --metrics=false) and on, in turn, --rounds times each, each run on a server of its own, and print both side by side with their ratio")
	fs.IntVar(&b.Rounds, "rounds", 2, "with --metrics-compare: runs with metrics off and on, each (in the order off, on, then on, off, and so on)")
	fs.StringVar(&b.Eligibility, "eligibility", "", "claim a template with this eligibility rule (the typical one: 'user.level >= 2 && \"vip\" in user.tags'); every user of the run is given level 2 and the tag vip beforehand, so the rule lets all through and the claims differ from a run without it only by the rule's cost")
	fs.BoolVar(&b.WarmFacts, "warm-facts", false, "with --eligibility: read every user's facts into the facts cache before the load (default: the first claim of each user reads them from the store, as after a restart)")
	fs.StringVar(&b.CPUProfile, "cpuprofile", "", "write a CPU profile of the claims' load and drain (server and load generator: one process) to this file")
	b.registerAuth(fs)
	b.registerFreshDB(fs, "bench claim", "Without it, the run's template and coupons stay in the database and its cache keys under the prefix (claim records for 24 h), and its claims go on the stream --bus names, where another bench or quan serve on it takes them")
}

func (b *claimBench) validate() error {
	if b.Users == 0 {
		b.Users = max(1, b.Requests-b.Requests/10)
	}
	if b.Stock == 0 {
		b.Stock = int64(b.Requests)
	}
	switch {
	case b.Conns < 1:
		return cli.Usagef("bench claim: -c %d: want at least 1", b.Conns)
	case b.Requests < 1:
		return cli.Usagef("bench claim: -n %d: want at least 1", b.Requests)
	case b.Users < 1:
		return cli.Usagef("bench claim: --users %d: want at least 1", b.Users)
	case b.Stock < 1 || b.Stock > quan.MaxStock:
		return cli.Usagef("bench claim: --stock %d: want 1 to %d", b.Stock, quan.MaxStock)
	case b.Duration < 0:
		return cli.Usagef("bench claim: --duration %s: want a positive duration", b.Duration)
	case b.Rounds < 1:
		return cli.Usagef("bench claim: --rounds %d: want at least 1", b.Rounds)
	case b.MetricsCompare && (b.Ceiling || b.CPUProfile != ""):
		return cli.Usagef("bench claim: --metrics-compare runs the claims several times: run --ceiling and --cpuprofile without it")
	}
	if err := b.validateAuth(); err != nil {
		return err
	}
	return b.checkFreshDB(b.Config)
}

// setup names the backends of the run.
func (b *claimBench) setup() string {
	store, cache, bus := app.Kinds(b.Config)
	if cache == "none" {
		cache = "mem" // claims reserve in the process without a cache
	}
	if bus == "embedded" {
		bus = "embedded nats"
	}
	paced := ""
	if b.PersistRate > 0 {
		paced = fmt.Sprintf(", store writes paced at %s claims/s while claims arrive", cli.Thousands(int64(b.PersistRate)))
	}
	return fmt.Sprintf("store %s%s, cache %s, bus %s%s", store, b.database(), cache, bus, paced)
}

// claim measures the claim API of a real server in this process: accepted
// claims/s and the latency of every request on Conns connections, the
// drain of the accepted claims into the store, and, with --ceiling, a bare
// handler making one Redis call per request under the same load. It fails
// if a claim was lost, the stock oversold or a user served over the limit.
//
// It writes into whatever the backends name: with --fresh-db into a new
// database, redis key prefix, nats stream and namespace of its own
// (freshDB), all dropped when it returns, however it ends.
func (c *Command) claim(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench claim", flag.ContinueOnError)
	var b claimBench
	b.register(fs)
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if err := b.validate(); err != nil {
		return err
	}
	out := c.Stdout
	if !cli.IsSet(fs, "data") {
		dir, err := os.MkdirTemp("", "quan-bench-claim-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		b.Config.DataDir = dir
	}
	// Dropped after the server below is closed: deferred before it.
	drop, err := b.isolate(ctx, c.Stderr, &b.Config)
	if err != nil {
		return err
	}
	defer drop()
	cfg := b.Config
	cfg.Runner.Off = true
	cfg.Claims = app.Claims{Limits: app.DefaultClaimLimits, PersistRate: b.PersistRate}
	if !b.RateLimits {
		cfg.Claims.Limits = claims.Limits{}
	}
	if b.MetricsCompare {
		return c.compareMetrics(ctx, &b, cfg, !cli.IsSet(fs, "data"))
	}
	if len(b.authList()) > 1 {
		return c.compareAuth(ctx, &b, cfg, !cli.IsSet(fs, "data"))
	}
	srv, gen, res, err := c.claimPhase(ctx, &b, cfg)
	if err != nil {
		return err
	}
	defer srv.Close()

	if !b.Ceiling {
		return nil
	}

	// The server is idle now, but it goes, so that the ceiling has the
	// machine to itself as the claims had.
	if err := srv.Close(); err != nil {
		return fmt.Errorf("bench claim: stop the server: %w", err)
	}
	ceil, err := runCeiling(ctx, b.CeilingRedis, ceilingKey(), gen)
	if err != nil {
		return fmt.Errorf("bench claim: ceiling: %w", err)
	}
	fmt.Fprintf(out, "bench claim: ceiling: bare handler, one Redis script call per request (rueidis), same load: %s (%d cores)\n", ceil.summary(), runtime.NumCPU())
	if line := cpuLine(ceil.CPU, ceil.Sent, ceil.Wall, runtime.NumCPU()); line != "" {
		fmt.Fprintf(out, "bench claim: CPU during the ceiling's load: %s\n", line)
	}
	if ceil.Accepted != ceil.Sent {
		return fmt.Errorf("bench claim: ceiling: %s of %s requests failed%s", cli.Thousands(ceil.Sent-ceil.Accepted), cli.Thousands(ceil.Sent), ceil.firstProblem())
	}
	claims, ceiling := perSecondF(res.Accepted, res.Wall), perSecondF(ceil.Sent, ceil.Wall)
	fmt.Fprintf(out, "bench claim: claims/ceiling %.2f× (%s accepted claims/s ÷ %s req/s); requests/ceiling %.2f× (%d cores)\n",
		claims/ceiling, cli.Thousands(int64(claims)), cli.Thousands(int64(ceiling)),
		perSecondF(res.Sent, res.Wall)/ceiling, runtime.NumCPU())
	return nil
}

// claimPhase starts a server on cfg, creates the template and sends b's
// claims at it, waits until the store has decided every claim accepted,
// and checks the invariants, printing the figures. The server it returns
// is open (idle); the caller closes it.
func (c *Command) claimPhase(ctx context.Context, b *claimBench, cfg app.Config) (srv *server, gen *loadGen, res *loadResult, err error) {
	out := c.Stdout
	auth, err := b.authFor(cfg.DataDir)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("bench claim: %w", err)
	}
	srv, err = startServerWith(ctx, c, cfg, auth.trust)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("bench claim: start the server: %w", err)
	}
	// The returns on failure name no server: close the one started.
	started := srv
	defer func() {
		if err != nil {
			started.Close()
		}
	}()
	svc := srv.app.Claims

	tpl, err := srv.app.CreateDemoTemplate(ctx, b.Stock)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("bench claim: %w", err)
	}
	if b.Eligibility != "" {
		if err := c.eligibleUsers(ctx, srv.app, tpl.ID, b); err != nil {
			return nil, nil, nil, fmt.Errorf("bench claim: %w", err)
		}
	}
	if auth.kind == "key" {
		gen, err = keyClaimLoad(ctx, *b, auth, srv.app.Keys)
	} else {
		gen, err = claimLoad(*b, auth, srv.tokens)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	if b.WarmTokens && auth.kind != "key" { // a key is remembered after its first request
		if err := warmTokens(srv.tokens, gen.Auth); err != nil {
			return nil, nil, nil, err
		}
	}
	gen.URL = fmt.Sprintf("%s/api/v1/templates/%d/claim", srv.http.URL(), tpl.ID)
	gen.WarmURL = srv.http.URL() + "/healthz"
	fmt.Fprintf(out, "bench claim: %s; template %d, stock %s, %s users, %s requests on %s connections; client and server share the %d cores (GOMAXPROCS %d); %s%s\n",
		b.setup(), tpl.ID, cli.Thousands(b.Stock), cli.Thousands(int64(len(gen.Auth))), cli.Thousands(int64(len(gen.Order))),
		cli.Thousands(int64(b.Conns)), runtime.NumCPU(), runtime.GOMAXPROCS(0), authWords(b.Auth), warmed(b.WarmTokens))

	runtime.GC()
	if b.CPUProfile != "" {
		f, err := os.Create(b.CPUProfile)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("bench claim: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, nil, nil, fmt.Errorf("bench claim: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	res, err = gen.run(ctx)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("bench claim: %w", err)
	}
	ended := res.Start.Add(res.Wall)
	persistedAtEnd := persisted(svc)
	fmt.Fprintf(out, "bench claim: %s (%d cores)\n", res.summary(), runtime.NumCPU())
	if line := cpuLine(res.CPU, res.Sent, res.Wall, runtime.NumCPU()); line != "" {
		fmt.Fprintf(out, "bench claim: CPU during the load: %s\n", line)
	}
	fmt.Fprintf(out, "bench claim: 202 accepted %s (%s claims/s), 409 sold_out %s, 409 limit_reached %s, other 409 %s, 429 %s, other status %s, no response %s%s\n",
		cli.Thousands(res.Accepted), cli.Thousands(perSecond(res.Accepted, res.Wall)), cli.Thousands(res.SoldOut),
		cli.Thousands(res.Limit), cli.Thousands(res.Conflict), cli.Thousands(res.RateLimited), cli.Thousands(res.Other),
		cli.Thousands(res.Errors), res.firstProblem())

	if err := waitDrained(ctx, svc); err != nil {
		return nil, nil, nil, fmt.Errorf("bench claim: %w", err)
	}
	drained := time.Now()
	pprof.StopCPUProfile()
	issued := persisted(svc)
	fmt.Fprintf(out, "bench claim: drain: %s persisted when the load ended, all %s %s after it began: %s coupons/s written to the store; the last %s in %s after the load, %s/s (%d cores)\n",
		cli.Thousands(persistedAtEnd), cli.Thousands(issued), drained.Sub(res.Start).Round(time.Millisecond),
		cli.Thousands(perSecond(issued, drained.Sub(res.Start))), cli.Thousands(issued-persistedAtEnd),
		drained.Sub(ended).Round(time.Millisecond), cli.Thousands(perSecond(issued-persistedAtEnd, drained.Sub(ended))), runtime.NumCPU())

	audit, err := auditClaims(ctx, srv, tpl, res)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("bench claim: verify: %w", err)
	}
	if err := audit.check(); err != nil {
		fmt.Fprintf(out, "bench claim: verification FAILED: %v\n", err)
		return nil, nil, nil, fmt.Errorf("bench claim: %w", err)
	}
	fmt.Fprintf(out, "bench claim: verified: %s\n", audit)
	return srv, gen, res, nil
}

// compareMetrics runs the claim phase 2×Rounds times on cfg, with
// metrics off and on in turn (off, on, then on, off, …, so that neither
// side always goes first), each on a server of its own (in a folder of
// its own when the bench made the data folder: ownDir), and prints the
// two side by side: the median of each side's accepted claims/s and p99,
// and their ratio.
func (c *Command) compareMetrics(ctx context.Context, b *claimBench, cfg app.Config, ownDir bool) error {
	out := c.Stdout
	var runs [2][]*loadResult // metrics off, on
	n, total := 0, 2*b.Rounds
	for round := range b.Rounds {
		for _, on := range [][2]bool{{false, true}, {true, false}}[round%2] {
			n++
			rc := cfg
			rc.MetricsOff = !on
			if ownDir {
				rc.DataDir = filepath.Join(cfg.DataDir, fmt.Sprintf("run-%d", n))
			}
			fmt.Fprintf(out, "bench claim: run %d of %d: metrics %s\n", n, total, onOff(on))
			srv, _, res, err := c.claimPhase(ctx, b, rc)
			if err != nil {
				return err
			}
			timed, err := claimsTimed(srv.app)
			if err != nil {
				srv.Close()
				return fmt.Errorf("bench claim: %w", err)
			}
			fmt.Fprintf(out, "bench claim: run %d of %d: metrics %s, %s\n", n, total, onOff(on), timed)
			if err := srv.Close(); err != nil {
				return fmt.Errorf("bench claim: stop the server: %w", err)
			}
			side := 0
			if on {
				side = 1
			}
			runs[side] = append(runs[side], res)
		}
	}
	off, on := summarizeRuns(runs[0]), summarizeRuns(runs[1])
	fmt.Fprintf(out, "bench claim: metrics off: %s | metrics on: %s\n", off, on)
	fmt.Fprintf(out, "bench claim: metrics on/off %.3f× requests/s (metrics cost %.1f%%), %.3f× accepted claims/s, p99 %s on, %s off (medians of %d runs each, %d cores)\n",
		on.reqs/off.reqs, 100*(1-on.reqs/off.reqs), on.claims/off.claims, fmtLatency(on.p99), fmtLatency(off.p99), b.Rounds, runtime.NumCPU())
	return nil
}

// claimsTimed says what a's metrics counted of the run: how many claims
// quan_claim_duration_seconds timed, or that there are no metrics.
func claimsTimed(a *app.App) (string, error) {
	if a.Metrics == nil {
		return "no registry", nil
	}
	mfs, err := a.Metrics.Gather()
	if err != nil {
		return "", fmt.Errorf("gather the metrics: %w", err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "quan_claim_duration_seconds" && len(mf.GetMetric()) == 1 {
			return fmt.Sprintf("quan_claim_duration_seconds timed %s claims", cli.Thousands(int64(mf.GetMetric()[0].GetHistogram().GetSampleCount()))), nil
		}
	}
	return "", errors.New("the registry has no quan_claim_duration_seconds")
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// runsSummary is one side of a comparison: the medians of its runs.
type runsSummary struct {
	reqs   float64 // requests/s: every one takes the claim path, accepted or refused
	claims float64 // accepted claims/s
	p99    time.Duration
	each   []float64 // requests/s of each run
}

func summarizeRuns(rs []*loadResult) runsSummary {
	var (
		s      runsSummary
		claims []float64
		p99s   []float64
	)
	for _, r := range rs {
		s.each = append(s.each, perSecondF(r.Sent, r.Wall))
		claims = append(claims, perSecondF(r.Accepted, r.Wall))
		p99s = append(p99s, float64(r.Lat.quantile(0.99)))
	}
	s.reqs, s.claims, s.p99 = median(s.each), median(claims), time.Duration(median(p99s))
	return s
}

func (s runsSummary) String() string {
	each := make([]string, len(s.each))
	for i, v := range s.each {
		each[i] = cli.Thousands(int64(v))
	}
	return fmt.Sprintf("%s req/s, %s accepted claims/s, p99 %s (runs: %s req/s)",
		cli.Thousands(int64(s.reqs)), cli.Thousands(int64(s.claims)), fmtLatency(s.p99), strings.Join(each, ", "))
}

// median returns the median of vs (sorting a copy).
func median(vs []float64) float64 {
	vs = slices.Sorted(slices.Values(vs))
	if len(vs)%2 == 1 {
		return vs[len(vs)/2]
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
}

// claimLoad makes a token for each of b.Users users (as many as the
// requests can name) of the run's kind (benchAuth.mintAll; none for a
// key, which keyClaimLoad sets), and orders the
// requests: request k comes from user k mod Users, shuffled, so that
// repeats are spread over the run.
func claimLoad(b claimBench, a *benchAuth, tokens *qhttp.Tokens) (*loadGen, error) {
	users := min(b.Users, b.Requests)
	toks := make([]string, users)
	if a.kind != "key" {
		var err error
		if toks, err = a.mintAll(tokens, users); err != nil {
			return nil, err
		}
	}
	auth := make([][]string, users)
	for i, tok := range toks {
		auth[i] = []string{"Bearer " + tok}
	}
	order := make([]int32, b.Requests)
	for k := range order {
		order[k] = int32(k % users)
	}
	r := mrand.New(mrand.NewPCG(5, 5))
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	return &loadGen{Method: http.MethodPost, Auth: auth, Order: order, Conns: b.Conns, Duration: b.Duration}, nil
}

// keyClaimLoad is claimLoad for --auth key: one platform service key of
// scope claims, made on the run's store, sent by every request, each
// naming its user in the body, as a platform's server claims for its
// users.
func keyClaimLoad(ctx context.Context, b claimBench, a *benchAuth, keys *apikeys.Service) (*loadGen, error) {
	_, key, err := keys.Create(ctx, quan.Identity{Subject: "bench", Role: quan.RoleAdmin},
		apikeys.NewKey{Name: "bench claim", Scopes: []quan.KeyScope{quan.ScopeClaims}})
	if err != nil {
		return nil, fmt.Errorf("bench claim: make a service key: %w", err)
	}
	gen, err := claimLoad(b, a, nil)
	if err != nil {
		return nil, err
	}
	gen.Bodies = make([][]byte, len(gen.Auth))
	for i := range gen.Auth {
		gen.Auth[i] = []string{"Bearer " + key}
		gen.Bodies[i] = fmt.Appendf(nil, `{"userId":%d}`, i+1)
	}
	return gen, nil
}

// persisted is how many accepted claims the store has decided.
func persisted(svc *claims.Service) int64 {
	return svc.Counters.Issued.Load() + svc.Counters.Failed.Load()
}

// waitDrained waits until the store has decided every claim the server
// accepted. It gives up if none is decided for a minute.
func waitDrained(ctx context.Context, svc *claims.Service) error {
	last, since := persisted(svc), time.Now()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		n := persisted(svc)
		if n >= svc.Counters.Accepted.Load() {
			return nil
		}
		if n != last {
			last, since = n, time.Now()
		}
		if time.Since(since) > time.Minute {
			return fmt.Errorf("drain stalled: %s of %s accepted claims persisted, none for a minute", cli.Thousands(n), cli.Thousands(svc.Counters.Accepted.Load()))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// claimAudit is what the run's invariants are checked on, once every
// accepted claim is persisted.
type claimAudit struct {
	Stock          int64 // the template's initial stock
	Accepted       int64 // claims the server accepted
	ClientAccepted int64 // 202s the load generator read
	ClientErrors   int64 // requests without a response
	Coupons        quan.CouponStats
	CacheStock     int64
	StoreStock     int64
}

func auditClaims(ctx context.Context, srv *server, tpl *quan.Template, res *loadResult) (claimAudit, error) {
	svc := srv.app.Claims
	a := claimAudit{Stock: tpl.Stock, Accepted: svc.Counters.Accepted.Load(), ClientAccepted: res.Accepted, ClientErrors: res.Errors}
	var err error
	if a.Coupons, err = svc.Coupons.CouponStats(ctx, tpl.ID, 0); err != nil {
		return a, err
	}
	st, err := svc.Cache.State(ctx, tpl.ID)
	if err != nil {
		return a, fmt.Errorf("the cache's state: %w", err)
	}
	t, err := srv.app.Templates.Get(ctx, app.CLI, tpl.ID)
	if err != nil {
		return a, err
	}
	a.CacheStock, a.StoreStock = st.Stock, t.Stock
	return a, nil
}

// check returns what breaks the invariants: a claim accepted but not
// issued (or issued twice), stock oversold, a user over the limit of one,
// the cache's stock apart from the store's.
func (a claimAudit) check() error {
	var errs []error
	if a.Coupons.Coupons != a.Accepted {
		errs = append(errs, fmt.Errorf("%s coupons issued for %s accepted claims", cli.Thousands(a.Coupons.Coupons), cli.Thousands(a.Accepted)))
	}
	// A request without a response may have been accepted all the same.
	if a.ClientErrors == 0 && a.ClientAccepted != a.Accepted {
		errs = append(errs, fmt.Errorf("the client read %s 202s, the server accepted %s claims", cli.Thousands(a.ClientAccepted), cli.Thousands(a.Accepted)))
	}
	if a.Coupons.Coupons > a.Stock {
		errs = append(errs, fmt.Errorf("oversold: %s coupons issued of a stock of %s", cli.Thousands(a.Coupons.Coupons), cli.Thousands(a.Stock)))
	}
	if a.Coupons.MaxPerUser > 1 {
		errs = append(errs, fmt.Errorf("over the limit: a user holds %d coupons, one is the limit", a.Coupons.MaxPerUser))
	}
	if a.CacheStock != a.StoreStock {
		errs = append(errs, fmt.Errorf("the cache's stock %s is not the store's %s", cli.Thousands(a.CacheStock), cli.Thousands(a.StoreStock)))
	}
	if a.StoreStock != a.Stock-a.Coupons.Coupons {
		errs = append(errs, fmt.Errorf("the store's stock %s is not %s less %s issued", cli.Thousands(a.StoreStock), cli.Thousands(a.Stock), cli.Thousands(a.Coupons.Coupons)))
	}
	return errors.Join(errs...)
}

func (a claimAudit) String() string {
	return fmt.Sprintf("%s coupons issued == %s accepted claims (no claim lost), ≤ stock %s (no oversell), at most %d per user (no over-limit), cache stock %s == store stock %s",
		cli.Thousands(a.Coupons.Coupons), cli.Thousands(a.Accepted), cli.Thousands(a.Stock), a.Coupons.MaxPerUser,
		cli.Thousands(a.CacheStock), cli.Thousands(a.StoreStock))
}

// ceilingKey returns a key of the run's own for runCeiling, outside any
// prefix quan's cache uses.
func ceilingKey() string {
	var b [6]byte
	rand.Read(b[:])
	return "quanbench:ceiling:" + hex.EncodeToString(b[:]) + ":stock"
}

// runCeiling drives gen's load at a bare handler that makes one Redis
// script call per request (a DECR of key): the most one process on this
// machine serves of requests that each need a Redis round trip, which a
// claim does once. It talks to Redis with rueidis directly, not through
// quan's cache, which is what it measures the claims against. key is the
// only one it writes; it deletes it when done, and reports an error if
// it cannot. Should the process die first, key expires an hour after
// the run's --duration.
func runCeiling(ctx context.Context, redisURL, key string, gen *loadGen) (_ *loadResult, err error) {
	opt, err := rueidis.ParseURL(redisURL)
	if err != nil {
		return nil, fmt.Errorf("--ceiling-redis: %w", err)
	}
	opt.DisableCache = true
	client, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, fmt.Errorf("--ceiling-redis %s: %w", app.Redact(redisURL), err)
	}
	defer client.Close()
	ttl := int64((time.Hour + gen.Duration).Seconds())
	if err := client.Do(ctx, client.B().Set().Key(key).Value(fmt.Sprint(len(gen.Order))).ExSeconds(ttl).Build()).Error(); err != nil {
		return nil, err
	}
	defer func() {
		if derr := client.Do(context.WithoutCancel(ctx), client.B().Del().Key(key).Build()).Error(); derr != nil {
			err = cmp.Or(err, fmt.Errorf("delete %s: %w", key, derr))
		}
	}()
	script := rueidis.NewLuaScript(`return redis.call('DECR', KEYS[1])`)
	keys := []string{key}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet { // the load generator's warm-up
			return
		}
		left, err := script.Exec(r.Context(), client, keys, nil).AsInt64()
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintf(w, "{\"left\":%d}\n", left)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	g := *gen
	g.URL = "http://" + ln.Addr().String() + "/claim"
	g.WarmURL = g.URL
	return g.run(ctx)
}

// loadGen sends Order's requests at URL on Conns keep-alive connections,
// each with one request in flight, as fast as they are answered. Each
// connection has a goroutine of its own, with its own request and
// response buffers (loadConn), so that the load allocates nothing and
// takes as little as it can of the CPU it shares with the server.
type loadGen struct {
	URL      string
	WarmURL  string // fetched once on each connection before the clock starts
	Method   string
	Auth     [][]string // the Authorization header of each user
	Bodies   [][]byte   // the JSON body of each user's request; nil: none
	Order    []int32    // the user of each request
	Conns    int
	Duration time.Duration // stop after this long; 0: when Order is sent
	Timeout  time.Duration // how long a response may take; 0: a minute
}

// loadResult is what one run of a loadGen counted and timed.
type loadResult struct {
	Start       time.Time
	Wall        time.Duration
	Sent        int64
	Accepted    int64 // 202
	SoldOut     int64 // 409 sold_out
	Limit       int64 // 409 limit_reached
	Conflict    int64 // other 409s
	RateLimited int64 // 429
	Other       int64 // any other status
	Errors      int64 // no response
	Problem     string
	Lat         latencies
	CPU         []procUse // what this process and the servers beside it used (sampleCPU)
}

func (g *loadGen) run(ctx context.Context) (*loadResult, error) {
	target, err := newLoadTarget(g.Method, g.URL, g.WarmURL, g.Timeout)
	if err != nil {
		return nil, err
	}
	if err := checkAuth(g.Auth); err != nil {
		return nil, err
	}
	res := &loadResult{}
	var (
		next  atomic.Int64
		ready sync.WaitGroup
		done  sync.WaitGroup
		mu    sync.Mutex
		werr  error
	)
	start := make(chan struct{})
	var deadline time.Time
	for range g.Conns {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			w := loadWorker{g: g, t: target, c: newLoadConn(target), res: res}
			defer w.c.drop()
			// When ctx ends, the connection closes, so that a read
			// blocked on it returns.
			defer context.AfterFunc(ctx, w.c.abort)()
			// Every connection is open and answered once before the
			// clock starts.
			err := w.c.warm(ctx)
			ready.Done()
			<-start
			if err != nil {
				mu.Lock()
				werr = cmp.Or(werr, err)
				mu.Unlock()
				return
			}
			w.loop(ctx, &next, deadline)
			mu.Lock()
			w.merge()
			mu.Unlock()
		}()
	}
	ready.Wait()
	cpu := sampleCPU()
	res.Start = time.Now()
	if g.Duration > 0 {
		deadline = res.Start.Add(g.Duration)
	}
	close(start)
	done.Wait()
	res.Wall = time.Since(res.Start)
	res.CPU = sampleCPU().since(cpu)
	if werr != nil {
		return nil, fmt.Errorf("warm up the connections: %w", werr)
	}
	return res, ctx.Err()
}

// loadWorker is one connection's goroutine, counting on its own.
type loadWorker struct {
	g   *loadGen
	t   *loadTarget
	c   *loadConn
	res *loadResult
	req []byte // the request being sent, rebuilt in place for each

	sent, accepted, soldOut, limit, conflict, rateLimited, other, errors int64
	problem                                                              string
}

func (w *loadWorker) loop(ctx context.Context, next *atomic.Int64, deadline time.Time) {
	for {
		k := next.Add(1) - 1
		if k >= int64(len(w.g.Order)) {
			return
		}
		t := time.Now()
		if !deadline.IsZero() && t.After(deadline) {
			return
		}
		w.sent++
		var body []byte
		if w.g.Bodies != nil {
			body = w.g.Bodies[w.g.Order[k]]
		}
		w.req = w.t.appendRequest(w.req[:0], w.g.Auth[w.g.Order[k]], body)
		resp, err := w.c.roundTrip(ctx, w.req, t)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			w.errors++
			if w.problem == "" {
				w.note(fmt.Sprintf("%s: %v", w.t.what, err))
			}
			continue
		}
		w.res.Lat.record(time.Since(t))
		switch {
		case resp.Code == http.StatusAccepted:
			w.accepted++
		case resp.Code == http.StatusTooManyRequests:
			w.rateLimited++
			w.noteResponse(resp)
		case resp.Code != http.StatusConflict:
			w.other++
			w.noteResponse(resp)
		case bytes.Contains(resp.Body, soldOutCode):
			w.soldOut++
		case bytes.Contains(resp.Body, limitCode):
			w.limit++
		default:
			w.conflict++
			w.noteResponse(resp)
		}
	}
}

// noteResponse notes resp as the problem, if it is the first; it formats
// it only then, so that the many refusals of a run cost no allocation.
func (w *loadWorker) noteResponse(resp loadResponse) {
	if w.problem == "" {
		w.note(fmt.Sprintf("%s: %s", resp.Status, resp.Body))
	}
}

// note keeps the first problem seen, to print.
func (w *loadWorker) note(s string) {
	if w.problem == "" {
		w.problem = strings.TrimSpace(s)
	}
}

// merge adds the worker's counts to the result; the caller holds its lock.
func (w *loadWorker) merge() {
	r := w.res
	r.Sent += w.sent
	r.Accepted += w.accepted
	r.SoldOut += w.soldOut
	r.Limit += w.limit
	r.Conflict += w.conflict
	r.RateLimited += w.rateLimited
	r.Other += w.other
	r.Errors += w.errors
	r.Problem = cmp.Or(r.Problem, w.problem)
}

// The refusal codes a 409's problem document names.
var (
	soldOutCode = []byte(`"` + quan.ESOLDOUT + `"`)
	limitCode   = []byte(`"` + quan.ELIMIT + `"`)
)

func (r *loadResult) summary() string {
	return fmt.Sprintf("%s requests in %s: %s req/s, latency p50 %s p99 %s max %s",
		cli.Thousands(r.Sent), r.Wall.Round(time.Millisecond), cli.Thousands(perSecond(r.Sent, r.Wall)),
		fmtLatency(r.Lat.quantile(0.50)), fmtLatency(r.Lat.quantile(0.99)), fmtLatency(time.Duration(r.Lat.max.Load())))
}

func (r *loadResult) firstProblem() string {
	if r.Problem == "" {
		return ""
	}
	return fmt.Sprintf(" (first: %.200s)", r.Problem)
}

func perSecondF(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

func perSecond(n int64, d time.Duration) int64 { return int64(perSecondF(n, d)) }

func fmtLatency(d time.Duration) string {
	switch {
	case d >= 10*time.Millisecond:
		return d.Round(time.Millisecond).String()
	case d >= 10*time.Microsecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.String()
}

// latencies is a histogram of durations, safe for concurrent use, to
// within 1/latSub (3%): latSub buckets for each power of two of
// nanoseconds.
type latencies struct {
	counts [latBuckets]atomic.Int64
	max    atomic.Int64
}

const (
	latSub     = 32
	latBuckets = 64 * latSub
)

func latBucket(ns int64) int {
	if ns < 2*latSub {
		return int(max(ns, 0))
	}
	shift := bits.Len64(uint64(ns)) - 6 // ns>>shift is in [latSub, 2*latSub)
	return shift*latSub + int(ns>>shift)
}

// latValue is the middle of bucket i.
func latValue(i int) time.Duration {
	if i < 2*latSub {
		return time.Duration(i)
	}
	shift := i/latSub - 1
	return time.Duration(int64(i-shift*latSub)<<shift + int64(1)<<shift/2)
}

func (l *latencies) record(d time.Duration) {
	ns := int64(d)
	l.counts[latBucket(ns)].Add(1)
	for {
		m := l.max.Load()
		if ns <= m || l.max.CompareAndSwap(m, ns) {
			return
		}
	}
}

// quantile returns the duration q of the recorded ones are at most; in
// the highest bucket, the max.
func (l *latencies) quantile(q float64) time.Duration {
	var total int64
	for i := range l.counts {
		total += l.counts[i].Load()
	}
	if total == 0 {
		return 0
	}
	want := max(1, int64(q*float64(total)+0.5))
	var seen int64
	for i := range l.counts {
		if seen += l.counts[i].Load(); seen >= want {
			if seen == total {
				break
			}
			return min(latValue(i), time.Duration(l.max.Load()))
		}
	}
	return time.Duration(l.max.Load())
}

// server is quan serving the claim API in this process, as `quan serve
// --runner=false` would, on 127.0.0.1 and a free port.
type server struct {
	app    *app.App
	http   *qhttp.Server
	tokens *qhttp.Tokens
}

// startServer opens quan on cfg as a Server and serves its API.
func startServer(ctx context.Context, c *Command, cfg app.Config) (*server, error) {
	return startServerWith(ctx, c, cfg, nil)
}

// startServerWith is startServer; trust, if set, is given the server's
// tokens before it serves (benchAuth.trust).
func startServerWith(ctx context.Context, c *Command, cfg app.Config, trust func(context.Context, *qhttp.Tokens) error) (*server, error) {
	a, err := c.openApp(ctx, cfg, app.Server)
	if err != nil {
		return nil, err
	}
	s := &server{app: a}
	secret, err := app.LoadSecret(a.Config.DataDir, "")
	if err == nil {
		s.tokens, err = qhttp.NewTokens(secret, c.Now)
	}
	if err == nil && trust != nil {
		err = trust(ctx, s.tokens)
	}
	if err == nil {
		err = a.Start()
	}
	if err == nil {
		s.http, err = a.HTTPServer(s.tokens)
		if err == nil {
			if err = s.http.Open("127.0.0.1:0"); err != nil {
				s.http = nil
			}
		}
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close drains the server's requests, stops its loops and closes its
// backends. It is safe to call twice.
func (s *server) Close() error {
	var err error
	if s.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err = s.http.Close(ctx)
		s.http = nil
	}
	s.app.Close()
	return err
}

// eligibleUsers gives template b.Eligibility as its rules' version 1, in
// force at once, and every user of the run (1 … Users) the facts of a
// member of level 2 tagged vip, in the store; with WarmFacts they are
// read into the facts cache too.
func (c *Command) eligibleUsers(ctx context.Context, a *app.App, template int64, b *claimBench) error {
	start := time.Now()
	users := min(b.Users, b.Requests)
	const batch = 5000
	facts := make([]quan.UserFacts, 0, batch)
	for u := 1; u <= users; u++ {
		facts = append(facts, quan.UserFacts{UserID: int64(u), Level: 2, Tags: []string{"member", "vip"}, Region: "上海", Orders: 3})
		if len(facts) == batch || u == users {
			if err := a.Backends.Store.PutUserFacts(ctx, time.Now(), facts); err != nil {
				return fmt.Errorf("give users facts: %w", err)
			}
			facts = facts[:0]
		}
	}
	if _, err := a.Templates.ChangeRules(ctx, app.CLI, template, templates.RulesChange{Eligibility: &b.Eligibility}); err != nil {
		return fmt.Errorf("the eligibility rule: %w", err)
	}
	if b.WarmFacts {
		for u := 1; u <= users; u++ {
			if _, err := a.Facts.Facts(ctx, int64(u)); err != nil {
				return fmt.Errorf("warm the facts cache: %w", err)
			}
		}
	}
	warm := "cold"
	if b.WarmFacts {
		warm = "read into the facts cache"
	}
	fmt.Fprintf(c.Stdout, "bench claim: eligibility rule %q on template %d; %s users given facts (level 2, tagged vip) in %s, %s\n",
		b.Eligibility, template, cli.Thousands(int64(users)), time.Since(start).Round(time.Millisecond), warm)
	return nil
}
