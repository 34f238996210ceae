package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/accounts"
	"github.com/quanhq/quan/apikeys"
	"github.com/quanhq/quan/claims"
	"github.com/quanhq/quan/cmd/quan/internal/cli"
	"github.com/quanhq/quan/codes"
	"github.com/quanhq/quan/disk"
	"github.com/quanhq/quan/events"
	"github.com/quanhq/quan/facts"
	qhttp "github.com/quanhq/quan/http"
	"github.com/quanhq/quan/http/console"
	"github.com/quanhq/quan/notify"
	"github.com/quanhq/quan/prom"
	"github.com/quanhq/quan/reconcile"
	"github.com/quanhq/quan/report"
	"github.com/quanhq/quan/rules"
	"github.com/quanhq/quan/sheet"
	"github.com/quanhq/quan/shops"
	"github.com/quanhq/quan/stats"
	"github.com/quanhq/quan/tasks"
	"github.com/quanhq/quan/templates"
	"github.com/quanhq/quan/tracing"
	"github.com/quanhq/quan/wallet"
)

// App is quan wired for one process: its backends and every use case on
// them, read top to bottom in Open.
type App struct {
	Config   Config
	Role     Role
	Logger   *slog.Logger
	Backends *Backends

	Templates   *templates.Service
	Tasks       *tasks.Service
	Distributor *tasks.Runner
	Claims      *claims.Service // nil without a claim bus (Local, or a Worker on the embedded bus)
	Wallet      *wallet.Service // nil for Local
	Staff       *wallet.Staff
	Codes       *codes.Service        // nil for Local
	Reconciler  *reconcile.Reconciler // nil for Local, without a cache, or with Config.ReconcileEvery 0
	Notices     *notify.Service       // nil for Local
	Dispatcher  *notify.Dispatcher    // nil for Local and without --smtp-url or --sms-url
	Relay       *events.Relay         // the outbox's relay; nil for Local and without a bus
	Stats       *stats.Service        // nil for Local
	Reminders   *notify.Reminders     // nil for Local
	Accounts    *accounts.Service     // the console's accounts and sessions
	Keys        *apikeys.Service      // the service keys
	Facts       *facts.Service
	Shops       *shops.Service // shops' settings; claims honour their daily cap
	// Refusals counts the claims refused before the store for the
	// statistics; nil without claims.
	Refusals *stats.RefusalCounter

	// Metrics holds what /metrics shows: the Go runtime's and the
	// process's collectors and those of the use cases and backends,
	// registered as they are built. nil with Config.MetricsOff.
	Metrics     *prometheus.Registry
	httpMetrics *prom.HTTP // the API's requests in Metrics; nil with them off

	// Tracer records the spans of requests, claims and tasks; nil without
	// Config.Tracing, and then nothing is traced.
	Tracer *tracing.Tracer

	stop func() // stops what Start started and waits for it
}

// ReapEvery is how often a process persisting claims looks for claims
// abandoned by a process that died (claims.Service.Reap).
const ReapEvery = 5 * time.Second

// maxBusChunk is the largest chunk that fits a bus message: at most about
// 80 bytes a row (a failed row keeps 64 bytes of its text), and NATS takes
// 1 MiB.
const maxBusChunk = 10_000

// Open opens the backends cfg names and builds every use case a process of
// role needs. Nothing runs in the background until Start. Close undoes it.
func Open(ctx context.Context, cfg Config, role Role, logger *slog.Logger) (*App, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if _, _, bus := Kinds(cfg); role == Worker && cfg.Runner.Off && bus == "embedded" {
		// It claims no task: it only applies the chunks others publish.
		return nil, cli.Usagef("worker: --runner=false leaves a worker nothing to do without a --bus nats://")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data folder: %w", err)
	}
	b, err := OpenBackends(ctx, cfg, role, logger)
	if err != nil {
		return nil, err
	}
	a := &App{Config: cfg, Role: role, Logger: logger, Backends: b}
	if !cfg.MetricsOff {
		a.Metrics = prom.NewRegistry()
		b.instrument(a.Metrics)
		a.Metrics.MustRegister(prom.Ready(a.Checks()))
		a.httpMetrics = prom.NewHTTP(a.Metrics)
	}
	if err := a.openTracer(ctx); err != nil {
		b.Close()
		return nil, err
	}
	if err := a.build(ctx); err != nil {
		b.Close()
		a.closeTracer()
		return nil, err
	}
	return a, nil
}

