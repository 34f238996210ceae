package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/quanhq/quan"
	qhttp "github.com/quanhq/quan/http"
	"github.com/quanhq/quan/inmem"
	"github.com/quanhq/quan/mysql"
	natsbus "github.com/quanhq/quan/nats"
	"github.com/quanhq/quan/report"
)

// ServeCommand runs the HTTP API and the distribution runner until its
// context ends; as `quan worker` it runs the runner only, and as `quan
// worker --runner=false` only the consumer of the chunks published on the
// bus.
type ServeCommand struct {
	Main   *Main
	Worker bool // no HTTP API: only run distribution tasks

	Addr            string
	DataDir         string
	StoreURL        string
	CacheURL        string
	BusURL          string
	JWTSecret       string
	LogLevel        string
	LogFormat       string
	ShutdownTimeout time.Duration

	Files  FileFlags
	Runner RunnerFlags
	Limits quan.ClaimLimits
	// PersistRate paces the claims written to the store while claims
	// arrive (quan.ClaimService.PersistRate).
	PersistRate float64
	// SweepEvery is how often expired coupons and locks that ran out are
	// written down; ArchiveAfter, if set, how old spent coupons of ended
	// templates are when the sweep moves them to the history table.
	SweepEvery   time.Duration
	ArchiveAfter time.Duration

	logger     *slog.Logger
	closeStore func()
	server     *qhttp.Server
	stop       func() // stops the distributor and waits for it
}

// ParseFlags reads the flags, then QUAN_* variables for those not given.
func (c *ServeCommand) ParseFlags(args []string) error {
	name := "serve"
	if c.Worker {
		name = "worker"
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	if !c.Worker {
		fs.StringVar(&c.Addr, "addr", ":8080", "listen address")
		fs.StringVar(&c.JWTSecret, "jwt-secret", "", "token signing secret, at least 32 bytes (default: generated once, kept in the data folder)")
	}
	fs.StringVar(&c.DataDir, "data", "./quan-data", "data folder (SQLite database, token secret, uploads)")
	registerBackends(fs, &c.StoreURL, &c.CacheURL, &c.BusURL)
	fs.StringVar(&c.LogLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&c.LogFormat, "log-format", "text", "text or json")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "how long to drain requests in flight on SIGINT/SIGTERM")
	c.Files.register(fs)
	c.Runner.register(fs)
	fs.DurationVar(&c.SweepEvery, "sweep-every", time.Minute, "how often to write down expired coupons and locks that ran out (0: never)")
	fs.DurationVar(&c.ArchiveAfter, "archive-after", 0, "move used, expired and revoked coupons of ended templates this long unchanged to the history table (0: never)")
	if !c.Worker {
		fs.Float64Var(&c.Limits.UserRate, "claim-rate-user", 10, "claims a second one user may make (token bucket; 0: no limit)")
		fs.IntVar(&c.Limits.UserBurst, "claim-burst-user", 20, "claims one user may make at once")
		fs.Float64Var(&c.Limits.TemplateRate, "claim-rate-template", 50_000, "claims a second of one template (0: no limit)")
		fs.IntVar(&c.Limits.TemplateBurst, "claim-burst-template", 50_000, "claims of one template at once")
	}
	fs.Float64Var(&c.PersistRate, "claim-persist-rate", 0, fmt.Sprintf("while this process takes claims, write at most this many a second to the store; the rest wait on the bus until claims stop for a second (0: no limit; else at least %d)", quan.MinPersistRate))
	if err := c.Main.parseFlags(fs, args); err != nil {
		return err
	}
	if c.PersistRate != 0 && !(c.PersistRate >= quan.MinPersistRate) {
		return fmt.Errorf("%s: --claim-persist-rate %v: want 0 (no limit) or at least %d claims a second", name, c.PersistRate, quan.MinPersistRate)
	}
	return nil
}

