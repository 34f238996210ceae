package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"iter"
	"net"
	"os"
	"syscall"

	"github.com/go-sql-driver/mysql"
	"github.com/quanhq/quan"
)

// Server errors that say the server cannot serve now, whatever the
// statement: out of connections, going down, demoted by a failover, out
// of disk, out of time. A client that tries again later may succeed.
const (
	errConCount          = 1040 // ER_CON_COUNT_ERROR: too many connections
	errNotSupportedYet   = 1047 // ER_UNKNOWN_COM_ERROR: Galera's node not ready (WSREP has not yet prepared node)
	errServerShutdown    = 1053 // ER_SERVER_SHUTDOWN
	errNormalShutdown    = 1077 // ER_NORMAL_SHUTDOWN
	errShutdownComplete  = 1079 // ER_SHUTDOWN_COMPLETE
	errDiskFull          = 1021 // ER_DISK_FULL
	errRecordFileFull    = 1114 // ER_RECORD_FILE_FULL: the table is full
	errAbortingConn      = 1152 // ER_ABORTING_CONNECTION
	errTooManyUserConns  = 1203 // ER_TOO_MANY_USER_CONNECTIONS
	errUserLimitReached  = 1226 // ER_USER_LIMIT_REACHED
	errReadOnly          = 1290 // ER_OPTION_PREVENTS_STATEMENT: --read-only, as a demoted primary runs
	errReadOnlyMode      = 1836 // ER_READ_ONLY_MODE
	errConnectionKilled  = 1927 // MariaDB's ER_CONNECTION_KILLED
	errStatementTimeout  = 1969 // MariaDB's ER_STATEMENT_TIMEOUT (max_statement_time)
	errQueryTimeout      = 3024 // MySQL's ER_QUERY_TIMEOUT (max_execution_time)
	errOutOfResources    = 1041 // ER_OUT_OF_RESOURCES
	errLockTableFull     = 1206 // ER_LOCK_TABLE_FULL
	errTooManyConcurrent = 1637 // ER_TOO_MANY_CONCURRENT_TRXS
)

// outage returns err as quan.Unavailable(quan.BackendStore, err) when it
// says the server cannot serve now rather than that the request is wrong:
// the connection refused, lost or timed out (a dead server, a network
// down, a failover under way), the server out of connections or of disk,
// shutting down or read-only, a lock wait or a deadlock that outlived
// inTx's retries, the pool closed, the caller's deadline passed. Any other
// error is returned as it is, and so is one that has a quan code already (a
// domain answer, or another backend's outage from a closure) or that the
// caller canceled.
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

// transient reports whether err is one of the driver's or the server's
// that says the server cannot serve now (see outage).
func transient(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case errConCount, errNotSupportedYet, errServerShutdown, errNormalShutdown, errShutdownComplete,
			errDiskFull, errRecordFileFull, errAbortingConn, errTooManyUserConns, errUserLimitReached,
			errReadOnly, errReadOnlyMode, errConnectionKilled, errStatementTimeout, errQueryTimeout,
			errOutOfResources, errLockTableFull, errTooManyConcurrent,
			errLockWaitTimeout, errDeadlock, errAutoincReadFailed:
			return true
		}
		return false
	}
	var ne net.Error
	switch {
	case errors.As(err, &ne),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.Is(err, driver.ErrBadConn), errors.Is(err, sql.ErrConnDone),
		errors.Is(err, mysql.ErrInvalidConn), errors.Is(err, mysql.ErrMalformPkt), errors.Is(err, mysql.ErrPktSync),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	return false
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