// build makes the use cases over the backends.
func (a *App) build(ctx context.Context) error {
	cfg, b, st, logger := a.Config, a.Backends, a.Backends.Store, a.Logger
	chunk := b.ChunkSize
	if cfg.Runner.ChunkSize > 0 {
		chunk = cfg.Runner.ChunkSize
	}
	if b.Bus != nil && chunk > maxBusChunk {
		return fmt.Errorf("--chunk-size %d: with a nats:// bus a chunk is one message; use at most %d rows", chunk, maxBusChunk)
	}
	taskStore, claimStore, bus, claimBus, tracer := a.traced(st, b.Bus, b.ClaimBus)
	files := &disk.Files{Dir: cfg.DataDir}
	limits := fileLimits{MaxRows: cfg.Files.MaxRows, MaxUncompressed: cfg.Files.MaxUncompressed}

	// Templates' rules: type-checked when saved, compiled once per
	// version and kept by the book for claims, distributions and quotes.
	engine, err := rules.New(rules.Options{})
	if err != nil {
		return fmt.Errorf("rules: %w", err)
	}
	book := &templates.RuleBook{Engine: engine, Templates: st, Versions: st, Logger: logger}
	a.Templates = &templates.Service{Store: st, Cache: b.Cache, Logger: logger, Now: cfg.Now,
		Rules: engine, Versions: st, Book: book}
	a.Accounts = &accounts.Service{Store: st, Now: cfg.Now, Logger: logger}
	a.Keys = &apikeys.Service{Keys: st, Secrets: st, Now: cfg.Now, Logger: logger}
	a.Stats = &stats.Service{Store: st, Now: cfg.Now}
	a.Shops = &shops.Service{Store: st, Now: cfg.Now, Logger: logger}
	a.Facts = &facts.Service{Store: st, Now: cfg.Now, Logger: logger,
		// An attributes import is kept and read like a distribution file,
		// every column of it.
		Files: files,
		OpenRows: func(path string) (quan.OthersReader, error) {
			opt := a.SheetOptions("")
			opt.Others = true
			return sheet.OpenRows(path, opt)
		},
		MaxFileSize: cfg.Files.MaxUpload,
	}
	a.Distributor = &tasks.Runner{
		Store:            taskStore,
		Templates:        st,
		Coupons:          st,
		Cache:            b.Cache,
		Bus:              bus,
		Tracer:           tracer,
		Stall:            cfg.Runner.Stall,
		AckWait:          cfg.Runner.AckWait,
		ChunkConcurrency: cfg.Runner.ChunkConc,
		Open:             limits.openTaskFile,
		Report:           report.Failures{},
		ReportPath:       files.ReportPath,
		Rules:            book,
		Facts:            st,
		Owner:            runnerName(),
		Lease:            cfg.Runner.Lease,
		PollInterval:     cfg.Runner.Poll,
		Now:              cfg.Now,
		Logger:           logger,
	}
	if a.Metrics != nil {
		a.Metrics.MustRegister(prom.Distribution(&a.Distributor.Counters), prom.Monitor(st, cfg.Now))
	}
	a.Tasks = &tasks.Service{
		Tasks:       taskStore,
		Tracer:      tracer,
		Templates:   st,
		Files:       files,
		Check:       limits.checkFile,
		Count:       limits.countRows,
		Wake:        a.Distributor.Wake,
		Stalls:      a.Distributor,
		Now:         cfg.Now,
		MaxFileSize: cfg.Files.MaxUpload,
		ChunkSize:   chunk,
		Outbox:      st,
	}
	// A task may target a segment of the users on file instead of a file.
	a.Tasks.Rules, a.Tasks.Facts = engine, st
	if a.Role == Local {
		return nil
	}
	a.Staff = &wallet.Staff{Coupons: st, Now: cfg.Now}
	a.Wallet = &wallet.Service{Coupons: st, Archiver: st, Templates: st, Now: cfg.Now, Logger: logger,
		Rules: book, Facts: a.Facts, Refunds: st}
	if a.Metrics != nil {
		a.Metrics.MustRegister(prom.Wallet(&a.Wallet.Counters))
	}
	a.Codes = &codes.Service{Codes: st, Templates: st, Cache: b.ClaimCache, Now: cfg.Now, Logger: logger,
		Rules: book, Facts: a.Facts}
	a.Reminders = &notify.Reminders{Store: st, Templates: st, Now: cfg.Now, Logger: logger}
	if err := a.buildNotify(ctx); err != nil {
		return err
	}
	a.buildRelay()
	if b.ClaimBus != nil {
		a.Refusals = &stats.RefusalCounter{Store: st, Logger: logger}
		a.Claims = &claims.Service{Templates: st, Coupons: st, Claims: claimStore, Cache: b.ClaimCache, Bus: claimBus,
			Limiter: b.Limiter, Limits: cfg.Claims.Limits, PromoLimit: cfg.Claims.Promo, PersistRate: cfg.Claims.PersistRate, Now: cfg.Now, Logger: logger,
			Tracer: tracer, Refusals: a.Refusals, Shops: a.Shops, Rules: book, Facts: a.Facts}
		// Claims know a template created here at once; one created by
		// another process they look up.
		a.Templates.Created = a.Claims
		// A cache the processes share keeps the claims' ledger and takes
		// a claim's tokens with its reservation.
		if b.SharedCache != nil {
			a.Claims.Ledger, a.Claims.Reserver = b.SharedCache, b.SharedCache
		}
		if a.Metrics != nil {
			m := prom.Claims(&a.Claims.Counters, a.Claims.Bus)
			a.Claims.Latency = m
			a.Metrics.MustRegister(m)
		}
	}
	a.buildReconciler()
	return nil
}

