package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/inmem"
	"github.com/quanhq/quan/mysql"
	natsbus "github.com/quanhq/quan/nats"
	"github.com/quanhq/quan/redis"
	"github.com/quanhq/quan/sqlite"
)

// localFlags are the flags of commands that work on the data folder
// directly rather than through a server.
type localFlags struct {
	DataDir  string
	StoreURL string
	CacheURL string
	BusURL   string
	LogLevel string
	Files    FileFlags
	Runner   RunnerFlags
}

func (l *localFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&l.DataDir, "data", "./quan-data", "data folder")
	registerBackends(fs, &l.StoreURL, &l.CacheURL, &l.BusURL)
	fs.StringVar(&l.LogLevel, "log-level", "warn", "debug, info, warn or error")
	l.Files.register(fs)
	l.Runner.register(fs)
}

// open opens the store and wires the use cases; close releases them.
func (l *localFlags) open(ctx context.Context, m *Main) (*app, func(), error) {
	a, _, closeAll, err := l.openBackends(ctx, m)
	return a, closeAll, err
}

// openBackends is open, also returning the backends the use cases run on.
func (l *localFlags) openBackends(ctx context.Context, m *Main) (*app, *backends, func(), error) {
	logger, err := newLogger(m.Stderr, l.LogLevel, "text")
	if err != nil {
		return nil, nil, nil, err
	}
	if err := os.MkdirAll(l.DataDir, 0o700); err != nil {
		return nil, nil, nil, fmt.Errorf("create data folder: %w", err)
	}
	b, closeAll, err := openBackends(ctx, l.StoreURL, l.CacheURL, l.BusURL, l.DataDir, logger)
	if err != nil {
		return nil, nil, nil, err
	}
	a, err := m.wire(b, l.DataDir, l.Files, l.Runner, logger)
	if err != nil {
		closeAll()
		return nil, nil, nil, err
	}
	return a, b, closeAll, nil
}

// Flag help for the backends, shared by every command that opens them.
const (
	storeHelp = "store: sqlite:[PATH] (default PATH: DATA/quan.db) or mysql://USER[:PASS]@HOST[:PORT]/DB"
	cacheHelp = "cache: mem: (in this process), redis://[USER:PASS@]HOST:PORT[/DB][?prefix=quan:] or none (default: mem: with a sqlite store, none with mysql)"
	busHelp   = "bus: embedded: (chunks stay in the process that reads the file) or nats://HOST:PORT[?stream=QUAN&namespace=NS] (workers share each task's chunks)"
)

// registerBackends registers --store, --cache and --bus.
func registerBackends(fs *flag.FlagSet, store, cache, bus *string) {
	fs.StringVar(store, "store", "sqlite:", storeHelp)
	fs.StringVar(cache, "cache", "", cacheHelp)
	fs.StringVar(bus, "bus", "embedded:", busHelp)
}

// backends are the engines quan runs on.
type backends struct {
	openedStore
	cache quan.Cache // nil: the store alone checks and reserves
	bus   quan.Bus   // nil: a task's chunks stay in the process reading it
}

