package bench

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/cmd/quan/internal/app"
	"github.com/quanhq/quan/cmd/quan/internal/cli"
	"github.com/quanhq/quan/wallet"
)

// walletBench are the flags of `quan bench wallet lock` and `quan bench
// wallet sweep`.
type walletBench struct {
	Config     app.Config
	FreshDB    bool
	Conns      int
	N          int
	RawConns   int
	Batch      int
	Sweepers   int
	WithBus    bool
	CPUProfile string
	Channels   string // remind: the template's remindChannels
}

// storeConns is the connection pool of the mysql store (mysql's
// maxOpenConns), which the raw loop gets too unless told otherwise, so that
// both queue the same goroutines on the same number of connections.
const storeConns = 16

func (b *walletBench) register(fs *flag.FlagSet, verb string) {
	// --data defaults to a fresh temporary folder, removed after; the
	// cache and the bus are not used.
	b.Config.RegisterBackends(fs, app.Local)
	fs.BoolVar(&b.FreshDB, "fresh-db", false, "with a mysql:// store: run in a new database quan_bench_RANDOM on the server --store names (its own database only serves to connect), dropped at the end")
	fs.StringVar(&b.CPUProfile, "cpuprofile", "", "write a CPU profile to this file: of the service's orders (lock), of the sweep without a bus (sweep)")
	switch verb {
	case "lock":
		fs.IntVar(&b.N, "n", 50_000, "orders, each by a user of its own holding one coupon")
		fs.IntVar(&b.Conns, "c", 64, "goroutines taking orders, for the service and the raw loop alike")
		fs.IntVar(&b.RawConns, "raw-conns", storeConns, "database connections of the raw loop with a mysql store (default: the store's pool); SQLite has one writer")
	case "sweep":
		fs.IntVar(&b.N, "n", 1_000_000, "available coupons whose window has closed")
		fs.IntVar(&b.Batch, "batch", 10_000, "coupons per LapseCoupons call (default: the batch `quan serve` sweeps in)")
		fs.IntVar(&b.Sweepers, "sweepers", 1, "sweeps running at once, as several `quan serve` on one database")
		fs.BoolVar(&b.WithBus, "with-bus", true, "after the sweep without a bus, seed -n coupons more and sweep them with an embedded NATS bus taking the events")
	case "remind":
		fs.IntVar(&b.N, "n", 1_000_000, "available coupons ending within the next day")
		fs.IntVar(&b.Batch, "batch", 10_000, "coupons per RemindExpiring call (default: the batch `quan serve` sweeps in)")
		fs.IntVar(&b.Sweepers, "sweepers", 1, "sweeps running at once, as several `quan serve` on one database")
		fs.StringVar(&b.Channels, "channels", "inbox,popup", "the template's remindChannels: a notification per coupon and channel")
	}
}

func (b *walletBench) validate(verb string) error {
	switch {
	case b.N < 1:
		return cli.Usagef("bench wallet %s: -n %d: want at least 1", verb, b.N)
	case verb == "lock" && b.Conns < 1:
		return cli.Usagef("bench wallet lock: -c %d: want at least 1", b.Conns)
	case verb == "lock" && b.RawConns < 1:
		return cli.Usagef("bench wallet lock: --raw-conns %d: want at least 1", b.RawConns)
	case verb != "lock" && b.Batch < 1:
		return cli.Usagef("bench wallet %s: --batch %d: want at least 1", verb, b.Batch)
	case verb != "lock" && b.Sweepers < 1:
		return cli.Usagef("bench wallet %s: --sweepers %d: want at least 1", verb, b.Sweepers)
	}
	return nil
}

