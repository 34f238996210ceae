package claims

import (
	"context"
	"fmt"
	"time"

	"github.com/quanhq/quan"
)

// The claim centre (领券中心): what a shopper may claim now or soon.

// CentreFilter selects the templates of the claim centre.
type CentreFilter struct {
	ShopNo   int64  // one shop's templates; 0 (quan.AnyShop) for every shop
	Category string // one category's; "" for every category
	// Cursor is the NextCursor of the page before; 0 for the first page.
	Cursor int64
	Limit  int // 1 … quan.MaxPageSize; 0 means quan.DefaultPageSize
}

// CentreItem is a template of the claim centre: its public view, and
// whether it can be claimed now or opens later (at its IssueStart: the
// shopper may ask to be reminded, 预约).
type CentreItem struct {
	*quan.PublicTemplate
	ClaimableNow bool `json:"claimableNow"`
	// Held is how many coupons of the template the shopper holds.
	Held int64 `json:"held"`
}

// maxCentreScan bounds the templates one page of the centre reads from
// the store, so that a page costs the same however many templates the
// shopper cannot claim: past it the page ends short, with a cursor.
const maxCentreScan = 10 * quan.MaxPageSize

// Centre returns one page of the claim centre of the user who: every
// active template, of every shop or of f.ShopNo, of f.Category if set,
// newest first, that the user may claim now or once it opens, by the
// claim path's own checks — it is issuing or will be, has stock left,
// the user holds fewer than its per-user limit and received fewer than
// its daily and weekly limits (quan.TemplateSpec.PeriodRefusal, as the
// stores decide), its eligibility rule in force accepts the user
// (eligible, as Claim asks), and its shop has not reached its daily
// claim cap today. It also returns the cursor of the next page, 0 when
// none is left.
//
// What it reads is the store's (stock, holdings, the shop's claims
// counted so far): claims still on their way from the cache to the store
// show a moment later, and a claim is decided by the cache and the store,
// never by this list. A page may hold fewer than f.Limit templates and
// still have a next one: it reads at most maxCentreScan templates.
// EFORBIDDEN for anyone but a user; EINVALID for a bad filter.
func (s *Service) Centre(ctx context.Context, who quan.Identity, f CentreFilter) ([]*CentreItem, int64, error) {
	if who.Role != quan.RoleUser {
		return nil, 0, quan.Errorf(quan.EFORBIDDEN, "only users have a claim centre")
	}
	tf := quan.TemplateFilter{ShopNo: f.ShopNo, Category: f.Category, Status: quan.TemplateActive,
		Before: f.Cursor, SkipTotal: true}
	var v quan.Validation
	if f.ShopNo < 0 {
		v.Add("shop", "must be a positive shop number")
	}
	v.Line("category", f.Category)
	if f.Cursor < 0 {
		v.Add("cursor", "must not be negative")
	}
	v.Page(0, f.Limit)
	if err := v.Err("invalid list parameters"); err != nil {
		return nil, 0, err
	}
	limit := f.Limit
	if limit == 0 {
		limit = quan.DefaultPageSize
	}
	// Most templates are claimable: a batch a little larger than the
	// page mostly fills it in one read.
	tf.Limit = min(quan.MaxPageSize, limit+limit/2+1)
	user := who.UserID
	held, err := s.Coupons.UserHeld(ctx, user)
	if err != nil {
		return nil, 0, fmt.Errorf("claim centre: %w", err)
	}
	h := holdings{count: held, period: map[int64]*quan.PeriodHeld{}}
	now := s.Now.UTC()
	caps := shopCapsSeen{}
	out := []*CentreItem{}
	for scanned := 0; scanned < maxCentreScan; {
		ts, _, err := s.Templates.Templates(ctx, tf)
		if err != nil {
			return nil, 0, fmt.Errorf("claim centre: %w", err)
		}
		for i, t := range ts {
			scanned++
			ok, err := s.claimable(ctx, t, user, h, caps, now)
			if err != nil {
				return nil, 0, fmt.Errorf("claim centre: template %d: %w", t.ID, err)
			}
			if ok {
				out = append(out, &CentreItem{PublicTemplate: quan.PublicOf(t),
					ClaimableNow: !now.Before(t.IssueStart), Held: h.count[t.ID]})
			}
			last := i == len(ts)-1 && len(ts) < tf.Limit
			if len(out) == limit || scanned == maxCentreScan {
				if last {
					return out, 0, nil
				}
				return out, t.ID, nil
			}
		}
		if len(ts) < tf.Limit {
			return out, 0, nil
		}
		tf.Before = ts[len(ts)-1].ID
	}
	return out, tf.Before, nil
}

// holdings are the coupons a user holds, counted per template, and, read
// only for the templates with period limits the page meets, when each was
// received.
type holdings struct {
	count  map[int64]int64
	period map[int64]*quan.PeriodHeld
}

// periodOf returns when user received each coupon of template t, read
// once a page.
func (s *Service) periodOf(ctx context.Context, h holdings, t, user int64) (*quan.PeriodHeld, error) {
	if p, ok := h.period[t]; ok {
		return p, nil
	}
	p := &quan.PeriodHeld{}
	if h.count[t] > 0 {
		cs, err := s.Coupons.UserCoupons(ctx, user, t)
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			p.Add(c.UserID, c.CreatedAt)
		}
	}
	h.period[t] = p
	return p, nil
}

// shopCapsSeen keeps, for one page, whether each shop met has reached
// its daily cap.
type shopCapsSeen map[int64]bool

// claimable reports whether user may claim t now or once it opens (see
// Centre).
func (s *Service) claimable(ctx context.Context, t *quan.Template, user int64, h holdings, caps shopCapsSeen, now time.Time) (bool, error) {
	if t.Status != quan.TemplateActive || !now.Before(t.IssueEnd) || t.Stock <= 0 {
		return false, nil
	}
	if h.count[t.ID] >= t.PerUserLimit {
		return false, nil
	}
	if t.HasPeriodLimits() {
		p, err := s.periodOf(ctx, h, t.ID, user)
		if err != nil {
			return false, err
		}
		if t.PeriodRefusal(p, user, now) != "" {
			return false, nil
		}
	}
	switch err := s.eligible(ctx, t.ID, user, now, true); quan.ErrorCode(err) {
	case "":
	case quan.ENOTELIGIBLE, quan.ENOTFOUND:
		return false, nil
	default:
		return false, err
	}
	if s.Shops == nil {
		return true, nil
	}
	full, ok := caps[t.ShopNo]
	if !ok {
		var err error
		if full, err = s.shopFull(ctx, t.ShopNo, now); err != nil {
			return false, err
		}
		caps[t.ShopNo] = full
	}
	return !full, nil
}

// shopFull reports whether shop has a daily claim cap that its claims
// of today, as the store counts them (what a cold cache is loaded with:
// loadShopClaims), have reached.
func (s *Service) shopFull(ctx context.Context, shop int64, now time.Time) (bool, error) {
	limit, err := s.Shops.DailyClaimCap(ctx, shop)
	if err != nil || limit == 0 {
		return false, err
	}
	day := quan.ShanghaiDay(now)
	n, err := s.Shops.ShopClaimed(ctx, shop, quan.ShanghaiDayStart(day), quan.ShanghaiDayStart(day+1))
	if err != nil {
		return false, fmt.Errorf("count the claims of shop %d today: %w", shop, err)
	}
	return n >= limit, nil
}
