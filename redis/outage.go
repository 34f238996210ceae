package redis

import (
	"context"
	"errors"
	"io"
	"iter"
	"net"
	"os"
	"strings"
	"syscall"

	"github.com/redis/rueidis"

	"github.com/quanhq/quan"
)

// outage returns err as quan.Unavailable(quan.BackendCache, err) when it
// says Redis cannot serve now rather than that the request is wrong: the
// connection refused, lost or timed out, the client closed or unable to
// connect, and the server's own refusals of the moment (loading its data,
// a failover under way, a replica that takes no writes, out of memory or
// of clients, busy with a script, a cluster slot moving). Any other error
// is returned as it is, and so is one that has a quan code already or that
// the caller canceled.
func outage(err error) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return err
	}
	var qe *quan.Error
	if errors.As(err, &qe) {
		return err
	}
	if transient(err) {
		return quan.Unavailable(quan.BackendCache, err)
	}
	return err
}

// unavailable is outage for the error a method returns, deferred at its
// top: `defer c.unavailable(&err)`. Every exported method of the cache
// that returns an error does so (TestEveryMethodTranslatesOutages).
func (c *Cache) unavailable(errp *error) { *errp = outage(*errp) }

// unavailableSeq is seq with its errors translated by outage, for the
// cache's iterators.
func unavailableSeq[T any](seq iter.Seq2[T, error]) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for v, err := range seq {
			if !yield(v, outage(err)) {
				return
			}
		}
	}
}

// refusals are the prefixes of the errors Redis answers while it cannot
// serve: the request may succeed once it can.
var refusals = []string{
	"LOADING", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN", "READONLY", "NOREPLICAS",
	"MISCONF", "OOM", "BUSY ", "ERR max number of clients reached",
}

// transient reports whether err is one of the client's or the server's
// that says Redis cannot serve now (see outage).
func transient(err error) bool {
	var re *rueidis.RedisError
	if errors.As(err, &re) {
		if re.IsNil() {
			return false
		}
		msg := re.Error()
		for _, p := range refusals {
			if strings.HasPrefix(msg, p) {
				return true
			}
		}
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) ||
		errors.Is(err, rueidis.ErrClosing) || errors.Is(err, rueidis.ErrNoAddr) || errors.Is(err, rueidis.ErrDoCacheAborted) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