// wallet dispatches "bench wallet lock", "bench wallet sweep" and "bench
// wallet remind".
func (c *Command) wallet(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return &cli.UsageError{Msg: "bench wallet: say what to measure: lock, sweep or remind", Cmd: "bench"}
	}
	if cli.IsHelp(args[0]) {
		fmt.Fprint(c.Stdout, "Usage: quan bench wallet lock|sweep|remind [flags]\n\nRun 'quan bench wallet lock -h' (or sweep, remind) for a benchmark's flags.\n")
		return cli.ErrHelp
	}
	switch args[0] {
	case "lock":
		return c.walletLock(ctx, args[1:])
	case "sweep":
		return c.walletSweep(ctx, args[1:])
	case "remind":
		return c.walletRemind(ctx, args[1:])
	}
	return &cli.UsageError{Msg: fmt.Sprintf("bench wallet: unknown benchmark %q: use lock, sweep or remind", args[0]), Cmd: "bench"}
}

// walletEnv is what both wallet benchmarks run on: the store, the wallet
// service over it without a bus, a template, and bare SQL on the same
// database.
type walletEnv struct {
	app    *app.App
	b      walletBench
	setup  string
	wallet *wallet.Service
	tpl    *quan.Template
	raw    walletBaseline
	close  func()
}

// openWalletEnv opens the store --store names, in a database of its own
// with --fresh-db, creates an active template (the demo's: 10 off 100, shop
// coupons, 72 hours valid) and opens bare connections next to the store's.
func (c *Command) openWalletEnv(ctx context.Context, verb string, args []string) (*walletEnv, error) {
	fs := flag.NewFlagSet("bench wallet "+verb, flag.ContinueOnError)
	var b walletBench
	b.register(fs, verb)
	if err := c.parse(fs, args); err != nil {
		return nil, err
	}
	if err := b.validate(verb); err != nil {
		return nil, err
	}
	var closers []func()
	e := &walletEnv{close: func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}}
	fail := func(err error) (*walletEnv, error) {
		e.close()
		return nil, fmt.Errorf("bench wallet %s: %w", verb, err)
	}
	if !cli.IsSet(fs, "data") {
		dir, err := os.MkdirTemp("", "quan-bench-wallet-")
		if err != nil {
			return fail(err)
		}
		closers = append(closers, func() { os.RemoveAll(dir) })
		b.Config.DataDir = dir
	}
	fresh := freshDB{FreshDB: b.FreshDB, cmd: "bench wallet " + verb}
	if err := fresh.checkFreshDB(b.Config); err != nil {
		return fail(err)
	}
	drop, err := fresh.isolate(ctx, c.Stderr, &b.Config)
	if err != nil {
		return fail(err)
	}
	closers = append(closers, drop)
	// A Server's wiring: its wallet publishes the coupons' events on an
	// embedded NATS bus, which the sweep with a bus uses. Nothing is
	// started: the bench drives the services itself.
	cfg := b.Config
	cfg.CacheURL, cfg.BusURL = "none", "embedded:"
	a, err := c.openApp(ctx, cfg, app.Server)
	if err != nil {
		return fail(err)
	}
	closers = append(closers, a.Close)
	e.app = a
	st := a.Backends.Store
	e.wallet = &wallet.Service{Coupons: st, Templates: st, Now: c.Now, Logger: a.Logger}
	if e.tpl, err = a.CreateDemoTemplate(ctx, int64(b.N)); err != nil {
		return fail(err)
	}
	e.raw, err = openBaseline[walletBaseline](ctx, a.Config, b.RawConns)
	if err != nil {
		return fail(err)
	}
	closers = append(closers, func() { e.raw.Close() })
	store, _, _ := app.Kinds(a.Config)
	e.b, e.setup = b, store+fresh.database()
	return e, nil
}

func (e *walletEnv) now() time.Time {
	if now := e.app.Config.Now; now != nil {
		return now().UTC()
	}
	return time.Now().UTC()
}

