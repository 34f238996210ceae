// Package mysql is quan's store on a MySQL 8 or MariaDB 10.11+ server:
// the quan store ports on InnoDB, through github.com/go-sql-driver/mysql.
//
// # Storage
//
// Times are DATETIME(6) in UTC: the session's time_zone is +00:00 and the
// driver writes and reads time.Time values in UTC, to the microsecond, the
// precision quan keeps everywhere. A time that does not apply (the zero
// time.Time) is NULL. Money is BIGINT fen. Text is utf8mb4 with the binary
// collation. The schema lives in migrations/*.sql, applied in order by
// Open.
//
// # Concurrency
//
// Writes run in READ COMMITTED transactions that lock what they change
// with SELECT ... FOR UPDATE, so every read that decides a write sees the
// latest committed rows, and InnoDB takes no gap locks for plain reads.
// A transaction that InnoDB chose as a deadlock victim (1213) or that
// waited too long for a lock (1205) is run again, the whole closure, a few
// times with a short jittered backoff: the store owns BEGIN, locking,
// COMMIT and the retry. ApplyChunk is the exception, for speed: it plans
// a chunk without locks and checks the plan once it holds them. Lists read in a READ ONLY transaction at the
// server's default isolation (REPEATABLE READ), so a page and its total
// see one snapshot.
//
// # Bulk distribution
//
// See ApplyChunk and ChunkSize. A chunk's coupons go in by LOAD DATA
// LOCAL INFILE, from memory, when the server allows it (local_infile=ON,
// MariaDB's default; MySQL 8 needs it set), else by multi-row INSERTs,
// which cost the server about twice the CPU.
package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/sqlrow"
)

// maxOpenConns bounds a DB's connections. A stampede of claims queues in
// database/sql rather than opening a connection per claim (the server
// allows 151 by default); on the row lock they all want, more connections
// would only wait longer inside InnoDB.
const maxOpenConns = 16

// txAttempts is how often a transaction that hit a deadlock or a lock wait
// timeout is tried in all.
const txAttempts = 5

// DB is an open quan database on a MySQL or MariaDB server.
type DB struct {
	db     *sql.DB
	logger *slog.Logger

	noLoad atomic.Bool  // the server refused LOAD DATA LOCAL INFILE
	loads  atomic.Int64 // names the readers of LOAD DATA statements
	// consecutiveIDs: a multi-row INSERT gets consecutive AUTO_INCREMENT
	// ids, from the one LAST_INSERT_ID reports (see consecutiveIDs).
	consecutiveIDs atomic.Bool
	// retries counts what was tried again after a deadlock, a lock wait
	// timeout or a concurrent change (quan.MonitorStore.StoreRetries).
	retries atomic.Int64
	// countedSwaps counts the swaps written with their counters in one
	// statement (SwapCoupons), for tests.
	countedSwaps atomic.Int64

	codes *sqlrow.Codes // the key of the coupons' codes, read by Open
	// budgets remembers the templates' budgets the wallet's writes met.
	budgets sqlrow.Budgets

	closeOnce sync.Once
	closeErr  error
	closed    atomic.Bool // Close began: every call fails unavailable (outage)
}

// Open connects to the database named by dsn, applies the migrations it
// lacks and reads the key of the coupons' codes from it (quan.CodeKey),
// which the first process to open the database makes. dsn is in the driver's form, user:pass@tcp(host:3306)/quan?params,
// or a URL, mysql://user:pass@host:3306/quan?params. Whatever it says, the
// connection parses times in UTC (parseTime, loc=UTC), interpolates
// parameters on the client (interpolateParams: one round trip a statement,
// measured 7.1 s against 9.2 s with server-side prepares for a million
// rows), reports found rather than changed rows (clientFoundRows), sets the
// session's time_zone to +00:00 and a strict sql_mode, and never allows
// several statements in one query. A nil logger discards.
func Open(ctx context.Context, dsn string, logger *slog.Logger) (*DB, error) {
	return OpenOptions(ctx, dsn, logger, Options{})
}

// Options tune OpenOptions; the zero value opens as Open does.
type Options struct {
	// NoMigrate applies no migration: a database lacking one is not
	// opened, with an error wrapping ErrMigrationsPending that names
	// them (apply them first, as `quan migrate up` does, with Open).
	NoMigrate bool
}

// OpenOptions is Open with opt.
func OpenOptions(ctx context.Context, dsn string, logger *slog.Logger, opt Options) (*DB, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("open mysql: %w", err)
	}
	cfg.Logger = driverLogger{logger}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("open mysql %s: %w", cfg.Addr, err)
	}
	db := &DB{db: sql.OpenDB(connector), logger: logger}
	db.db.SetMaxOpenConns(maxOpenConns)
	db.db.SetMaxIdleConns(maxOpenConns)
	db.db.SetConnMaxIdleTime(5 * time.Minute)
	if err := db.db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open mysql %s/%s: %w", cfg.Addr, cfg.DBName, err)
	}
	if err := db.migrate(ctx, opt.NoMigrate); err != nil {
		db.Close()
		return nil, fmt.Errorf("open mysql %s/%s: %w", cfg.Addr, cfg.DBName, err)
	}
	ok, err := consecutiveIDs(ctx, db.db)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open mysql %s/%s: %w", cfg.Addr, cfg.DBName, err)
	}
	db.consecutiveIDs.Store(ok)
	if db.codes, err = sqlrow.OpenCodes(ctx, db.db, `INSERT IGNORE INTO secrets (name, value) VALUES (?, ?)`); err != nil {
		db.Close()
		return nil, fmt.Errorf("open mysql %s/%s: %w", cfg.Addr, cfg.DBName, err)
	}
	return db, nil
}

