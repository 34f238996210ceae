package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"time"

	qhttp "github.com/quanhq/quan/http"
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
	return c.Main.parseFlags(fs, args)
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
	if c.Worker {
		// A worker with --runner=false claims no task: it only applies
		// the chunks others publish, which needs a bus.
		if !c.Runner.Run && store.bus == nil {
			return errors.New("worker: --runner=false leaves a worker nothing to do without a --bus nats://")
		}
		c.stop = app.startDistributor(logger, c.Runner.Run)
		logger.Info("quan worker running", "data", c.DataDir, "store", redact(c.StoreURL),
			"cache", redact(c.CacheURL), "bus", c.BusURL, "runner", c.Runner.Run)
		return nil
	}
	c.server = &qhttp.Server{
		Templates: app.templates,
		Tasks:     app.tasks,
		Tokens:    tokens,
		Logger:    logger,
		Ready:     store.Ping,
		Now:       c.Main.Now,
	}
	if c.Runner.Run {
		c.stop = app.startDistributor(logger, true)
	}
	if err := c.server.Open(c.Addr); err != nil {
		return err
	}
	logger.Info("quan serving", "url", c.server.URL(), "data", c.DataDir, "store", redact(c.StoreURL))
	return nil
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
