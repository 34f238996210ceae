package app

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/cmd/quan/internal/cli"
	"github.com/quanhq/quan/inmem"
	"github.com/quanhq/quan/mysql"
	natsbus "github.com/quanhq/quan/nats"
	"github.com/quanhq/quan/redis"
	"github.com/quanhq/quan/sqlite"
)

// Backends are the engines one process runs on.
type Backends struct {
	Store     quan.Store
	ChunkSize int // rows a transaction that the store handles best
	// Shared says the store is shared by processes (mysql): each process's
	// memory is then its own and must not hold what the others need.
	Shared bool

	Cache quan.Cache // nil: the store alone checks and reserves
	// SharedCache is Cache when the processes share it (Redis): it is then
	// also the claims' ClaimCache, their ledger and one-call reserver, the
	// Limiter and the Idempotency store. nil: Cache, if any, is this
	// process's own.
	SharedCache quan.SharedCache
	Bus         quan.Bus // nil: a task's chunks stay in the process reading it

	// ClaimBus carries claims to the store: Bus, or for a Server on the
	// embedded default a NATS server in this process. nil: no claims here.
	ClaimBus quan.Bus
	// ClaimCache reserves claims: Cache, or this process's memory.
	ClaimCache  quan.Cache
	Limiter     quan.RateLimiter // where the cache is, so every process shares it
	Idempotency quan.Idempotency // likewise

	closers []func()
}

// pinger is a backend that tells whether it answers.
type pinger interface {
	Ping(ctx context.Context) error
}

// Checks are the readiness checks of the backends this process uses: the
// store always, the cache and the buses when they are shared or embedded
// servers (an in-process cache always answers).
func (b *Backends) Checks() map[string]func(context.Context) error {
	checks := map[string]func(context.Context) error{"store": b.Store.Ping}
	if b.SharedCache != nil {
		checks["cache"] = b.SharedCache.Ping
	}
	if p, ok := b.ClaimBus.(pinger); ok {
		checks["bus"] = p.Ping
	} else if p, ok := b.Bus.(pinger); ok {
		checks["bus"] = p.Ping
	}
	return checks
}

// Close closes what OpenBackends opened, in reverse order. It is safe to
// call twice.
func (b *Backends) Close() {
	for i := len(b.closers) - 1; i >= 0; i-- {
		b.closers[i]()
	}
	b.closers = nil
}

