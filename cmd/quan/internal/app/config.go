// Package app wires quan: it opens every backend the configuration names
// (the one place a backend is chosen by the scheme of its URL), builds
// every use case on them, and runs the background loops a process's role
// asks for. Every command of the binary, and the benchmarks, start here.
package app

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/claims"
	"github.com/quanhq/quan/cmd/quan/internal/cli"
	qhttp "github.com/quanhq/quan/http"
	"github.com/quanhq/quan/sheet"
)

// Role is what a process does, which decides the loops it runs.
type Role int

const (
	// Local is a command working on the data folder (distribute, demo,
	// bench): templates, tasks and the distributor, run by the caller
	// (RunTask); no claims, no sweeper.
	Local Role = iota
	// Worker runs distribution tasks and, with a nats:// bus, applies the
	// chunks others publish and persists claims; no HTTP API.
	Worker
	// Server is `quan serve`: the HTTP API, claims (on an embedded NATS
	// server when no bus is configured), the sweeper, code batches, and
	// the distribution runner unless Runner.Off.
	Server
)

func (r Role) String() string {
	switch r {
	case Worker:
		return "worker"
	case Server:
		return "serve"
	}
	return "local"
}

// Config is everything the wiring needs. Its zero value runs on the
// embedded default in ./quan-data; Register binds it to flags with the
// same defaults.
type Config struct {
	DataDir  string // default ./quan-data
	StoreURL string // sqlite:[PATH] (default) or mysql://…
	CacheURL string // "" (mem: with sqlite, none with mysql), mem:, none or redis://…
	BusURL   string // embedded: (default) or nats://…

	LogLevel  string // debug, info, warn or error; default info
	LogFormat string // text (default) or json

	Files  Files
	Runner Runner
	Claims Claims
	Notify Notify
	Events Events

	// SweepEvery is how often expired coupons and locks that ran out are
	// written down (0: never); ArchiveAfter, if set, how old spent coupons
	// of ended templates are when the sweep moves them to the history
	// table.
	SweepEvery   time.Duration
	ArchiveAfter time.Duration

	// ReconcileEvery is how often the cache is compared with the store
	// and corrected from it (reconcile.Reconciler); 0 never. The zero Config
	// never reconciles; the flag defaults to DefaultReconcileEvery.
	ReconcileEvery time.Duration

	// NoMigrate opens a store only if it has every migration applied
	// (`quan migrate up` applies them) instead of applying those it lacks.
	NoMigrate bool

	// MetricsOff leaves out every metric: no registry, no instruments on
	// the hot paths (to measure what metrics cost).
	MetricsOff bool

	// Tracing, if set, traces requests, claims and tasks with
	// OpenTelemetry; the zero value traces nothing.
	Tracing Tracing

	// HTTP bounds the API's clients and names the proxies whose
	// forwarding headers are believed (quan serve); the zero value takes
	// the defaults and believes no proxy.
	HTTP HTTP

	// Now is the clock of every use case; nil means time.Now.
	Now func() time.Time
}

// Files bound the distribution files quan accepts; zero fields take the
// package defaults.
type Files struct {
	MaxUpload       int64
	MaxRows         int64
	MaxUncompressed int64
}

// Runner tunes the distribution runner; zero fields take the defaults
// Register documents.
type Runner struct {
	Off       bool // run no task: a worker that only applies chunks from the bus
	ChunkSize int  // rows a transaction; 0: the store's recommendation
	Lease     time.Duration
	Poll      time.Duration
	Stall     time.Duration
	AckWait   time.Duration
	ChunkConc int
}

// HTTP configures quan serve's listener.
type HTTP struct {
	// Limits bound slow, idle and too many clients; each zero field
	// takes the default of qhttp.Limits (10s header timeout, 64 KiB of
	// headers, 2m idle, bodies at 1 KiB/s over 20s windows, 4096
	// connections).
	Limits qhttp.Limits
	// TrustedProxies are the reverse proxies whose X-Forwarded-For and
	// X-Real-IP name the client the console's sign-ins are counted
	// under; nil trusts none.
	TrustedProxies qhttp.Proxies
}

