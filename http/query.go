package http

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/quanhq/quan"
)

// query reads the parameters of a request's query string the same way on
// every route: each parameter read is given once at most and is one line
// of text (quan.TextProblem), paging is whole numbers in range, times are
// RFC 3339 and in range. It collects a FieldError, named by the
// parameter, for each problem, so a route answers every one at once.
type query struct {
	q   url.Values
	bad []quan.FieldError
}

func newQuery(r *http.Request) *query {
	return &query{q: r.URL.Query()}
}

func (q *query) add(name, format string, args ...any) {
	q.bad = append(q.bad, quan.FieldError{Field: name, Message: fmt.Sprintf(format, args...)})
}

// str returns parameter name, "" if it is absent or bad.
func (q *query) str(name string) string {
	vs := q.q[name]
	switch {
	case len(vs) == 0:
		return ""
	case len(vs) > 1:
		q.add(name, "is given %d times: give it once", len(vs))
		return ""
	}
	if p := quan.TextProblem(vs[0], ""); p != "" {
		q.add(name, "%s", p)
		return ""
	}
	return vs[0]
}

// page reads offset (0 or more) and limit (1 … quan.MaxPageSize), each 0
// if absent.
func (q *query) page() (offset, limit int) {
	offset = q.whole("offset", 0, maxOffset, "must be a whole number from 0 to %d")
	limit = q.whole("limit", 1, quan.MaxPageSize, "must be a whole number from 1 to %d, the most items a page holds")
	return offset, limit
}

// maxOffset bounds an offset: a page's offset plus its limit still fits
// any int, and no listing holds more.
const maxOffset = 1 << 31

// whole reads a whole number from lo to hi, 0 if absent.
func (q *query) whole(name string, lo, hi int, format string) int {
	v := q.str(name)
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		q.add(name, "%q: "+format, v, hi)
		return 0
	}
	return n
}

// positive reads a positive id (a shop number, say), 0 if absent; what
// names it in the message.
func (q *query) positive(name, what string) int64 {
	v := q.str(name)
	if v == "" {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		q.add(name, "%q is not %s", v, what)
		return 0
	}
	return n
}

// bool reads true or false, false if absent.
func (q *query) bool(name string) bool {
	v := q.str(name)
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		q.add(name, "%q: must be true or false", v)
	}
	return b
}

// time reads an RFC 3339 time that quan keeps (quan.TimeProblem), zero if
// absent. The zero time itself, 0001-01-01T00:00:00Z, is refused: it
// means "not given" to the use cases, which would ignore it.
func (q *query) time(name string) time.Time {
	v := q.str(name)
	if v == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339, v)
	switch {
	case err != nil:
		q.add(name, "%q is not an RFC 3339 time such as 2030-03-14T09:00:00Z", v)
	case t.IsZero():
		q.add(name, "%q is the zero time, which means no time: leave %s out instead", v, name)
	case quan.TimeProblem(t) != "":
		q.add(name, "%s", quan.TimeProblem(t))
	default:
		return t
	}
	return time.Time{}
}

// statsRange reads the range of hourly statistics: from and to, either
// or both left out (see stats.Service.Template, which refuses a range
// quan.StatsRange.Validate refuses once its ends are filled in).
func (q *query) statsRange() quan.StatsRange {
	return quan.StatsRange{From: q.time("from"), To: q.time("to")}
}

// err returns the problems found, as an EINVALID error with msg, or nil.
func (q *query) err(msg string) error {
	if len(q.bad) == 0 {
		return nil
	}
	return &quan.Error{Code: quan.EINVALID, Message: msg, Fields: q.bad}
}

// errWith is err with the problems validate finds too (a filter's
// Validate, which the use case calls anyway), so that a route refused
// names every problem at once. A parameter refused here is left zero in
// the filter, which validate takes.
func (q *query) errWith(msg string, validate func() error) error {
	if len(q.bad) == 0 {
		return nil
	}
	q.bad = append(q.bad, quan.ErrorFields(validate())...)
	return q.err(msg)
}
