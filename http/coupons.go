package http

import (
	"net/http"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/wallet"
)

// searchPage is one page of a coupon search.
type searchPage struct {
	Items      []*quan.Coupon `json:"items"`
	Limit      int            `json:"limit"`
	NextCursor int64          `json:"nextCursor,omitempty"`
}

// searchCoupons is GET /coupons?userId=&code=&templateId=&taskId=&status=
// &from=&to=&cursor=&limit=: the shop's coupons of a user, a code, a
// template or a task, newest first, page by page.
func (s *Server) searchCoupons(w http.ResponseWriter, r *http.Request) error {
	who, err := identity(r)
	if err != nil {
		return err
	}
	q := newQuery(r)
	var sq wallet.SearchQuery
	sq.UserID = q.positive("userId", "a user id")
	sq.Code = q.str("code")
	sq.TemplateID = q.positive("templateId", "a template id")
	sq.TaskID = q.positive("taskId", "a task id")
	sq.Status = quan.CouponStatus(q.str("status"))
	sq.From, sq.To = q.time("from"), q.time("to")
	sq.Before = q.positive("cursor", "a cursor: give the nextCursor of the page before")
	_, sq.Limit = q.page()
	if err := q.err("invalid coupon search"); err != nil {
		return err
	}
	cs, next, err := s.Staff.Search(r.Context(), who, sq)
	if err != nil {
		return err
	}
	limit := sq.Limit
	if limit == 0 {
		limit = quan.DefaultPageSize
	}
	s.writeJSON(w, http.StatusOK, searchPage{Items: cs, Limit: limit, NextCursor: next})
	return nil
}

// couponHistory is GET /coupons/{id}: the coupon and what happened to it.
func (s *Server) couponHistory(w http.ResponseWriter, r *http.Request) error {
	who, id, err := target(r, "coupon")
	if err != nil {
		return err
	}
	h, err := s.Staff.Get(r.Context(), who, id)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, h)
	return nil
}

// revokeCoupon is POST /coupons/{id}/revoke {"reason": …}.
func (s *Server) revokeCoupon(w http.ResponseWriter, r *http.Request) error {
	who, id, err := target(r, "coupon")
	if err != nil {
		return err
	}
	var in struct {
		Reason string `json:"reason"`
	}
	if err := decodeJSON(w, r, &in); err != nil {
		return err
	}
	c, err := s.Staff.Revoke(r.Context(), who, id, in.Reason)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, c)
	return nil
}