func (h *HTTP) register(fs *flag.FlagSet) {
	l := &h.Limits
	fs.DurationVar(&l.HeaderTimeout, "header-timeout", qhttp.DefaultHeaderTimeout, "how long a client has to send a request's line and headers (0: the default)")
	fs.IntVar(&l.MaxHeaderBytes, "max-header-bytes", qhttp.DefaultMaxHeaderBytes, "largest request line and headers, in bytes; larger ones are answered 431 (0: the default)")
	fs.DurationVar(&l.IdleTimeout, "idle-timeout", qhttp.DefaultIdleTimeout, "how long a keep-alive connection may wait for its next request; keep it above the idle timeout of the proxy or load balancer in front (0: the default)")
	fs.IntVar(&l.BodyMinRate, "body-min-rate", qhttp.DefaultBodyMinRate, "bytes a second a request body must keep up, on average over each --body-window spent waiting for it; a slower one is cut off with 408 (0: the default)")
	fs.DurationVar(&l.BodyWindow, "body-window", qhttp.DefaultBodyWindow, "the time over which --body-min-rate is measured: each window must bring rate × window bytes (0: the default)")
	fs.IntVar(&l.MaxConns, "max-conns", qhttp.DefaultMaxConns, "most client connections open at once; past it a new connection is answered 503 with Retry-After: 1 and closed (0: the default)")
	fs.Func("trusted-proxies", "comma-separated CIDRs or IPs of the reverse proxies whose X-Forwarded-For (the rightmost address not theirs) or X-Real-IP names the client; failed console sign-ins are counted per client address (default: none, the connection's address)", func(v string) error {
		ps, err := qhttp.ParseProxies(v)
		if err != nil {
			return err
		}
		h.TrustedProxies = ps
		return nil
	})
}

func (h HTTP) validate() error {
	l := h.Limits
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"header-timeout", l.HeaderTimeout}, {"idle-timeout", l.IdleTimeout}, {"body-window", l.BodyWindow}} {
		if d.v < 0 {
			return cli.Usagef("--%s %v: want 0 (the default) or more", d.flag, d.v)
		}
	}
	for _, n := range []struct {
		flag string
		v    int
	}{{"max-header-bytes", l.MaxHeaderBytes}, {"body-min-rate", l.BodyMinRate}, {"max-conns", l.MaxConns}} {
		if n.v < 0 {
			return cli.Usagef("--%s %d: want 0 (the default) or more", n.flag, n.v)
		}
	}
	return nil
}

// Claims configure the claim API's limits and the pace of its store
// writes (claims.Service).
type Claims struct {
	Limits      claims.Limits
	PersistRate float64
	// Promo bounds the wrong promo codes a user types (口令券).
	Promo claims.PromoLimit
}

// DefaultClaimLimits are `quan serve`'s claim rate limits.
var DefaultClaimLimits = claims.Limits{UserRate: 10, UserBurst: 20, TemplateRate: 50_000, TemplateBurst: 50_000}

// Flag help for the backends.
const (
	storeHelp = "store: sqlite:[PATH] (default PATH: DATA/quan.db) or mysql://USER[:PASS]@HOST[:PORT]/DB"
	cacheHelp = "cache: mem: (in this process), redis://[USER:PASS@]HOST:PORT[/DB][?prefix=quan:] or none (default: mem: with a sqlite store, none with mysql)"
	busHelp   = "bus: embedded: (chunks stay in the process that reads the file) or nats://HOST:PORT[?stream=QUAN&namespace=NS] (workers share each task's chunks)"
)