// Open opens the store and starts serving. Close undoes it.
func (c *ServeCommand) Open(ctx context.Context) error {
	logger, err := newLogger(c.Main.Stderr, c.LogLevel, c.LogFormat)
	if err != nil {
		return err
	}
	c.logger = logger
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return fmt.Errorf("create data folder: %w", err)
	}
	var tokens *qhttp.Tokens
	if !c.Worker {
		secret, err := loadSecret(c.DataDir, c.JWTSecret)
		if err != nil {
			return err
		}
		if tokens, err = qhttp.NewTokens(secret, c.Main.Now); err != nil {
			return err
		}
	}
	store, closeStore, err := openBackends(ctx, c.StoreURL, c.CacheURL, c.BusURL, c.DataDir, logger)
	if err != nil {
		return err
	}
	c.closeStore = closeStore
	app, err := c.Main.wire(store, c.DataDir, c.Files, c.Runner, logger)
	if err != nil {
		return err
	}
	stopClaims, err := c.startClaims(ctx, store, app, logger)
	if err != nil {
		return err
	}
	if c.Worker {
		// A worker with --runner=false claims no task: it only applies
		// the chunks others publish, which needs a bus.
		if !c.Runner.Run && store.bus == nil {
			return errors.New("worker: --runner=false leaves a worker nothing to do without a --bus nats://")
		}
		c.stop = chain(app.startDistributor(logger, c.Runner.Run), stopClaims)
		logger.Info("quan worker running", "data", c.DataDir, "store", redact(c.StoreURL),
			"cache", redact(c.CacheURL), "bus", c.BusURL, "runner", c.Runner.Run)
		return nil
	}
	// Idempotency keys live where the cache does: in Redis when it is
	// configured, so that every process shares them (the claim rate
	// limits too: see startClaims).
	var idem quan.Idempotency = inmem.NewIdempotency()
	if i, ok := store.cache.(quan.Idempotency); ok {
		idem = i
	}
	c.server = &qhttp.Server{
		Templates:   app.templates,
		Tasks:       app.tasks,
		Claims:      app.claims,
		Wallet:      app.wallet,
		Codes:       app.codes,
		CodesExport: report.Codes{},
		Idempotency: idem,
		Tokens:      tokens,
		Logger:      logger,
		Ready:       store.Ping,
		Now:         c.Main.Now,
	}
	c.stop = stopClaims
	if c.Runner.Run {
		c.stop = chain(app.startDistributor(logger, true), stopClaims)
	}
	if err := c.server.Open(c.Addr); err != nil {
		return err
	}
	logger.Info("quan serving", "url", c.server.URL(), "data", c.DataDir, "store", redact(c.StoreURL))
	return nil
}

