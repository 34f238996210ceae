// Package sqlite is quan's embedded default store: the quan store ports on
// one SQLite file, through the pure-Go modernc.org/sqlite driver.
//
// # Storage
//
// Times are stored as INTEGER Unix microseconds in UTC and read back as UTC
// time.Time values; a time that does not apply (the zero time.Time) is NULL.
// Microseconds are the precision quan keeps everywhere, so a template reads
// back exactly as it was written. Money is INTEGER fen. The schema lives in
// migrations/*.sql, applied in order by Open.
//
// # Concurrency
//
// SQLite runs one writer at a time. A DB therefore holds two pools on the
// same file. The writer pool has a single connection whose transactions
// begin IMMEDIATE, taking the write lock up front: writers queue inside
// database/sql rather than fail with SQLITE_BUSY when a deferred
// transaction tries to upgrade its read lock. The reader pool has several
// query-only connections that, in WAL mode, read a consistent snapshot
// while the writer works. Other processes on the same file are covered by
// busy_timeout.
//
// # Bulk distribution
//
// ApplyChunk writes a chunk of a distribution in one transaction. With
// random user ids nearly all of its cost is the upkeep of the unique
// (user, template, seq) index. What decides it was measured on a 2-core
// machine with a million users (forms_test.go for the raw inserts,
// bulk_test.go for the whole path):
//
//   - INSERT OR IGNORE rather than INSERT: a multi-row INSERT that may
//     abort makes SQLite keep a statement journal of every page it
//     changes; OR IGNORE cannot abort, and the rows it ignores are exactly
//     the users who hold a coupon already, which the plan needs to know
//     anyway (18 s → 11.5 s for the raw inserts in 50,000-row
//     transactions).
//   - Coupons inserted in user order within a chunk, so each index page
//     is read and changed once per chunk (11.5 s → 4.2 s). SQLite's
//     default 2 MB page cache is then enough: 64 MB bought nothing, and a
//     page of cache costs about twice its size in RSS, since the driver's
//     allocator rounds a 4 KiB page up to an 8 KiB slot.
//   - Chunks of ChunkSize rows: a commit writes every index page the chunk
//     changed, and with random users that is most of the index.
//     ApplyChunk over a million users takes 13–14 s in chunks of 5,000,
//     about 5 s in chunks of 50,000.
//   - A WAL checkpoint every walAutocheckpointPages pages rather than
//     every 1,000, so that several chunks share one write-back.
//   - Anonymous "?" parameters: numbered ones cost the driver a search of
//     the parameter names per bound value (21.7 s → 18 s).
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/sqlrow"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// busyTimeoutMS is how long a connection waits for a lock another process
// holds before giving up with SQLITE_BUSY.
const busyTimeoutMS = 5000

// The writer checkpoints the WAL into the database file inside the commit
// that makes the WAL pass walAutocheckpointPages pages (SQLite's default is
// 1,000). A bulk chunk rewrites most pages of the user index, and each
// checkpoint writes them back once more: a larger WAL lets four or so
// chunks share one write-back, which took a million-row distribution from
// 6.1–6.6 s to 5.4–5.5 s (bulk_test.go). The WAL then holds at most about
// 130 MiB plus one transaction, and the single write that happens to
// trigger a checkpoint waits for the pages written since the last one.
// After a checkpoint the WAL file is cut back to journalSizeLimit bytes.
//
// The page size stays SQLite's 4 KiB. 16 KiB pages made the million-row
// distribution about a fifth faster, but each single write (a one-row
// chunk, like a claim) 1.7 times slower, with 3.7 times the WAL.
const (
	walAutocheckpointPages = 32768
	journalSizeLimit       = 64 << 20
)

// WriterPragmas are the settings of the store's writer connection that
// decide how fast it writes: a benchmark's raw loop on the same engine
// (sqlitetest) takes them too.
func WriterPragmas() []string {
	return []string{
		"journal_mode(WAL)",
		"synchronous(NORMAL)",
		fmt.Sprintf("wal_autocheckpoint(%d)", walAutocheckpointPages),
		fmt.Sprintf("journal_size_limit(%d)", journalSizeLimit),
	}
}

// DB is an open quan database: a writer and a reader pool on one file.
type DB struct {
	write  *sql.DB // one connection, BEGIN IMMEDIATE
	read   *sql.DB // query-only connections
	logger *slog.Logger

	// Hot statements, prepared once per connection.
	readStmts, writeStmts stmtCache

	codes *sqlrow.Codes // the key of the coupons' codes, read by Open

	swaps swapQueue // SwapCoupons waiting for the writer (wallet.go)
	// budgets remembers the templates' budgets the wallet's writes met.
	budgets sqlrow.Budgets

	closeOnce sync.Once
	closeErr  error
	closed    atomic.Bool // Close began: every call fails unavailable (outage)
}

// Open opens the database file at path, creating it if needed, applies
// the migrations it lacks and reads the key of the coupons' codes from it
// (quan.CodeKey), which the first process to open the file makes. path names a file: an in-memory database cannot
// be shared by the two pools. A nil logger discards.
func Open(ctx context.Context, path string, logger *slog.Logger) (*DB, error) {
	return OpenOptions(ctx, path, logger, Options{})
}