// RegisterBackends binds --data, --store, --cache, --bus and --log-level
// (default level: warn for Local, info otherwise) to c.
func (c *Config) RegisterBackends(fs *flag.FlagSet, role Role) {
	fs.StringVar(&c.DataDir, "data", "./quan-data", "data folder (SQLite database, token secret, uploads, embedded NATS)")
	fs.StringVar(&c.StoreURL, "store", "sqlite:", storeHelp)
	fs.StringVar(&c.CacheURL, "cache", "", cacheHelp)
	fs.StringVar(&c.BusURL, "bus", "embedded:", busHelp)
	level := "info"
	if role == Local {
		level = "warn"
	}
	fs.StringVar(&c.LogLevel, "log-level", level, "debug, info, warn or error")
}

// Register binds every flag of a process of role to c: the backends, the
// file limits, the runner and, for workers and servers, the sweeper and
// claims.
func (c *Config) Register(fs *flag.FlagSet, role Role) {
	c.RegisterBackends(fs, role)
	fs.Int64Var(&c.Files.MaxUpload, "max-upload", quan.DefaultMaxFileSize, "largest distribution file accepted, in bytes")
	fs.Int64Var(&c.Files.MaxRows, "max-rows", sheet.DefaultMaxRows, "most data rows in a distribution file")
	fs.Int64Var(&c.Files.MaxUncompressed, "max-uncompressed", sheet.DefaultMaxUncompressed, "most bytes any part of an .xlsx may inflate to (zip-bomb guard)")
	r := &c.Runner
	if role != Local {
		fs.BoolFunc("runner", "run distribution tasks in this process (default true; quan worker --runner=false only applies the chunks others publish on a nats:// bus)", func(s string) error {
			on, err := strconv.ParseBool(s)
			r.Off = !on
			return err
		})
	}
	fs.IntVar(&r.ChunkSize, "chunk-size", 0, "rows applied per transaction (default: the store's recommendation)")
	fs.DurationVar(&r.Lease, "task-lease", 15*time.Second, "how long a dead runner keeps its task before another resumes it")
	fs.DurationVar(&r.Poll, "task-poll", time.Second, "how often the runner looks for due tasks")
	fs.IntVar(&r.ChunkConc, "chunk-concurrency", 2, "with a nats:// bus: how many chunks this process applies at once")
	fs.DurationVar(&r.AckWait, "chunk-ack-wait", quan.DefaultAckWait, "with a nats:// bus: how long a worker may take over a chunk before it goes to another")
	fs.DurationVar(&r.Stall, "chunk-stall", time.Minute, "with a nats:// bus: how long a task may make no progress before its missing chunks are published again")
	if role == Local {
		return
	}
	fs.StringVar(&c.LogFormat, "log-format", "text", "text or json")
	fs.BoolFunc("migrate", "apply the store's pending schema migrations at start (default true); with --migrate=false a store with migrations pending is refused: apply them first with quan migrate up", func(s string) error {
		on, err := strconv.ParseBool(s)
		c.NoMigrate = !on
		return err
	})
	fs.BoolFunc("metrics", "count and time what this process does for /metrics on the admin listener (default true)", func(s string) error {
		on, err := strconv.ParseBool(s)
		c.MetricsOff = !on
		return err
	})
	c.Tracing.register(fs)
	c.Notify.register(fs)
	c.Events.register(fs)
	fs.DurationVar(&c.SweepEvery, "sweep-every", time.Minute, "how often to write down expired coupons and locks that ran out (0: never)")
	fs.DurationVar(&c.ReconcileEvery, "reconcile-every", DefaultReconcileEvery, "how often to compare the cache's stock and holdings with the store's for active templates, report the drift and correct the cache from the store (0: never)")
	fs.DurationVar(&c.ArchiveAfter, "archive-after", 0, "move used, expired and revoked coupons of ended templates this long unchanged to the history table (0: never)")
	fs.Float64Var(&c.Claims.PersistRate, "claim-persist-rate", 0, fmt.Sprintf("while this process takes claims, write at most this many a second to the store; the rest wait on the bus until claims stop for a second (0: no limit; else at least %d)", claims.MinPersistRate))
	if role != Server {
		return
	}
	c.HTTP.register(fs)
	l := &c.Claims.Limits
	fs.Float64Var(&l.UserRate, "claim-rate-user", DefaultClaimLimits.UserRate, "claims a second one user may make (token bucket; 0: no limit)")
	fs.IntVar(&l.UserBurst, "claim-burst-user", DefaultClaimLimits.UserBurst, "claims one user may make at once")
	fs.Float64Var(&l.TemplateRate, "claim-rate-template", DefaultClaimLimits.TemplateRate, "claims a second of one template (0: no limit)")
	fs.IntVar(&l.TemplateBurst, "claim-burst-template", DefaultClaimLimits.TemplateBurst, "claims of one template at once")
	fs.IntVar(&c.Claims.Promo.Wrong, "promo-wrong-codes", claims.DefaultPromoWrong, "wrong promo codes one user may type at once, refilled at that many per --promo-wrong-window (a token bucket); while none is left every code the user types is refused 429")
	fs.DurationVar(&c.Claims.Promo.Window, "promo-wrong-window", claims.DefaultPromoWindow, "the window of --promo-wrong-codes")
}

