package http

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/quanhq/quan"
)

// statsRange reads the range of hourly statistics from the query: from
// and to as RFC 3339 times, either or both left out (see
// stats.Service.Template).
func statsRange(q url.Values) (quan.StatsRange, []quan.FieldError) {
	var (
		r   quan.StatsRange
		bad []quan.FieldError
	)
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"from", &r.From}, {"to", &r.To}} {
		v := q.Get(p.name)
		if v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			bad = append(bad, quan.FieldError{Field: p.name, Message: fmt.Sprintf("%q is not an RFC 3339 time such as 2030-03-14T09:00:00Z", v)})
			continue
		}
		*p.dst = t
	}
	return r, bad
}

func (s *Server) templateStats(w http.ResponseWriter, r *http.Request) error {
	who, id, err := target(r, "template")
	if err != nil {
		return err
	}
	rng, bad := statsRange(r.URL.Query())
	if len(bad) > 0 {
		return &quan.Error{Code: quan.EINVALID, Message: "invalid statistics parameters", Fields: bad}
	}
	st, err := s.Stats.Template(r.Context(), who, id, rng)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, st)
	return nil
}

func (s *Server) shopStats(w http.ResponseWriter, r *http.Request) error {
	who, err := identity(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	rng, bad := statsRange(q)
	var shop int64
	if v := q.Get("shopNo"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			bad = append(bad, quan.FieldError{Field: "shopNo", Message: fmt.Sprintf("%q is not a shop number", v)})
		}
		shop = n
	}
	if len(bad) > 0 {
		return &quan.Error{Code: quan.EINVALID, Message: "invalid statistics parameters", Fields: bad}
	}
	st, err := s.Stats.Shop(r.Context(), who, shop, rng)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, st)
	return nil
}