// Options tune OpenOptions; the zero value opens as Open does.
type Options struct {
	// NoMigrate applies no migration: a database lacking one is not
	// opened, with an error wrapping ErrMigrationsPending that names
	// them (apply them first, as `quan migrate up` does, with Open).
	NoMigrate bool
}

// OpenOptions is Open with opt.
func OpenOptions(ctx context.Context, path string, logger *slog.Logger, opt Options) (*DB, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("open sqlite: %q is not a file path", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	db := &DB{logger: logger}

	// journal_mode=WAL is persistent, so the reader connections opened
	// after the writer find the file in WAL mode already.
	db.write, err = sql.Open("sqlite", dsn(abs, url.Values{
		"_pragma": append([]string{fmt.Sprintf("busy_timeout(%d)", busyTimeoutMS), "foreign_keys(1)"}, WriterPragmas()...),
		"_txlock": {"immediate"},
	}))
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	db.write.SetMaxOpenConns(1)
	db.write.SetMaxIdleConns(1)
	if err := connectWriter(ctx, db.write); err != nil {
		db.Close()
		return nil, fmt.Errorf("open sqlite %s: connect the writer: %w", path, err)
	}
	if err := db.migrate(ctx, opt.NoMigrate); err != nil {
		db.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	if db.codes, err = sqlrow.OpenCodes(ctx, db.write, `INSERT OR IGNORE INTO secrets (name, value) VALUES (?, ?)`); err != nil {
		db.Close()
		return nil, fmt.Errorf("open sqlite %s: coupon code key: %w", path, err)
	}

	db.read, err = sql.Open("sqlite", dsn(abs, url.Values{
		"_pragma": {
			fmt.Sprintf("busy_timeout(%d)", busyTimeoutMS),
			"foreign_keys(1)",
			"query_only(1)",
		},
	}))
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	db.read.SetMaxOpenConns(n)
	db.read.SetMaxIdleConns(n)
	if err := db.read.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open sqlite %s: connect a reader: %w", path, err)
	}
	db.readStmts.db, db.writeStmts.db = db.read, db.write
	if err := db.writeStmts.prepare(ctx, swapCouponSQL, fullClaimCouponsSQL,
		addTemplateStatsSQL, addHourStatsSQL, addFailedSQL); err != nil {
		db.Close()
		return nil, fmt.Errorf("open sqlite %s: prepare: %w", path, err)
	}
	db.writeStmts.fixed = true
	return db, nil
}

// dsn returns a file: URI for the absolute path abs, escaped so that any
// '?', '#' or '%' in the path stays part of it.
func dsn(abs string, params url.Values) string {
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive: file:///C:/...
	}
	u := url.URL{Scheme: "file", Path: p, RawQuery: params.Encode()}
	return u.String()
}

// Close closes both pools. It is safe to call more than once; later calls
// return the first call's result.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		db.closed.Store(true)
		errs := []error{db.readStmts.close(), db.writeStmts.close()}
		// Readers first, so that the writer is the last connection to
		// close: it checkpoints the WAL into the database file.
		if db.read != nil {
			errs = append(errs, db.read.Close())
		}
		if db.write != nil {
			errs = append(errs, db.write.Close())
		}
		if err := errors.Join(errs...); err != nil {
			db.closeErr = fmt.Errorf("close sqlite: %w", err)
		}
	})
	return db.closeErr
}

// Ping reports whether both pools can reach the file.
func (db *DB) Ping(ctx context.Context) (err error) {
	defer db.unavailable(&err)
	if err := db.write.PingContext(ctx); err != nil {
		return fmt.Errorf("ping sqlite writer: %w", err)
	}
	if err := db.read.PingContext(ctx); err != nil {
		return fmt.Errorf("ping sqlite reader: %w", err)
	}
	return nil
}

// connectWriter opens the writer's connection, whose pragmas switch a new
// file to WAL. That switch needs the file to itself, and SQLite answers
// SQLITE_BUSY at once, without the busy handler, when another process is
// opening the same new file at that moment; so a busy connect is tried
// again for as long as busy_timeout would have waited.
func connectWriter(ctx context.Context, w *sql.DB) error {
	deadline := time.Now().Add(busyTimeoutMS * time.Millisecond)
	for {
		err := w.PingContext(ctx)
		var se *sqlite.Error
		if err == nil || !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// translate maps a driver error to quan's vocabulary where one applies: a
// unique or primary-key violation is quan.ErrConflict. The driver error
// stays in the chain for logs; other errors are returned as they are.
// sql.ErrNoRows is left to the caller, which knows what was not found.
func translate(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%w: %w", quan.ErrConflict, err)
		}
	}
	return err
}

// Checkpoint copies the whole WAL into the database file and truncates
// the WAL, waiting for readers to move off it. A runner may call it when a
// bulk task ends, so that readers do not search a large WAL and the next
// automatic checkpoint does not fall on a single write.
func (db *DB) Checkpoint(ctx context.Context) (err error) {
	defer db.unavailable(&err)
	var busy, frames, copied int
	if err := db.write.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &frames, &copied); err != nil {
		return fmt.Errorf("checkpoint sqlite: %w", err)
	}
	if busy != 0 {
		return fmt.Errorf("checkpoint sqlite: readers kept %d of %d WAL pages from the database file", frames-copied, frames)
	}
	return nil
}