// consecutiveIDs reports whether the server hands a multi-row INSERT of
// known length (a "simple insert") consecutive AUTO_INCREMENT ids: InnoDB
// does in its traditional (0) and consecutive (1) lock modes, MariaDB's
// default, not in the interleaved mode (2, MySQL 8's default, and
// Galera's), and only with an increment of 1. Then the ids of the rows an
// INSERT wrote follow from LAST_INSERT_ID, the first of them, and need not
// be read back.
func consecutiveIDs(ctx context.Context, db *sql.DB) (bool, error) {
	var mode, increment int64
	if err := db.QueryRowContext(ctx, `SELECT @@innodb_autoinc_lock_mode, @@auto_increment_increment`).Scan(&mode, &increment); err != nil {
		return false, fmt.Errorf("read the auto-increment settings: %w", err)
	}
	return (mode == 0 || mode == 1) && increment == 1, nil
}

// ParseDSN parses dsn as Open does, in the driver's form or as a
// mysql:// URL, and returns the driver configuration Open uses, with its
// fixed settings applied. It reports an error if dsn names no database.
func ParseDSN(dsn string) (*mysql.Config, error) {
	var cfg *mysql.Config
	var err error
	if strings.HasPrefix(dsn, "mysql://") {
		cfg, err = parseURL(dsn)
	} else {
		cfg, err = mysql.ParseDSN(dsn)
	}
	if err != nil {
		return nil, err
	}
	if cfg.DBName == "" {
		return nil, errors.New("the data source names no database")
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.InterpolateParams = true
	cfg.ClientFoundRows = true
	cfg.MultiStatements = false
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	// The driver runs SET name=value for each on every new connection.
	cfg.Params["time_zone"] = "'+00:00'"
	cfg.Params["sql_mode"] = "'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION'"
	return cfg, nil
}

// parseURL reads mysql://user:pass@host:port/db?params into the driver's
// configuration; the parameters mean what they mean in the driver's form.
func parseURL(dsn string) (*mysql.Config, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse mysql URL: %w", err)
	}
	host := u.Host
	if host == "" {
		host = "127.0.0.1:3306"
	} else if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "3306")
	}
	// The driver's parser reads the parameters; the user and password are
	// set afterwards so that they may hold any character.
	cfg, err := mysql.ParseDSN("tcp(" + host + ")/" + strings.TrimPrefix(u.EscapedPath(), "/") + "?" + u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("parse mysql URL: %w", err)
	}
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	return cfg, nil
}

// Close closes the connections. It is safe to call more than once; later
// calls return the first call's result.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		db.closed.Store(true)
		if err := db.db.Close(); err != nil {
			db.closeErr = fmt.Errorf("close mysql: %w", err)
		}
	})
	return db.closeErr
}

// Ping reports whether the server is reachable.
func (db *DB) Ping(ctx context.Context) (err error) {
	defer db.unavailable(&err)
	if err := db.db.PingContext(ctx); err != nil {
		return fmt.Errorf("ping mysql: %w", err)
	}
	return nil
}

// inTx runs fn in a READ COMMITTED transaction and commits it if fn
// returns nil. A deadlock or a lock wait timeout, in fn or at COMMIT, rolls
// back and runs fn again in a new transaction, up to txAttempts times in
// all: fn must start from scratch each time (load what it changes, keep
// no state from an earlier attempt). Any other error of fn is returned as
// it is.
func (db *DB) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := db.tryTx(ctx, fn)
		if err == nil || !retryable(err) || attempt == txAttempts {
			return err
		}
		// 1–2 ms, then 2–4, 4–8 …: enough for the winner to commit, and
		// jittered so that the losers do not collide again in step.
		d := time.Millisecond << (attempt - 1)
		d += rand.N(d)
		db.retries.Add(1)
		db.logger.Debug("retrying a transaction", "attempt", attempt, "after", d, "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(d):
		}
	}
}

func (db *DB) tryTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := db.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", translate(err))
	}
	return nil
}

// MySQL and MariaDB error numbers the store acts on.
const (
	errDupEntry        = 1062
	errLockWaitTimeout = 1205
	errDeadlock        = 1213
	// A LOAD DATA chosen as a deadlock's victim, or timed out, while it
	// waited for the table's AUTO-INC lock: InnoDB reports that it could
	// not read the AUTO_INCREMENT value, not the deadlock.
	errAutoincReadFailed = 1467
)

// retryable reports whether err is a deadlock or a lock wait timeout, after
// which the whole transaction may be run again.
func retryable(err error) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	switch me.Number {
	case errDeadlock, errLockWaitTimeout, errAutoincReadFailed:
		return true
	}
	return false
}

// translate maps a driver error to quan's vocabulary where one applies: a
// duplicate key (1062) is quan.ErrConflict. The driver error stays in the
// chain for logs and for retryable; other errors are returned as they are.
// sql.ErrNoRows is left to the caller, which knows what was not found.
func translate(err error) error {
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == errDupEntry {
		return fmt.Errorf("%w: %w", quan.ErrConflict, err)
	}
	return err
}

// driverLogger sends the driver's own complaints (a connection closed
// under it, say) to the DB's logger instead of the standard logger.
type driverLogger struct{ l *slog.Logger }

func (d driverLogger) Print(v ...any) { d.l.Warn("mysql driver", "msg", fmt.Sprint(v...)) }