// OpenBackends opens the store, the cache and the bus cfg's URLs name, and
// for a Server on the embedded default an in-process NATS server keeping
// its data in DATA/nats, which claims ride. This is the one place a
// backend is chosen by its URL's scheme.
func OpenBackends(ctx context.Context, cfg Config, role Role, logger *slog.Logger) (_ *Backends, err error) {
	cfg = cfg.withDefaults()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	b := &Backends{}
	defer func() {
		if err != nil {
			b.Close()
		}
	}()

	storeScheme, rest, _ := strings.Cut(cfg.StoreURL, ":")
	switch storeScheme {
	case StoreSQLite:
		db, err := sqlite.OpenOptions(ctx, sqlitePath(cfg.DataDir, rest), logger, sqlite.Options{NoMigrate: cfg.NoMigrate})
		if err != nil {
			return nil, migrateHint(cfg, fmt.Errorf("open sqlite store: %w", err))
		}
		b.closers = append(b.closers, func() { db.Close() })
		b.Store, b.ChunkSize = sqlite.NewStore(db), sqlite.ChunkSize
	case StoreMySQL:
		db, err := mysql.OpenOptions(ctx, cfg.StoreURL, logger, mysql.Options{NoMigrate: cfg.NoMigrate})
		if err != nil {
			return nil, migrateHint(cfg, fmt.Errorf("open mysql store: %w", err))
		}
		b.closers = append(b.closers, func() { db.Close() })
		b.Store, b.ChunkSize, b.Shared = mysql.NewStore(db), mysql.ChunkSize, true
	default:
		return nil, fmt.Errorf("--store %q: unknown scheme %q (use sqlite: or mysql://)", cfg.StoreURL, storeScheme)
	}

	cacheScheme, _, _ := strings.Cut(cfg.CacheURL, ":")
	switch {
	case cfg.CacheURL == "" && !b.Shared, cfg.CacheURL == "mem:":
		b.Cache = inmem.NewCache()
	case cfg.CacheURL == "" || cfg.CacheURL == "none":
	case cacheScheme == "redis" || cacheScheme == "rediss":
		u, prefix, err := cutQuery(cfg.CacheURL, "prefix")
		if err != nil {
			return nil, fmt.Errorf("--cache: %w", err)
		}
		c, err := redis.Open(ctx, u, cmp.Or(prefix, "quan:"))
		if err != nil {
			return nil, fmt.Errorf("--cache %s: %w", Redact(cfg.CacheURL), err)
		}
		b.closers = append(b.closers, func() { c.Close() })
		b.Cache, b.SharedCache = c, c
	default:
		return nil, fmt.Errorf("--cache %q: unknown cache (use mem:, redis://HOST:PORT or none)", cfg.CacheURL)
	}

	busScheme, _, _ := strings.Cut(cfg.BusURL, ":")
	switch {
	case cfg.BusURL == "embedded:":
		if role == Server {
			srv, err := natsbus.StartEmbedded(ctx, filepath.Join(cfg.DataDir, "nats"), logger)
			if err != nil {
				return nil, fmt.Errorf("start the embedded bus: %w", err)
			}
			b.closers = append(b.closers, srv.Close)
			eb, err := srv.Bus(ctx, natsbus.Config{Logger: logger})
			if err != nil {
				return nil, fmt.Errorf("open the embedded bus: %w", err)
			}
			b.closers = append(b.closers, func() { eb.Close() })
			b.ClaimBus = eb
		}
	case busScheme == "nats":
		if !b.Shared {
			return nil, fmt.Errorf("--bus %s shares a task's chunks between processes, which needs a store they share: use --store mysql://", cfg.BusURL)
		}
		if cfg.CacheURL == "mem:" {
			return nil, fmt.Errorf("--bus %s shares a task's chunks between processes, but --cache mem: is each process's own: use --cache redis:// or none", cfg.BusURL)
		}
		u, stream, err := cutQuery(cfg.BusURL, "stream")
		if err != nil {
			return nil, fmt.Errorf("--bus %s: %w", cfg.BusURL, err)
		}
		u, ns, err := cutQuery(u, "namespace")
		if err != nil {
			return nil, fmt.Errorf("--bus %s: %w", cfg.BusURL, err)
		}
		bus, err := natsbus.OpenConfig(ctx, u, natsbus.Config{Stream: stream, Namespace: ns, Logger: logger})
		if err != nil {
			return nil, fmt.Errorf("--bus %s: %w", cfg.BusURL, err)
		}
		b.closers = append(b.closers, func() { bus.Close() })
		b.Bus, b.ClaimBus = bus, bus
	default:
		return nil, fmt.Errorf("--bus %q: unknown bus (use embedded: or nats://HOST:PORT)", cfg.BusURL)
	}

	b.ClaimCache = b.Cache
	if b.ClaimCache == nil && b.ClaimBus != nil {
		b.ClaimCache = inmem.NewCache()
	}
	// A Redis cache is the limiter and the idempotency store too, so that
	// every process shares them, and a claim takes its tokens and its
	// reservation in one call.
	b.Limiter, b.Idempotency = inmem.NewRateLimiter(), inmem.NewIdempotency()
	if b.SharedCache != nil {
		b.Limiter, b.Idempotency = b.SharedCache, b.SharedCache
	}
	return b, nil
}

// The kinds of store Kinds names, by the schemes of their URLs.
const (
	StoreSQLite = "sqlite"
	StoreMySQL  = "mysql"
)

// sqlitePath is the file of a sqlite: store URL whose path is rest.
func sqlitePath(dataDir, rest string) string {
	return cmp.Or(rest, filepath.Join(dataDir, "quan.db"))
}

// SQLiteFile returns the database file of cfg's store, "" if the store is
// not SQLite.
func SQLiteFile(cfg Config) string {
	cfg = cfg.withDefaults()
	scheme, rest, _ := strings.Cut(cfg.StoreURL, ":")
	if scheme != StoreSQLite {
		return ""
	}
	return sqlitePath(cfg.DataDir, rest)
}

// cutQuery removes the query parameter name from rawURL and returns the
// URL without it and its value.
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

// Redact hides the password of a backend URL, for logs.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.User == nil {
		return rawURL
	}
	if _, ok := u.User.Password(); !ok {
		return rawURL
	}
	u.User = url.UserPassword(u.User.Username(), "xxxxx")
	return u.String()
}