// openBackends opens the store, the cache and the bus their URLs name;
// this and openStore are the one place backends are chosen. close closes
// what was opened, in reverse order.
func openBackends(ctx context.Context, storeURL, cacheURL, busURL, dataDir string, logger *slog.Logger) (*backends, func(), error) {
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	st, closeStore, err := openStore(ctx, storeURL, dataDir, logger)
	if err != nil {
		return nil, nil, err
	}
	closers = append(closers, closeStore)
	b := &backends{openedStore: st}
	shared := !strings.HasPrefix(storeURL, "sqlite:")

	cacheScheme, _, _ := strings.Cut(cacheURL, ":")
	switch {
	case cacheURL == "" && !shared, cacheURL == "mem:":
		b.cache = inmem.NewCache()
	case cacheURL == "" || cacheURL == "none":
	case cacheScheme == "redis" || cacheScheme == "rediss":
		u, prefix, err := cutQuery(cacheURL, "prefix")
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("--cache: %w", err)
		}
		c, err := redis.Open(ctx, u, cmp.Or(prefix, "quan:"))
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("--cache %s: %w", redact(cacheURL), err)
		}
		closers = append(closers, func() { c.Close() })
		b.cache = c
	default:
		closeAll()
		return nil, nil, fmt.Errorf("--cache %q: unknown cache (use mem:, redis://HOST:PORT or none)", cacheURL)
	}

	busScheme, _, _ := strings.Cut(busURL, ":")
	switch {
	case busURL == "" || busURL == "embedded:":
	case busScheme == "nats":
		if !shared {
			closeAll()
			return nil, nil, fmt.Errorf("--bus %s shares a task's chunks between processes, which needs a store they share: use --store mysql://", busURL)
		}
		if cacheURL == "mem:" {
			closeAll()
			return nil, nil, fmt.Errorf("--bus %s shares a task's chunks between processes, but --cache mem: is each process's own: use --cache redis:// or none", busURL)
		}
		u, stream, err := cutQuery(busURL, "stream")
		if err == nil {
			var ns string
			u, ns, err = cutQuery(u, "namespace")
			if err == nil {
				var bus *natsbus.Bus
				bus, err = natsbus.OpenConfig(ctx, u, natsbus.Config{Stream: stream, Namespace: ns, Logger: logger})
				if err == nil {
					closers = append(closers, func() { bus.Close() })
					b.bus = bus
				}
			}
		}
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("--bus %s: %w", busURL, err)
		}
	default:
		closeAll()
		return nil, nil, fmt.Errorf("--bus %q: unknown bus (use embedded: or nats://HOST:PORT)", busURL)
	}
	return b, closeAll, nil
}

// cutQuery removes the query parameter name from rawURL, which must have
// no other, and returns the URL without it and its value.
func cutQuery(rawURL, name string) (string, string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", "", err
	}
	q := u.Query()
	v := q.Get(name)
	q.Del(name)
	u.RawQuery = q.Encode()
	return u.String(), v, nil
}

// openedStore is a store and what suits it.
type openedStore struct {
	store
	chunkSize int // rows per transaction that the engine handles best
}

// openStore picks the store adapter by the scheme of its URL; this is the
// one place backends are chosen.
func openStore(ctx context.Context, url, dataDir string, logger *slog.Logger) (openedStore, func(), error) {
	scheme, rest, _ := strings.Cut(url, ":")
	switch scheme {
	case "sqlite":
		path := rest
		if path == "" {
			path = filepath.Join(dataDir, "quan.db")
		}
		db, err := sqlite.Open(ctx, path, logger)
		if err != nil {
			return openedStore{}, nil, fmt.Errorf("open sqlite store: %w", err)
		}
		return openedStore{sqlite.NewStore(db), sqlite.ChunkSize}, func() { db.Close() }, nil
	case "mysql":
		db, err := mysql.Open(ctx, url, logger)
		if err != nil {
			return openedStore{}, nil, fmt.Errorf("open mysql store: %w", err)
		}
		return openedStore{mysql.NewStore(db), mysql.ChunkSize}, func() { db.Close() }, nil
	}
	return openedStore{}, nil, fmt.Errorf("--store %q: unknown scheme %q (use sqlite: or mysql://)", url, scheme)
}

// parseFlagsArg parses flags and exactly one positional argument, which
// may stand before or after the flags.
func (m *Main) parseFlagsArg(fs *flag.FlagSet, args []string, what string) (string, error) {
	// Let the argument come first, as in "quan distribute users.xlsx --template 1".
	var pos []string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		pos, args = args[:1], args[1:]
	}
	fs.SetOutput(m.Stderr)
	if err := fs.Parse(args); err != nil {
		return "", errUsage
	}
	pos = append(pos, fs.Args()...)
	if len(pos) != 1 {
		return "", fmt.Errorf("%s: want one %s, got %d arguments", fs.Name(), what, len(pos))
	}
	if err := m.parseFlags(fs, nil); err != nil {
		return "", err
	}
	return pos[0], nil
}