// profile starts the CPU profile --cpuprofile asks for; the returned
// function stops it.
func (e *walletEnv) profile() (func(), error) {
	runtime.GC()
	if e.b.CPUProfile == "" {
		return func() {}, nil
	}
	f, err := os.Create(e.b.CPUProfile)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// walletLock measures orders that lock one coupon and pay with it,
// wallet.Service.Lock then Redeem in this process on the store, against the
// raw loop: the same two UPDATEs the store makes, each in a bare
// transaction. Neither writes anything else per order: the service runs
// without a bus, so it publishes no events. It fails unless every order
// ended with its coupon used by it.
func (c *Command) walletLock(ctx context.Context, args []string) error {
	e, err := c.openWalletEnv(ctx, "lock", args)
	if err != nil {
		return err
	}
	defer e.close()
	out, n := c.Stdout, e.b.N
	now := e.now()
	start, end := e.tpl.CouponWindow(now)
	// Users 1…n order through the service, n+1…2n in the raw loop: a
	// coupon each, all seeded before either is timed.
	began := time.Now()
	if err := e.raw.Seed(ctx, e.tpl, 1, 2*n, walletSeedRows, start, func(int) time.Time { return end }, now); err != nil {
		return fmt.Errorf("bench wallet lock: seed: %w", err)
	}
	seeded := time.Since(began)
	ids, err := e.raw.CouponIDs(ctx, e.tpl.ID, 1, 2*n)
	if err != nil {
		return fmt.Errorf("bench wallet lock: %w", err)
	}
	items := []quan.OrderItem{{SKU: "bench-sku", Category: "bench", ShopNo: e.tpl.ShopNo, UnitPrice: 12_000, Quantity: 1}}
	proto := quan.NewCoupon(e.tpl, 1, 1, 0, now)
	q := quan.PriceOrder(items, []*quan.Coupon{&proto}, map[int64]*quan.Template{e.tpl.ID: e.tpl}, now)
	if len(q.Coupons) != 1 || !q.Coupons[0].Usable {
		return fmt.Errorf("bench wallet lock: the order's coupon does not apply: %+v", q.Coupons)
	}
	discount := q.Coupons[0].Discount
	fmt.Fprintf(out, "bench wallet lock: store %s, no bus (no events published); %s users each holding one available coupon of template %d for the service and %s more for the raw loop, seeded in %s (not timed); orders of %s fen with %s off, on %d goroutines; %d cores (GOMAXPROCS %d)\n",
		e.setup, cli.Thousands(int64(n)), e.tpl.ID, cli.Thousands(int64(n)), seeded.Round(time.Millisecond),
		cli.Thousands(q.Total), cli.Thousands(discount), e.b.Conns, runtime.NumCPU(), runtime.GOMAXPROCS(0))

	stop, err := e.profile()
	if err != nil {
		return fmt.Errorf("bench wallet lock: %w", err)
	}
	svc := runOrders(ctx, n, e.b.Conns, func(ctx context.Context, k int) error {
		user := int64(k) + 1
		who := quan.Identity{Role: quan.RoleService, KeyID: 1, Scopes: quan.NewScopeSet(quan.ScopeSettlement)}.ForUser(user)
		order := "svc-" + strconv.FormatInt(user, 10)
		if _, err := e.wallet.Lock(ctx, who, order, wallet.LockRequest{Items: items, CouponIDs: ids[k : k+1], ExpectedDiscount: discount}); err != nil {
			return err
		}
		_, err := e.wallet.Redeem(ctx, who, order)
		return err
	})
	stop()
	fmt.Fprintf(out, "bench wallet lock: service (WalletService.Lock + Redeem, in process): %s (%d cores)\n", svc.summary(n), runtime.NumCPU())
	if svc.err != nil {
		return fmt.Errorf("bench wallet lock: service: %s of %s orders failed, the first: %w", cli.Thousands(svc.failed), cli.Thousands(int64(n)), svc.err)
	}
	lockTTL := cmp.Or(e.wallet.LockTTL, wallet.DefaultLockTTL)
	raw := runOrders(ctx, n, e.b.Conns, func(ctx context.Context, k int) error {
		user := int64(n+k) + 1
		return e.raw.Order(ctx, ids[n+k], "raw-"+strconv.FormatInt(user, 10), lockTTL)
	})
	fmt.Fprintf(out, "bench wallet lock: raw loop (per order: BEGIN, UPDATE to locked, COMMIT; BEGIN, UPDATE to used, COMMIT; %d connections): %s (%d cores)\n",
		e.raw.OrderConns(), raw.summary(n), runtime.NumCPU())
	if raw.err != nil {
		return fmt.Errorf("bench wallet lock: raw loop: %s of %s orders failed, the first: %w", cli.Thousands(raw.failed), cli.Thousands(int64(n)), raw.err)
	}
	fmt.Fprintf(out, "bench wallet lock: service/raw %.2f× (%s ÷ %s orders/s; goal ≥ 5,000 orders/s and ≥ 0.70×) (%d cores)\n",
		raw.wall.Seconds()/svc.wall.Seconds(), cli.Thousands(perSec(n, svc.wall)), cli.Thousands(perSec(n, raw.wall)), runtime.NumCPU())

	var audits []walletAudit
	for _, set := range []struct {
		what, prefix string
		first        int64
	}{{"service", "svc-", 1}, {"raw loop", "raw-", int64(n) + 1}} {
		a, err := e.audit(ctx, set.first, n, quan.CouponUsed, set.prefix)
		if err != nil {
			return fmt.Errorf("bench wallet lock: verify: %w", err)
		}
		a.What = set.what
		audits = append(audits, a)
	}
	return reportAudits(out, "bench wallet lock", audits)
}

// walletSweep measures wallet.Service.Sweep over n available coupons whose
// window has closed, without a bus and then, with --with-bus, over n more
// with an embedded NATS bus taking every coupon's event. With --sweepers,
// that many sweep at once, as several `quan serve` would. It fails unless
// every coupon ended expired and was reported once.
func (c *Command) walletSweep(ctx context.Context, args []string) error {
	e, err := c.openWalletEnv(ctx, "sweep", args)
	if err != nil {
		return err
	}
	defer e.close()
	out, n := c.Stdout, e.b.N
	fmt.Fprintf(out, "bench wallet sweep: store %s, %s available coupons of template %d whose window has closed, batch %s, %d sweeping at once; %d cores (GOMAXPROCS %d)\n",
		e.setup, cli.Thousands(int64(n)), e.tpl.ID, cli.Thousands(int64(e.b.Batch)), e.b.Sweepers, runtime.NumCPU(), runtime.GOMAXPROCS(0))
	var audits []walletAudit
	sweep := func(what string, first int64, w *wallet.Service, profile bool) error {
		now := e.now()
		// Their windows closed an hour ago and before, one end per
		// walletSeedRows coupons rising with the ids, as a distribution's
		// chunks lay them.
		chunks := (n + walletSeedRows - 1) / walletSeedRows
		began := time.Now()
		if err := e.raw.Seed(ctx, e.tpl, first, n, walletSeedRows, now.Add(-96*time.Hour), func(chunk int) time.Time {
			return now.Add(-time.Hour - time.Duration(chunks-chunk)*time.Second)
		}, now.Add(-96*time.Hour)); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
		seeded := time.Since(began)
		stop := func() {}
		if profile {
			var err error
			if stop, err = e.profile(); err != nil {
				return err
			}
		}
		var (
			changed atomic.Int64
			errs    = make([]error, e.b.Sweepers)
			wg      sync.WaitGroup
		)
		began = time.Now()
		for i := range e.b.Sweepers {
			wg.Go(func() {
				k, err := w.Sweep(ctx, e.b.Batch)
				changed.Add(int64(k))
				errs[i] = err
			})
		}
		wg.Wait()
		wall := time.Since(began)
		stop()
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
		fmt.Fprintf(out, "bench wallet sweep: %s: %s coupons expired in %s: %s coupons/s (seeded in %s, not timed) (%d cores)\n",
			what, cli.Thousands(changed.Load()), wall.Round(time.Millisecond), cli.Thousands(perSec(int(changed.Load()), wall)),
			seeded.Round(time.Millisecond), runtime.NumCPU())
		a, err := e.audit(ctx, first, n, quan.CouponExpired, "")
		if err != nil {
			return fmt.Errorf("verify: %w", err)
		}
		a.What, a.Reported = what, changed.Load()
		audits = append(audits, a)
		return nil
	}
	if err := sweep("no bus (no events published)", 1, e.wallet, true); err != nil {
		return fmt.Errorf("bench wallet sweep: %w", err)
	}
	if e.b.WithBus {
		w := e.app.Wallet
		what := fmt.Sprintf("embedded NATS bus (every coupon's event, up to %s a message)", cli.Thousands(quan.MaxEventsPerMessage))
		if err := sweep(what, int64(n)+1, w, false); err != nil {
			return fmt.Errorf("bench wallet sweep: %w", err)
		}
	}
	return reportAudits(out, "bench wallet sweep", audits)
}

// orderRun is what runOrders timed and counted.
type orderRun struct {
	wall   time.Duration
	lat    []time.Duration // of each order, in order
	failed int64
	err    error // the first failure
}

// runOrders runs do for orders 0…n-1 on conns goroutines, each taking the
// next order as it is done with one, and times each.
func runOrders(ctx context.Context, n, conns int, do func(ctx context.Context, k int) error) orderRun {
	r := orderRun{lat: make([]time.Duration, n)}
	var (
		next   atomic.Int64
		failed atomic.Int64
		once   sync.Once
		wg     sync.WaitGroup
	)
	start := time.Now()
	for range conns {
		wg.Go(func() {
			for {
				k := int(next.Add(1) - 1)
				if k >= n || ctx.Err() != nil {
					return
				}
				t := time.Now()
				if err := do(ctx, k); err != nil {
					failed.Add(1)
					once.Do(func() { r.err = err })
				}
				r.lat[k] = time.Since(t)
			}
		})
	}
	wg.Wait()
	r.wall = time.Since(start)
	r.failed = failed.Load()
	if r.err == nil && ctx.Err() != nil {
		r.err = ctx.Err()
	}
	return r
}

func (r orderRun) summary(n int) string {
	lat := slices.Clone(r.lat)
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	return fmt.Sprintf("%s orders in %s: %s orders/s, per order p50 %s p99 %s",
		cli.Thousands(int64(n)), r.wall.Round(time.Millisecond), cli.Thousands(perSec(n, r.wall)),
		q(0.50).Round(10*time.Microsecond), q(0.99).Round(10*time.Microsecond))
}

func perSec(n int, d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64(float64(n) / d.Seconds())
}

// walletAudit is what a run left in the store of the coupons it seeded.
type walletAudit struct {
	What    string
	Coupons int64                       // seeded
	Want    quan.CouponStatus           // every one must end so
	Counts  map[quan.CouponStatus]int64 // of the seeded coupons
	// Own counts the coupons used by the order the bench gave their user,
	// when the run took orders (OrderPrefix set).
	Own         int64
	OrderPrefix string
	// Reported is how many coupons a sweep said it changed (-1: not a
	// sweep): at least those seeded, more if the database held other due
	// coupons.
	Reported int64
}

// check returns what breaks the run's promise: a coupon not in the wanted
// status; after orders, one used by an order not its user's; after a
// sweep, fewer coupons reported than it changed.
func (a walletAudit) check() error {
	var errs []error
	var other []string
	for _, s := range slices.Sorted(maps.Keys(a.Counts)) {
		if s != a.Want && a.Counts[s] > 0 {
			other = append(other, fmt.Sprintf("%s %s", cli.Thousands(a.Counts[s]), s))
		}
	}
	if got := a.Counts[a.Want]; got != a.Coupons || len(other) > 0 {
		errs = append(errs, fmt.Errorf("%s: %s of %s coupons %s, %s", a.What, cli.Thousands(got), cli.Thousands(a.Coupons), a.Want,
			cmp.Or(strings.Join(other, ", "), "the rest missing")))
	}
	if a.OrderPrefix != "" && a.Own != a.Coupons {
		errs = append(errs, fmt.Errorf("%s: %s of %s coupons used by their user's order %sUSER", a.What, cli.Thousands(a.Own), cli.Thousands(a.Coupons), a.OrderPrefix))
	}
	if a.Reported >= 0 && a.Reported < a.Coupons {
		errs = append(errs, fmt.Errorf("%s: the sweep reported %s coupons changed, fewer than the %s it expired", a.What, cli.Thousands(a.Reported), cli.Thousands(a.Coupons)))
	}
	return errors.Join(errs...)
}

func (a walletAudit) String() string {
	s := fmt.Sprintf("%s: %s of %s coupons %s", a.What, cli.Thousands(a.Counts[a.Want]), cli.Thousands(a.Coupons), a.Want)
	if a.OrderPrefix != "" {
		s += fmt.Sprintf(", each by its user's order (%s of %s)", cli.Thousands(a.Own), cli.Thousands(a.Coupons))
	}
	return s
}

// reportAudits prints the verification of every run, and fails if one
// broke.
func reportAudits(out io.Writer, prefix string, audits []walletAudit) error {
	var errs []error
	var ok []string
	for _, a := range audits {
		if err := a.check(); err != nil {
			errs = append(errs, err)
		} else {
			ok = append(ok, a.String())
		}
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(out, "%s: verification FAILED: %v\n", prefix, err)
		return fmt.Errorf("%s: %w", prefix, err)
	}
	fmt.Fprintf(out, "%s: verified: %s\n", prefix, strings.Join(ok, "; "))
	return nil
}

// walletBaseline is bare SQL on the store's database, in its engine's
// dialect (openBaseline picks it): the wallet benchmarks' setup, their
// checks, and the raw loop the service is compared with.
type walletBaseline interface {
	// Seed inserts one available coupon of tpl (receive sequence 1,
	// source claim), created at created, for each of the users
	// first…first+n-1, by multi-row INSERTs of rows coupons: those of the
	// k-th INSERT (from 0) valid from start to end(k).
	Seed(ctx context.Context, tpl *quan.Template, first int64, n, rows int, start time.Time, end func(k int) time.Time, created time.Time) error
	// CouponIDs returns the ids of the coupons of template held by the
	// users first…first+n-1, by user; it fails if one holds none.
	CouponIDs(ctx context.Context, template, first int64, n int) ([]int64, error)
	// Order is one order of the raw loop: coupon id locked for order
	// until ttl from now in a bare transaction, then used by it in
	// another, with the statement the store saves a coupon with.
	Order(ctx context.Context, id int64, order string, ttl time.Duration) error
	// OrderConns is how many connections Order runs on.
	OrderConns() int
	// Audit counts the coupons of template held by the users
	// first…first+n-1 by status and, with an order prefix, those used by
	// the order prefix+user.
	Audit(ctx context.Context, template, first int64, n int, prefix string) (map[quan.CouponStatus]int64, int64, error)
	Close() error
}

// walletSeedRows is how many coupons one seed INSERT writes, and how many
// share a window's end in the sweep: a distribution's chunk on MySQL.
const walletSeedRows = 5_000

// audit is what the run left in the store of the coupons of the users
// first…first+n-1: all in status want and, with an order prefix, used by
// the order prefix+user.
func (e *walletEnv) audit(ctx context.Context, first int64, n int, want quan.CouponStatus, prefix string) (walletAudit, error) {
	counts, own, err := e.raw.Audit(ctx, e.tpl.ID, first, n, prefix)
	if err != nil {
		return walletAudit{}, err
	}
	return walletAudit{Coupons: int64(n), Want: want, Counts: counts, Own: own, OrderPrefix: prefix, Reported: -1}, nil
}
