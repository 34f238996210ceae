package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"iter"
	"os"

	"github.com/quanhq/quan"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// outage returns err as quan.Unavailable(quan.BackendStore, err) when it
// says the file cannot be used now rather than that the request is wrong:
// its disk full (SQLITE_FULL) or failing (SQLITE_IOERR), the file gone
// (SQLITE_CANTOPEN), a lock held past busy_timeout (SQLITE_BUSY,
// SQLITE_LOCKED), the store closed, the caller's deadline passed. Any
// other error is returned as it is, and so is one that has a quan code
// already (a domain answer, or another backend's outage from a closure) or
// that the caller canceled.
func (db *DB) outage(err error) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return err
	}
	var qe *quan.Error
	if errors.As(err, &qe) {
		return err
	}
	if db.closed.Load() || transient(err) {
		return quan.Unavailable(quan.BackendStore, err)
	}
	return err
}

// unavailable is outage for the error a method returns, deferred at its
// top: `defer db.unavailable(&err)`. Every exported method of the store
// that returns an error does so (TestEveryMethodTranslatesOutages).
func (db *DB) unavailable(errp *error) { *errp = db.outage(*errp) }

// transient reports whether err is one of SQLite's or database/sql's that
// says the file cannot be used now (see outage).
func transient(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN,
			sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_NOMEM, sqlite3.SQLITE_PROTOCOL:
			return true
		}
		return false
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone)
}

// unavailableSeq is seq with its errors translated by db.outage, for the
// store's iterators.
func unavailableSeq[T any](db *DB, seq iter.Seq2[T, error]) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for v, err := range seq {
			if !yield(v, db.outage(err)) {
				return
			}
		}
	}
}
