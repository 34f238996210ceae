package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"time"

	"github.com/quanhq/quan/cmd/quan/internal/app"
	qhttp "github.com/quanhq/quan/http"
)

// ServeCommand runs the HTTP API and the background loops until its
// context ends; as `quan worker` it runs the loops only, and as `quan
// worker --runner=false` only the consumers of what others publish on the
// bus.
type ServeCommand struct {
	Main   *Main
	Worker bool // no HTTP API

	Config          app.Config
	Addr            string
	AdminAddr       string
	JWTSecret       string
	JWKS            jwksFlags
	ShutdownTimeout time.Duration
	// DrainDelay is how long readiness fails before the drain begins, so
	// that load balancers stop sending requests first.
	DrainDelay time.Duration

	drain qhttp.Drain
	// delayDone, if set, ends the drain delay early (for tests).
	delayDone chan struct{}
	logger    *slog.Logger
	app       *app.App
	server    *qhttp.Server
	admin     *adminServer
	// stopJWKS ends the refresh of the identity provider's keys, and
	// jwksDone closes when it has; nil without --jwt-jwks.
	stopJWKS func()
	jwksDone chan struct{}
}

func (c *ServeCommand) role() app.Role {
	if c.Worker {
		return app.Worker
	}
	return app.Server
}

// ParseFlags reads the flags, then QUAN_* variables for those not given.
func (c *ServeCommand) ParseFlags(args []string) error {
	fs := flag.NewFlagSet(c.role().String(), flag.ContinueOnError)
	if !c.Worker {
		fs.StringVar(&c.Addr, "addr", ":8080", "listen address")
		fs.StringVar(&c.JWTSecret, "jwt-secret", "", "token signing secret, at least 32 bytes (default: generated once, kept in the data folder)")
		c.JWKS.register(fs)
	}
	fs.StringVar(&c.AdminAddr, "admin-addr", "127.0.0.1:9090", `listen address of /metrics, /healthz, /readyz and /debug/pprof/ ("" for none; each process on a host needs its own)`)
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "how long to drain requests in flight on SIGINT/SIGTERM")
	fs.DurationVar(&c.DrainDelay, "drain-delay", DefaultDrainDelay, "on SIGINT/SIGTERM, how long /readyz answers 503 draining, requests still served, before the drain (0: none)")
	c.Config.Register(fs, c.role())
	if _, err := c.Main.parse(fs, args); err != nil {
		return err
	}
	c.Config.Now = c.Main.Now
	if !c.Worker {
		if err := c.JWKS.validate(); err != nil {
			return err
		}
	}
	return c.Config.Validate()
}

// Open opens the backends, starts the background loops and, for serve,
// the HTTP API. Close undoes it.
func (c *ServeCommand) Open(ctx context.Context) error {
	logger, err := c.Config.NewLogger(c.Main.Stderr)
	if err != nil {
		return err
	}
	c.logger = logger
	var tokens *qhttp.Tokens
	if !c.Worker {
		secret, err := app.LoadSecret(c.Config.DataDir, c.JWTSecret)
		if err != nil {
			return err
		}
		if tokens, err = qhttp.NewTokens(secret, c.Main.Now); err != nil {
			return err
		}
		jwks, err := c.JWKS.open(ctx, logger, c.Main.Now)
		if err != nil {
			return err
		}
		if jwks != nil {
			tokens.UseJWKS(jwks)
			run, stop := context.WithCancel(context.Background())
			c.stopJWKS, c.jwksDone = stop, make(chan struct{})
			go func() {
				defer close(c.jwksDone)
				jwks.Run(run)
			}()
			logger.Info("shoppers' tokens from the identity provider", "jwks", c.JWKS.Source, "issuer", c.JWKS.Issuer,
				"audience", c.JWKS.Audience, "user_claim", c.JWKS.UserClaim, "hs256", c.JWKS.AllowHS256)
		}
	}
	if c.app, err = app.Open(ctx, c.Config, c.role(), logger); err != nil {
		return err
	}
	if err := c.app.Start(); err != nil {
		return err
	}
	if c.AdminAddr != "" {
		if c.admin, err = openAdmin(c.AdminAddr, c.app, &c.drain, logger); err != nil {
			return err
		}
		logger.Info("quan admin listening", "url", c.admin.URL())
	}
	cfg := c.app.Config
	if c.Worker {
		logger.Info("quan worker running", "data", cfg.DataDir, "store", app.Redact(cfg.StoreURL),
			"cache", app.Redact(cfg.CacheURL), "bus", cfg.BusURL, "runner", !cfg.Runner.Off)
		return nil
	}
	c.server, err = c.app.HTTPServer(tokens)
	if err != nil {
		return err
	}
	c.server.Drain = &c.drain
	if err := c.server.Open(c.Addr); err != nil {
		c.server = nil
		return err
	}
	logger.Info("quan serving", "url", c.server.URL(), "data", cfg.DataDir, "store", app.Redact(cfg.StoreURL))
	return nil
}

// URL is the server's base URL once open.
func (c *ServeCommand) URL() string { return c.server.URL() }

// AdminURL is the admin listener's base URL, "" without one.
func (c *ServeCommand) AdminURL() string {
	if c.admin == nil {
		return ""
	}
	return c.admin.URL()
}

// App is the process's wiring once open.
func (c *ServeCommand) App() *app.App { return c.app }

// DefaultDrainDelay is --drain-delay's default: a few of a load
// balancer's readiness probes.
const DefaultDrainDelay = 5 * time.Second

// Close fails readiness and waits DrainDelay, while requests are still
// served, then drains requests in flight within ShutdownTimeout, stops the
// loops and closes the backends. It is safe to call twice.
func (c *ServeCommand) Close() error {
	if (c.server != nil || c.admin != nil) && !c.drain.Draining() {
		c.drain.Start()
		if c.DrainDelay > 0 {
			c.logger.Info("draining: /readyz answers 503 until the drain", "delay", c.DrainDelay)
			select {
			case <-time.After(c.DrainDelay):
			case <-c.delayDone:
			}
		}
	}
	var errs []error
	if c.server != nil {
		ctx, cancel := context.WithTimeout(context.Background(), c.ShutdownTimeout)
		defer cancel()
		errs = append(errs, c.server.Close(ctx))
		c.server = nil
		c.logger.Info("quan stopped")
	}
	if c.admin != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		errs = append(errs, c.admin.Close(ctx))
		cancel()
		c.admin = nil
	}
	if c.stopJWKS != nil {
		c.stopJWKS()
		<-c.jwksDone
		c.stopJWKS = nil
	}
	if c.app != nil {
		c.app.Close()
		c.app = nil
	}
	return errors.Join(errs...)
}
