package http

import (
	"net/http"
)

func (s *Server) templateStats(w http.ResponseWriter, r *http.Request) error {
	who, id, err := target(r, "template")
	if err != nil {
		return err
	}
	q := newQuery(r)
	rng := q.statsRange()
	if err := q.err("invalid statistics parameters"); err != nil {
		return err
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
	q := newQuery(r)
	rng := q.statsRange()
	shop := q.positive("shopNo", "a shop number")
	if err := q.err("invalid statistics parameters"); err != nil {
		return err
	}
	st, err := s.Stats.Shop(r.Context(), who, shop, rng)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, st)
	return nil
}
