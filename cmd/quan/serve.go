package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/quanhq/quan"
	qhttp "github.com/quanhq/quan/http"
	"github.com/quanhq/quan/sqlite"
)

// ServeCommand runs the HTTP API until its context ends.
type ServeCommand struct {
	Main *Main

	Addr            string
	DataDir         string
	StoreURL        string
	JWTSecret       string
	LogLevel        string
	LogFormat       string
	ShutdownTimeout time.Duration

	logger *slog.Logger
	db     *sqlite.DB
	server *qhttp.Server
}

// ParseFlags reads the flags, then QUAN_* variables for those not given.
func (c *ServeCommand) ParseFlags(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&c.Addr, "addr", ":8080", "listen address")
	fs.StringVar(&c.DataDir, "data", "./quan-data", "data folder (SQLite database, token secret, uploads)")
	fs.StringVar(&c.StoreURL, "store", "sqlite:", "store: sqlite:[PATH] (default PATH: DATA/quan.db)")
	fs.StringVar(&c.JWTSecret, "jwt-secret", "", "token signing secret, at least 32 bytes (default: generated once, kept in the data folder)")
	fs.StringVar(&c.LogLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&c.LogFormat, "log-format", "text", "text or json")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "how long to drain requests in flight on SIGINT/SIGTERM")
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
	secret, err := loadSecret(c.DataDir, c.JWTSecret)
	if err != nil {
		return err
	}
	tokens, err := qhttp.NewTokens(secret, nil)
	if err != nil {
		return err
	}
	store, err := c.openStore(ctx)
	if err != nil {
		return err
	}
	c.server = &qhttp.Server{
		Templates: &quan.TemplateService{Store: store},
		Tokens:    tokens,
		Logger:    logger,
		Ready:     store.Ping,
	}
	if err := c.server.Open(c.Addr); err != nil {
		return err
	}
	logger.Info("quan serving", "url", c.server.URL(), "data", c.DataDir, "store", c.StoreURL)
	return nil
}

// openStore picks the store adapter by the scheme of --store.
func (c *ServeCommand) openStore(ctx context.Context) (quan.TemplateStore, error) {
	scheme, rest, _ := strings.Cut(c.StoreURL, ":")
	switch scheme {
	case "sqlite":
		path := rest
		if path == "" {
			path = filepath.Join(c.DataDir, "quan.db")
		}
		db, err := sqlite.Open(ctx, path, c.logger)
		if err != nil {
			return nil, fmt.Errorf("open sqlite store: %w", err)
		}
		c.db = db
		return sqlite.NewStore(db), nil
	}
	return nil, fmt.Errorf("--store %q: unknown scheme %q (use sqlite:)", c.StoreURL, scheme)
}

// URL is the server's base URL once open.
func (c *ServeCommand) URL() string { return c.server.URL() }

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
	if c.db != nil {
		errs = append(errs, c.db.Close())
		c.db = nil
	}
	return errors.Join(errs...)
}
