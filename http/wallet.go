package http

import (
	"net/http"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/claims"
	"github.com/quanhq/quan/wallet"
)

// couponPage is one page of a wallet: each coupon with the display of
// its template.
type couponPage struct {
	Items  []*wallet.Item `json:"items"`
	Total  int            `json:"total"`
	Offset int            `json:"offset"`
	Limit  int            `json:"limit"`
}

// listCoupons is GET /me/coupons?status=&offset=&limit=: the caller's
// coupons as they stand now, newest first.
func (s *Server) listCoupons(w http.ResponseWriter, r *http.Request) error {
	who, err := identity(r)
	if err != nil {
		return err
	}
	q := newQuery(r)
	f := wallet.Filter{Status: quan.CouponStatus(q.str("status"))}
	f.Offset, f.Limit = q.page()
	if err := q.err("invalid wallet query"); err != nil {
		return err
	}
	cs, total, err := s.Wallet.List(r.Context(), who, f)
	if err != nil {
		return err
	}
	items, err := s.Wallet.Items(r.Context(), cs)
	if err != nil {
		return err
	}
	s.writeCouponPage(w, http.StatusOK, couponPage{Items: items, Total: total, Offset: f.Offset, Limit: len(cs)})
	return nil
}

func (s *Server) getCoupon(w http.ResponseWriter, r *http.Request) error {
	who, id, err := target(r, "coupon")
	if err != nil {
		return err
	}
	c, err := s.Wallet.Get(r.Context(), who, id)
	if err != nil {
		return err
	}
	items, err := s.Wallet.Items(r.Context(), []*quan.Coupon{c})
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, items[0])
	return nil
}

// couponByCode is GET /coupons/by-code/{code}: the coupon of a code, for
// a merchant of its shop or an admin. A code with a mistyped symbol is a
// 400 that says so; a well-formed code that is no coupon's a 404.
func (s *Server) couponByCode(w http.ResponseWriter, r *http.Request) error {
	who, err := identity(r)
	if err != nil {
		return err
	}
	c, err := s.Wallet.CouponByCode(r.Context(), who, r.PathValue("code"))
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, c)
	return nil
}

// centrePage is one page of the claim centre.
type centrePage struct {
	Items      []*claims.CentreItem `json:"items"`
	Limit      int                  `json:"limit"`
	NextCursor int64                `json:"nextCursor,omitempty"`
}

// claimable is GET /me/claimable?shop=&category=&cursor=&limit=: the
// claim centre, every template the caller may claim now or soon, newest
// first, page by page (claims.Service.Centre).
func (s *Server) claimable(w http.ResponseWriter, r *http.Request) error {
	who, err := identity(r)
	if err != nil {
		return err
	}
	q := newQuery(r)
	f := claims.CentreFilter{
		ShopNo:   q.positive("shop", "a shop number"),
		Category: q.str("category"),
		Cursor:   q.positive("cursor", "a cursor (a page's nextCursor)"),
	}
	f.Limit = q.whole("limit", 1, quan.MaxPageSize, "must be a whole number from 1 to %d, the most items a page holds")
	if q.q.Has("offset") {
		q.add("offset", "the claim centre pages by cursor: give the nextCursor of the page before as cursor")
	}
	if err := q.err("invalid list parameters"); err != nil {
		return err
	}
	items, next, err := s.Centre.Centre(r.Context(), who, f)
	if err != nil {
		return err
	}
	limit := f.Limit
	if limit == 0 {
		limit = quan.DefaultPageSize
	}
	s.writeJSON(w, http.StatusOK, centrePage{Items: items, Limit: limit, NextCursor: next})
	return nil
}

// quote is POST /settlement/quote {items, channel}.
func (s *Server) quote(w http.ResponseWriter, r *http.Request) error {
	who, err := identity(r)
	if err != nil {
		return err
	}
	var body struct {
		Items   []quan.OrderItem `json:"items"`
		Channel string           `json:"channel"`
	}
	if err := decodeJSON(w, r, &body); err != nil {
		return err
	}
	q, err := s.Wallet.Quote(r.Context(), who, body.Items, body.Channel)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, q)
	return nil
}

// OrderCoupons is the reply of every order route.
type OrderCoupons struct {
	Order   string         `json:"order"`
	Coupons []*quan.Coupon `json:"coupons"`
}

// settlementFor returns who acting for the user a settlement names:
// userId of the body, which a service key must give (400 naming it if
// not). A caller other than a service key is refused by the route's
// access before it gets here.
func settlementFor(who quan.Identity, user int64) (quan.Identity, error) {
	if user <= 0 {
		var v quan.Validation
		v.Add("userId", "name the user whose order this is: a positive user id")
		return who, v.Err("invalid settlement")
	}
	return who.ForUser(user), nil
}

// lockOrder is POST /orders/{order}/lock {userId, items, channel,
// couponIds, expectedDiscount}, by a settlement key.
func (s *Server) lockOrder(w http.ResponseWriter, r *http.Request) error {
	who, err := identity(r)
	if err != nil {
		return err
	}
	order := r.PathValue("order")
	if err := quan.ValidateOrderID(order); err != nil {
		return err
	}
	var req struct {
		wallet.LockRequest
		UserID int64 `json:"userId"`
	}
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if who, err = settlementFor(who, req.UserID); err != nil {
		return err
	}
	cs, err := s.Wallet.Lock(r.Context(), who, order, req.LockRequest)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, OrderCoupons{Order: order, Coupons: cs})
	return nil
}

// orderStep serves redeem, release and refund {userId}, by a settlement
// key.
func (s *Server) orderStep(step func(*wallet.Service, *http.Request, quan.Identity, string) ([]*quan.Coupon, error)) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		who, err := identity(r)
		if err != nil {
			return err
		}
		order := r.PathValue("order")
		if err := quan.ValidateOrderID(order); err != nil {
			return err
		}
		var body struct {
			UserID int64 `json:"userId"`
		}
		if err := decodeJSON(w, r, &body); err != nil {
			return err
		}
		if who, err = settlementFor(who, body.UserID); err != nil {
			return err
		}
		cs, err := step(s.Wallet, r, who, order)
		if err != nil {
			return err
		}
		s.writeJSON(w, http.StatusOK, OrderCoupons{Order: order, Coupons: cs})
		return nil
	}
}

func redeemStep(ws *wallet.Service, r *http.Request, who quan.Identity, order string) ([]*quan.Coupon, error) {
	return ws.Redeem(r.Context(), who, order)
}

func releaseStep(ws *wallet.Service, r *http.Request, who quan.Identity, order string) ([]*quan.Coupon, error) {
	return ws.Release(r.Context(), who, order)
}

func refundStep(ws *wallet.Service, r *http.Request, who quan.Identity, order string) ([]*quan.Coupon, error) {
	return ws.Refund(r.Context(), who, order)
}

// redeemByCode is POST /coupons/by-code/{code}/redeem {orderId, items,
// channel}: a shop's counter redeems the coupon a shopper shows (到店核销),
// with a shop's key of the redeem scope.
func (s *Server) redeemByCode(w http.ResponseWriter, r *http.Request) error {
	who, err := identity(r)
	if err != nil {
		return err
	}
	var in wallet.CounterRedemption
	if err := decodeJSON(w, r, &in); err != nil {
		return err
	}
	res, err := s.Wallet.RedeemByCode(r.Context(), who, r.PathValue("code"), in)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, res)
	return nil
}
