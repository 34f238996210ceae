package wallet

import (
	"context"
	"errors"
	"strings"

	"github.com/quanhq/quan"
)

// Staff is the shop's side of coupons already issued: customer service
// finds them, reads what happened to each, and takes one back. Merchants
// see their own shop's coupons only (another shop's is ErrNotFound),
// admins every shop's.
type Staff struct {
	Coupons interface {
		quan.CouponStore
		quan.CouponSearcher
	}
	Now quan.Clock
}

// SearchQuery is a coupon search as the API gives it: Code instead of a
// coupon id.
type SearchQuery struct {
	quan.CouponFilter
	Code string
}

// Search returns one page of the coupons of q in the caller's shop,
// newest first, as they stand at now, and the cursor of the next page (0
// on the last).
func (s *Staff) Search(ctx context.Context, who quan.Identity, q SearchQuery) ([]*quan.Coupon, int64, error) {
	shop, err := who.ShopScope()
	if err != nil {
		return nil, 0, err
	}
	f := q.CouponFilter
	f.ShopNo = shop
	code := ""
	if q.Code != "" {
		var id int64
		code, id, err = s.codeID(q.Code)
		if errors.Is(err, quan.ErrNotFound) {
			return []*quan.Coupon{}, 0, nil
		}
		if err != nil {
			return nil, 0, err
		}
		f.ID = id
	}
	if err := f.Validate(); err != nil {
		return nil, 0, err
	}
	limit := f.Limit
	if limit == 0 {
		limit = quan.DefaultPageSize
	}
	f.Limit = limit
	cs, err := s.Coupons.SearchCoupons(ctx, f)
	if err != nil {
		return nil, 0, err
	}
	now := s.Now.UTC()
	var next int64
	for _, c := range cs {
		c.Lapse(now)
	}
	if len(cs) == limit {
		next = cs[len(cs)-1].ID
	}
	// A code with the right checksum but another template's prefix
	// names no coupon.
	if code != "" && len(cs) == 1 && cs[0].Code != code {
		return []*quan.Coupon{}, 0, nil
	}
	return cs, next, nil
}

// codeID reads code as a person may type it and returns it and the
// coupon id it names: ErrInvalid for a malformed code, ErrNotFound for
// one that names none.
func (s *Staff) codeID(code string) (string, int64, error) {
	c, err := quan.ParseCode(code)
	if err != nil {
		return "", 0, err
	}
	id, err := s.Coupons.CodeKey().CouponID(c, c[:len(c)-quan.CodeLength])
	return c, id, err
}

// History is a coupon and what happened to it: its events as the outbox
// still holds them (issued, locked, redeemed, released, refunded,
// expired, revoked, each with its time and order) and the changes
// operators made by hand, with who and why.
type History struct {
	Coupon *quan.Coupon        `json:"coupon"`
	Events []HistoryEvent      `json:"events"`
	Audit  []*quan.CouponAudit `json:"audit"`
}

// HistoryEvent is one change of a coupon's status.
type HistoryEvent struct {
	Type     quan.EventType    `json:"type"`
	At       string            `json:"at"`
	Previous quan.CouponStatus `json:"previousStatus,omitempty"`
	Status   quan.CouponStatus `json:"status"`
	OrderID  string            `json:"orderId,omitempty"`
	Discount int64             `json:"discount,omitempty"`
	Source   quan.CouponSource `json:"source,omitempty"`
	TaskID   int64             `json:"taskId,omitempty"`
}

// Get returns coupon id of the caller's shop with its history.
func (s *Staff) Get(ctx context.Context, who quan.Identity, id int64) (*History, error) {
	shop, err := who.ShopScope()
	if err != nil {
		return nil, err
	}
	c, err := s.Coupons.Coupon(ctx, shop, id)
	if err != nil {
		return nil, err
	}
	c.Lapse(s.Now.UTC())
	es, err := s.Coupons.CouponEvents(ctx, shop, id)
	if err != nil {
		return nil, err
	}
	audit, err := s.Coupons.CouponAudits(ctx, shop, id)
	if err != nil {
		return nil, err
	}
	h := &History{Coupon: c, Events: make([]HistoryEvent, 0, len(es)), Audit: audit}
	if h.Audit == nil {
		h.Audit = []*quan.CouponAudit{}
	}
	for _, e := range es {
		he := HistoryEvent{Type: e.Type, At: e.CreatedAt.UTC().Format("2006-01-02T15:04:05.999999Z07:00"), Previous: e.Previous}
		if e.Coupon != nil {
			he.Status, he.OrderID, he.Discount = e.Coupon.Status, e.Coupon.OrderID, e.Coupon.Discount
			if e.Type == quan.EventCouponIssued {
				he.Source, he.TaskID = e.Coupon.Source, e.Coupon.TaskID
			}
		}
		h.Events = append(h.Events, he)
	}
	return h, nil
}

// Revoke takes back coupon id of the caller's shop for reason: an
// available coupon becomes revoked, with its event, its statistics and
// an audit entry naming the operator, in one transaction. A locked
// coupon is refused (its order must release it first), as is a used,
// expired or revoked one: ErrTransition, saying which.
func (s *Staff) Revoke(ctx context.Context, who quan.Identity, id int64, reason string) (*quan.Coupon, error) {
	shop, err := who.ShopScope()
	if err != nil {
		return nil, err
	}
	if who.Role != quan.RoleMerchant && who.Role != quan.RoleAdmin {
		return nil, quan.Errorf(quan.EFORBIDDEN, "revoking a coupon needs a merchant or admin token")
	}
	reason = strings.TrimSpace(reason)
	var v quan.Validation
	switch {
	case reason == "":
		v.Add("reason", "is required: say why the coupon is taken back")
	case len(reason) > quan.MaxReasonLen:
		v.Add("reason", "must be at most 500 bytes")
	default:
		v.Line("reason", reason)
	}
	if err := v.Err("invalid revocation"); err != nil {
		return nil, err
	}
	now := s.Now.UTC()
	a := &quan.CouponAudit{Actor: who.String(), Action: quan.ActionRevokeCoupon, Reason: reason, At: now}
	return s.Coupons.ReviseCoupon(ctx, shop, id, a, func(c *quan.Coupon) error { return c.Revoke(now) })
}