// buildReconciler builds the reconciler of the cache claims reserve in
// (the distributor's, when it has one) with the store, when
// Config.ReconcileEvery asks for one.
func (a *App) buildReconciler() {
	b := a.Backends
	cache := b.ClaimCache
	if cache == nil {
		cache = b.Cache
	}
	if a.Config.ReconcileEvery <= 0 || cache == nil {
		return
	}
	local := []reconcile.InFlight{a.Templates, a.Distributor}
	if a.Claims != nil {
		local = append(local, a.Claims)
	}
	a.Reconciler = &reconcile.Reconciler{Templates: b.Store, Tasks: b.Store, Coupons: b.Store, Cache: cache,
		Buses: []quan.Bus{b.ClaimBus, b.Bus}, Local: local, Logger: a.Logger, Now: a.Config.Now}
	if b.SharedCache != nil {
		a.Reconciler.Ledger = b.SharedCache
	}
	if b.Cache == cache {
		a.Distributor.Reconciler = a.Reconciler
	}
	if a.Metrics != nil {
		a.Metrics.MustRegister(prom.Reconcile(&a.Reconciler.Counters))
	}
}

// Start runs the background loops of the process's role until Close: the
// distribution runner (unless Runner.Off), the consumer of chunks on a
// shared bus, the claim consumer, the sweepers (of coupons and of console
// sessions), and for a Server the code
// batches a stopped process left half made. A Local app starts nothing:
// its caller runs tasks (RunTask).
func (a *App) Start() error {
	if a.Role == Local || a.stop != nil {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	loop := func(name string, run func(context.Context) error) {
		wg.Go(func() {
			if err := run(ctx); err != nil && ctx.Err() == nil {
				a.Logger.Error(name+" stopped", "err", err)
			}
		})
	}
	if !a.Config.Runner.Off {
		loop("distributor", a.Distributor.Run)
	}
	if a.Distributor.Bus != nil {
		loop("chunk consumer", a.Distributor.ServeChunks)
	}
	if a.Claims != nil {
		if a.Role == Server && a.Backends.Shared && a.Backends.Cache == nil {
			a.Logger.Warn("claims reserve in this process's memory: with several processes, give them --cache redis://")
		}
		if a.Config.Claims.PersistRate > 0 {
			a.Logger.Info("claims are written to the store at most at this rate while claims arrive, the rest once they stop for a second", "claims_per_second", a.Config.Claims.PersistRate)
		}
		loop("claim consumer", a.Claims.ServeClaims)
		// Refusals counted in memory go to the statistics every few
		// seconds, and once more when the process stops.
		loop("claim refusal counts", a.Refusals.Run)
		// Claims reserved in a shared cache by a process that died before
		// handing them off are given back (a no-op in process memory).
		loop("claim reaper", func(ctx context.Context) error { return a.Claims.ServeReaper(ctx, ReapEvery) })
		// The sweeper runs where claims are persisted: with a server, or a
		// worker on a shared bus.
		loop("sweeper", a.sweep)
		loop("session sweeper", a.sweepSessions)
	}
	if a.Reconciler != nil {
		every := a.Config.ReconcileEvery
		loop("reconciler", func(ctx context.Context) error { return a.Reconciler.Run(ctx, every) })
	}
	a.startNotify(loop)
	a.startRelay(loop)
	if a.Role == Server {
		if err := a.Codes.Resume(ctx); err != nil {
			a.Logger.Warn("resume code batches", "err", err)
		}
	}
	a.stop = func() {
		cancel()
		wg.Wait()
		a.Codes.Close()
	}
	return nil
}

// sweep writes down what time did to templates (their issue window
// closed) and coupons (expired windows, locks that ran out), and records
// the reminders due (expiring coupons, templates opening), every
// SweepEvery, until ctx ends. Reads apply it at once anyway; the sweep
// keeps the store, and the events downstream, in step.
func (a *App) sweep(ctx context.Context) error {
	every := a.Config.SweepEvery
	if every <= 0 {
		return nil
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		logger := a.Logger
		if n, err := a.Templates.EndDue(ctx); err != nil && ctx.Err() == nil {
			logger.Warn("end templates whose window closed", "err", err)
		} else if n > 0 {
			logger.Info("templates ended: their issue window closed", "templates", n)
		}
		start := time.Now()
		n, err := a.Wallet.Sweep(ctx, 10_000)
		switch {
		case err != nil && ctx.Err() == nil:
			logger.Warn("sweep coupons", "err", err)
		case n > 0:
			logger.Info("coupons swept", "changed", n, "took", time.Since(start))
		}
		start = time.Now()
		if e, o, err := a.Reminders.Remind(ctx, 10_000); err != nil && ctx.Err() == nil {
			logger.Warn("record reminders", "err", err, "expiring", e, "opening", o)
		} else if e+o > 0 {
			logger.Info("reminders recorded", "expiring", e, "opening", o, "took", time.Since(start))
		}
		if n, err := a.Wallet.Archive(ctx, a.Config.ArchiveAfter, 10_000); err != nil && ctx.Err() == nil {
			logger.Warn("archive coupons", "err", err)
		} else if n > 0 {
			logger.Info("coupons archived", "moved", n)
		}
	}
}

// SessionSweepEvery is how often the console's ended sessions are
// deleted. Authenticate refuses an ended session whenever it is swept;
// the sweep only keeps the table from growing.
const SessionSweepEvery = time.Hour

// sweepSessions deletes the console sessions that ended, every
// SessionSweepEvery, until ctx ends; not at all with Config.SweepEvery 0.
func (a *App) sweepSessions(ctx context.Context) error {
	if a.Config.SweepEvery <= 0 {
		return nil
	}
	tick := time.NewTicker(SessionSweepEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		n, err := a.Accounts.Sweep(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			a.Logger.Warn("delete ended console sessions", "err", err)
		case n > 0:
			a.Logger.Info("ended console sessions deleted", "sessions", n)
		}
	}
}

// HTTPServer returns the API server over the app's use cases, signing and
// checking tokens with tokens, with the operator console at /console. The
// caller opens and closes it. With metrics on, the tokens tokens accepts
// are counted (quan_tokens_verified_total).
func (a *App) HTTPServer(tokens *qhttp.Tokens) (*qhttp.Server, error) {
	if a.httpMetrics != nil && tokens != nil {
		tokens.Verified = a.httpMetrics.TokenVerified
	}
	srv := &qhttp.Server{
		Templates:   a.Templates,
		Tasks:       a.Tasks,
		Claims:      a.Claims,
		Centre:      a.Claims,
		Wallet:      a.Wallet,
		Staff:       a.Staff,
		Codes:       a.Codes,
		Notices:     a.Notices,
		Stats:       a.Stats,
		Reminders:   a.Reminders,
		Facts:       a.Facts,
		Shops:       a.Shops,
		Keys:        a.Keys,
		CodesExport: report.Codes{},
		Idempotency: a.Backends.Idempotency,
		Tokens:      tokens,
		Logger:      a.Logger,
		Checks:      a.Checks(),
		Now:         a.Config.Now,
		Observe:     a.observeHTTP(),
		Limits:      a.Config.HTTP.Limits,
		Unavailable: a.unavailableHTTP(),
	}
	srv.NotificationFailuresExport = report.NotificationFailures{}
	if a.Tracer != nil {
		srv.Tracer = a.Tracer
	}
	con := &console.Console{
		Accounts:    a.Accounts,
		Keys:        a.Keys,
		Templates:   a.Templates,
		Tasks:       a.Tasks,
		Stats:       a.Stats,
		Codes:       a.Codes,
		CodesExport: report.Codes{},
		Proxies:     a.Config.HTTP.TrustedProxies,
		Now:         a.Config.Now,
		Logger:      a.Logger.With("part", "console"),
	}
	h, err := con.Handler()
	if err != nil {
		return nil, err
	}
	srv.Console = h
	srv.OnShutdown = con.Close
	return srv, nil
}

// Checks are the readiness checks of the process: those of its backends
// (Backends.Checks) and "data", which writes and removes a small file in
// the data folder, where uploads, reports and the embedded store live.
func (a *App) Checks() map[string]func(context.Context) error {
	checks := a.Backends.Checks()
	checks["data"] = (&disk.Files{Dir: a.Config.DataDir}).Probe
	return checks
}

// Close stops the background loops, waits for them, closes the backends,
// then sends the spans not sent yet. It is safe to call twice.
func (a *App) Close() {
	if a.stop != nil {
		a.stop()
		a.stop = nil
	}
	a.Backends.Close()
	a.closeTracer()
}

// runnerName names this process among the runners sharing a store.
func runnerName() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
}