// startClaims wires the claim use case and persists claims in the
// background. Claims need a bus: an external one, or for `serve` on the
// embedded default an in-process NATS server keeping its data in
// DATA/nats (a worker on the embedded default leaves claims to serve).
// Without a cache configured they reserve in this process's memory.
func (c *ServeCommand) startClaims(ctx context.Context, b *backends, a *app, logger *slog.Logger) (func(), error) {
	bus := b.bus
	if bus == nil {
		if c.Worker {
			return func() {}, nil
		}
		srv, err := natsbus.StartEmbedded(ctx, filepath.Join(c.DataDir, "nats"), logger)
		if err != nil {
			return nil, fmt.Errorf("start the embedded bus: %w", err)
		}
		eb, err := srv.Bus(ctx, natsbus.Config{Logger: logger})
		if err != nil {
			srv.Close()
			return nil, fmt.Errorf("open the embedded bus: %w", err)
		}
		closeStore := c.closeStore
		c.closeStore = func() {
			eb.Close()
			srv.Close()
			closeStore()
		}
		bus = eb
	}
	cache := b.cache
	if cache == nil {
		if _, shared := b.openedStore.store.(*mysql.Store); shared {
			logger.Warn("claims reserve in this process's memory: with several processes, give them --cache redis://")
		}
		cache = inmem.NewCache()
	}
	st := b.openedStore.store
	// The rate limits live where the cache does, so that every process
	// shares them. A Redis cache is the limiter too, and then a claim
	// takes its tokens and its reservation in one call.
	var limiter quan.RateLimiter = inmem.NewRateLimiter()
	if l, ok := cache.(quan.RateLimiter); ok {
		limiter = l
	}
	a.claims = &quan.ClaimService{Templates: st, Coupons: st, Claims: st, Cache: cache, Bus: bus,
		Limiter: limiter, Limits: c.Limits, PersistRate: c.PersistRate, Now: c.Main.Now, Logger: logger}
	if c.PersistRate > 0 {
		logger.Info("claims are written to the store at most at this rate while claims arrive, the rest once they stop for a second", "claims_per_second", c.PersistRate)
	}
	a.wallet = &quan.WalletService{Coupons: st, Templates: st, Bus: bus, Now: c.Main.Now, Logger: logger}
	ctx, cancel := context.WithCancel(context.Background())
	a.codes = &quan.CodeService{Codes: st, Templates: st, Cache: cache, Now: c.Main.Now, Logger: logger, Background: ctx}
	if !c.Worker {
		// Batches of codes a process that stopped left half made.
		if err := a.codes.Resume(ctx); err != nil {
			logger.Warn("resume code batches", "err", err)
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := a.claims.ServeClaims(ctx); err != nil {
			logger.Error("claim consumer stopped", "err", err)
		}
	})
	wg.Go(func() { sweep(ctx, a.wallet, a.templates, c.SweepEvery, c.ArchiveAfter, logger) })
	return func() {
		cancel()
		wg.Wait()
		a.codes.Wait()
	}, nil
}

// sweep writes down what time did to templates (their issue window
// closed) and coupons (expired windows, locks that ran out) every
// interval, until ctx ends. Reads apply it at once anyway;
// the sweep keeps the store, and the events downstream, in step.
func sweep(ctx context.Context, w *quan.WalletService, ts *quan.TemplateService, every, archiveAfter time.Duration, logger *slog.Logger) {
	if every <= 0 {
		return
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if n, err := ts.EndDue(ctx); err != nil && ctx.Err() == nil {
			logger.Warn("end templates whose window closed", "err", err)
		} else if n > 0 {
			logger.Info("templates ended: their issue window closed", "templates", n)
		}
		start := time.Now()
		n, err := w.Sweep(ctx, 10_000)
		switch {
		case err != nil && ctx.Err() == nil:
			logger.Warn("sweep coupons", "err", err)
		case n > 0:
			logger.Info("coupons swept", "changed", n, "took", time.Since(start))
		}
		if n, err := w.Archive(ctx, archiveAfter, 10_000); err != nil && ctx.Err() == nil {
			logger.Warn("archive coupons", "err", err)
		} else if n > 0 {
			logger.Info("coupons archived", "moved", n)
		}
	}
}

// chain returns a function that calls fs in order.
func chain(fs ...func()) func() {
	return func() {
		for _, f := range fs {
			f()
		}
	}
}

// URL is the server's base URL once open.
func (c *ServeCommand) URL() string { return c.server.URL() }

// redact hides the password of a store URL, for logs.
func redact(storeURL string) string {
	u, err := url.Parse(storeURL)
	if err != nil || u.User == nil {
		return storeURL
	}
	if _, ok := u.User.Password(); !ok {
		return storeURL
	}
	u.User = url.UserPassword(u.User.Username(), "xxxxx")
	return u.String()
}

// Close drains requests in flight, within ShutdownTimeout, then closes the
// store. It is safe to call twice.
func (c *ServeCommand) Close() error {
	var errs []error
	if c.server != nil {
		ctx, cancel := context.WithTimeout(context.Background(), c.ShutdownTimeout)
		defer cancel()
		errs = append(errs, c.server.Close(ctx))
		c.server = nil
		if c.logger != nil {
			c.logger.Info("quan stopped")
		}
	}
	if c.stop != nil {
		c.stop()
		c.stop = nil
	}
	if c.closeStore != nil {
		c.closeStore()
		c.closeStore = nil
	}
	return errors.Join(errs...)
}