// withDefaults fills the fields the zero Config leaves empty.
func (c Config) withDefaults() Config {
	if c.DataDir == "" {
		c.DataDir = "./quan-data"
	}
	if c.StoreURL == "" {
		c.StoreURL = "sqlite:"
	}
	if c.BusURL == "" {
		c.BusURL = "embedded:"
	}
	if c.LogLevel == "" {
		c.LogLevel = "info"
	}
	if c.LogFormat == "" {
		c.LogFormat = "text"
	}
	f := &c.Files
	if f.MaxUpload == 0 {
		f.MaxUpload = quan.DefaultMaxFileSize
	}
	if f.MaxRows == 0 {
		f.MaxRows = sheet.DefaultMaxRows
	}
	if f.MaxUncompressed == 0 {
		f.MaxUncompressed = sheet.DefaultMaxUncompressed
	}
	c.Notify = c.Notify.withDefaults()
	r := &c.Runner
	if r.Lease == 0 {
		r.Lease = 15 * time.Second
	}
	if r.Poll == 0 {
		r.Poll = time.Second
	}
	if r.Stall == 0 {
		r.Stall = time.Minute
	}
	if r.AckWait == 0 {
		r.AckWait = quan.DefaultAckWait
	}
	if r.ChunkConc == 0 {
		r.ChunkConc = 2
	}
	return c
}

// DefaultReconcileEvery is --reconcile-every's default.
const DefaultReconcileEvery = time.Minute

// Validate reports the first setting that cannot work, naming its flag.
func (c Config) Validate() error {
	if p := c.Claims.Promo; p.Wrong < 0 || p.Window < 0 {
		return cli.Usagef("--promo-wrong-codes %d --promo-wrong-window %v: want 1 or more in a positive window (0: the defaults, %d in %v)", p.Wrong, p.Window, claims.DefaultPromoWrong, claims.DefaultPromoWindow)
	}
	if p := c.Claims.PersistRate; p != 0 && !(p >= claims.MinPersistRate) {
		return cli.Usagef("--claim-persist-rate %v: want 0 (no limit) or at least %d claims a second", p, claims.MinPersistRate)
	}
	if c.ReconcileEvery < 0 {
		return cli.Usagef("--reconcile-every %v: want 0 (never) or more", c.ReconcileEvery)
	}
	if err := c.Events.validate(); err != nil {
		return err
	}
	if err := c.Notify.validate(); err != nil {
		return err
	}
	if err := c.HTTP.validate(); err != nil {
		return err
	}
	if c.Runner.ChunkSize < 0 {
		return cli.Usagef("--chunk-size %d: want 0 (the store's recommendation) or more", c.Runner.ChunkSize)
	}
	return c.Tracing.validate()
}

// NewLogger returns the logger c's level and format ask for, writing to
// w.
func (c Config) NewLogger(w io.Writer) (*slog.Logger, error) {
	c = c.withDefaults()
	return cli.NewLogger(w, c.LogLevel, c.LogFormat)
}