// fileLimits bound what a distribution file may hold.
type fileLimits struct {
	MaxRows         int64
	MaxUncompressed int64
}

func (l fileLimits) options(sheetName string) sheet.Options {
	return sheet.Options{Sheet: sheetName, MaxRows: l.MaxRows, MaxUncompressed: l.MaxUncompressed}
}

// openTaskFile opens the file of a task for the distributor.
func (l fileLimits) openTaskFile(ctx context.Context, t *quan.Task) (quan.RowReader, error) {
	opt := l.options(t.Sheet)
	opt.Name = t.FileName
	return sheet.OpenRows(t.FilePath, opt)
}

// checkFile reads the header and the first rows of an upload, so that a
// file that cannot be read is refused at once.
func (l fileLimits) checkFile(ctx context.Context, path, fileName, sheetName string) error {
	opt := l.options(sheetName)
	opt.Name = fileName
	return sheet.Check(ctx, path, opt)
}

// countRows counts the data rows of a stored file.
func (l fileLimits) countRows(ctx context.Context, path, sheetName string) (int64, error) {
	return sheet.Count(ctx, path, l.options(sheetName))
}

// SheetOptions are the reader options of a file under the app's limits.
func (a *App) SheetOptions(sheetName string) sheet.Options {
	return fileLimits{MaxRows: a.Config.Files.MaxRows, MaxUncompressed: a.Config.Files.MaxUncompressed}.options(sheetName)
}