// Kinds names the kind of each backend of cfg, for a benchmark's setup
// line and the flags that need one kind: "sqlite", "mysql" (StoreSQLite,
// StoreMySQL); "mem", "redis", "none"; "embedded", "nats".
func Kinds(cfg Config) (store, cache, bus string) {
	cfg = cfg.withDefaults()
	store, _, _ = strings.Cut(cfg.StoreURL, ":")
	cache, _, _ = strings.Cut(cfg.CacheURL, ":")
	if cache == "" {
		cache = "none"
		if store == StoreSQLite {
			cache = "mem"
		}
	}
	if cache == "rediss" {
		cache = "redis"
	}
	bus, _, _ = strings.Cut(cfg.BusURL, ":")
	return store, cache, bus
}

// Isolated is a configuration made to share nothing with other runs on
// the same servers: a new MySQL database, a Redis key prefix and a NATS
// stream and namespace of its own (Isolate).
type Isolated struct {
	Config   Config
	Database string // the database created
	store    string // its URL
}

// Isolate returns cfg moved onto a new database quan_bench_RANDOM on the
// MySQL server its store names, and, for a redis cache and a nats bus, a
// new key prefix, stream and namespace. Runs then share nothing, neither
// with each other nor with a `quan serve` on the same servers. Drop
// removes all of it.
func Isolate(ctx context.Context, cfg Config) (*Isolated, error) {
	cfg = cfg.withDefaults()
	if !strings.HasPrefix(cfg.StoreURL, "mysql:") {
		return nil, cli.Usagef("--fresh-db makes a MySQL database: use --store mysql://")
	}
	var r [4]byte
	rand.Read(r[:])
	suffix := hex.EncodeToString(r[:])
	iso := &Isolated{Database: "quan_bench_" + suffix}
	store, err := mysql.CreateDatabase(ctx, cfg.StoreURL, iso.Database)
	if err != nil {
		return nil, fmt.Errorf("--fresh-db: %w", err)
	}
	cfg.StoreURL, iso.store = store, store
	if _, cache, _ := Kinds(cfg); cache == "redis" {
		u, err := url.Parse(cfg.CacheURL)
		if err != nil {
			iso.dropDatabase(ctx)
			return nil, fmt.Errorf("--cache: %w", err)
		}
		q := u.Query()
		q.Set("prefix", cmp.Or(q.Get("prefix"), "quan:")+"bench_"+suffix+":")
		u.RawQuery = q.Encode()
		cfg.CacheURL = u.String()
	}
	if _, _, bus := Kinds(cfg); bus == "nats" {
		u, err := url.Parse(cfg.BusURL)
		if err != nil {
			iso.dropDatabase(ctx)
			return nil, fmt.Errorf("--bus: %w", err)
		}
		// A stream of its own, so that message ids of an earlier run (the
		// same task and chunk numbers) are not dropped as duplicates, on
		// subjects of its own, which streams may not share.
		q := u.Query()
		q.Set("stream", cmp.Or(q.Get("stream"), "QUAN")+"_BENCH_"+strings.ToUpper(suffix))
		ns := "bench_" + suffix
		if v := q.Get("namespace"); v != "" {
			ns = v + "." + ns
		}
		q.Set("namespace", ns)
		u.RawQuery = q.Encode()
		cfg.BusURL = u.String()
	}
	iso.Config = cfg
	return iso, nil
}

func (iso *Isolated) dropDatabase(ctx context.Context) error {
	return mysql.DropDatabase(context.WithoutCancel(ctx), iso.store)
}

// Drop deletes the redis keys and nats streams Isolate made up, on
// backends it opens for that, then the database, also when the keys or
// streams cannot be dropped. Whatever used them must be closed first (a
// consumer still running would see its stream vanish).
func (iso *Isolated) Drop(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	var errs []error
	_, cache, bus := Kinds(iso.Config)
	if cache == "redis" || bus == "nats" {
		b, err := OpenBackends(ctx, iso.Config, Local, nil)
		if err != nil {
			errs = append(errs, fmt.Errorf("drop the cache's keys and the bus's streams: %w", err))
		} else {
			if c, ok := b.Cache.(*redis.Cache); ok {
				if err := c.Drop(ctx); err != nil {
					errs = append(errs, fmt.Errorf("drop the cache's keys: %w", err))
				}
			}
			if nb, ok := b.Bus.(*natsbus.Bus); ok {
				if err := nb.Drop(ctx); err != nil {
					errs = append(errs, fmt.Errorf("drop the bus's streams: %w", err))
				}
			}
			b.Close()
		}
	}
	if err := iso.dropDatabase(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
