package wallet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/quanhq/quan"
)

// DefaultLockTTL is how long an order holds its coupons unless it pays.
const DefaultLockTTL = 15 * time.Minute

// CouponStores are the ports the wallet uses of one store.
type CouponStores interface {
	quan.CouponStore
	quan.WalletStore
}

// Service is the user's side of coupons after they are issued: the
// wallet, pricing an order, locking coupons for it, paying, cancelling and
// refunding, and what time does to coupons.
type Service struct {
	Coupons CouponStores
	// Archiver, if set, moves the coupons of ended templates to history
	// (Archive); nil moves none.
	Archiver  quan.Archiver
	Templates quan.TemplateStore
	Now       quan.Clock
	Logger    *slog.Logger
	LockTTL   time.Duration // 0 means DefaultLockTTL
	Counters  quan.WalletCounters
	// Rules, if set, holds the templates' applies rules, and Facts
	// the users' facts they may read (nil: zero facts): a coupon whose
	// rule an order does not meet is not usable for it, ReasonRuleNotMet.
	Rules quan.RuleSource
	Facts quan.FactsSource

	specs specCache
}

// specCache keeps templates for pricing. What pricing reads of a template
// (kind, rule, scope, source, shop) is frozen when it leaves draft, and
// only such templates have coupons, so an entry never goes stale; the
// cache is bounded and starts again when full.
type specCache struct {
	mu sync.Mutex
	m  map[int64]*quan.Template
}

// maxSpecs bounds specCache: a few hundred KB of templates.
const maxSpecs = 4096

func (c *specCache) get(id int64) *quan.Template {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[id]
}

func (c *specCache) put(t *quan.Template) {
	if t.Status == quan.TemplateDraft {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxSpecs {
		c.m = make(map[int64]*quan.Template)
	}
	c.m[t.ID] = t
}

func (s *Service) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

func userOf(who quan.Identity) (int64, error) {
	if who.Role != quan.RoleUser {
		return 0, quan.Errorf(quan.EFORBIDDEN, "only users hold coupons")
	}
	return who.UserID, nil
}

// Filter selects a user's coupons.
type Filter struct {
	Status quan.CouponStatus // "" matches any
	Offset int
	Limit  int // 1 … MaxPageSize; 0 means DefaultPageSize
}

// List returns one page of the user's coupons, newest first, and the
// number of all that match, as they stand at now: a coupon whose window
// has closed is expired, and a lock that ran out released, whether or not
// the sweeper has written that down.
func (s *Service) List(ctx context.Context, who quan.Identity, f Filter) ([]*quan.Coupon, int, error) {
	user, err := userOf(who)
	if err != nil {
		return nil, 0, err
	}
	var v quan.Validation
	switch f.Status {
	case "", quan.CouponAvailable, quan.CouponLocked, quan.CouponUsed, quan.CouponExpired, quan.CouponRevoked:
	default:
		v.Add("status", fmt.Sprintf("%q is not a status: use available, locked, used, expired or revoked", f.Status))
	}
	v.Page(f.Offset, f.Limit)
	if err := v.Err("invalid wallet query"); err != nil {
		return nil, 0, err
	}
	limit := f.Limit
	if limit == 0 {
		limit = quan.DefaultPageSize
	}
	all, err := s.Coupons.UserCoupons(ctx, user, 0)
	if err != nil {
		return nil, 0, err
	}
	now := s.Now.UTC()
	var match []*quan.Coupon
	for _, c := range all {
		c.Lapse(now)
		if f.Status == "" || c.Status == f.Status {
			match = append(match, c)
		}
	}
	total := len(match)
	if f.Offset >= total {
		return []*quan.Coupon{}, total, nil
	}
	return match[f.Offset:min(total, f.Offset+limit)], total, nil
}

// Get returns coupon id of the user, as it stands at now.
func (s *Service) Get(ctx context.Context, who quan.Identity, id int64) (*quan.Coupon, error) {
	user, err := userOf(who)
	if err != nil {
		return nil, err
	}
	all, err := s.Coupons.UserCoupons(ctx, user, 0)
	if err != nil {
		return nil, err
	}
	for _, c := range all {
		if c.ID == id {
			c.Lapse(s.Now.UTC())
			return c, nil
		}
	}
	return nil, quan.Errorf(quan.ENOTFOUND, "you hold no coupon %d", id)
}

// CouponByCode returns the coupon whose code is code, as it stands at
// now, to a merchant of the coupon's shop or to an admin: what a cashier
// looks up of the code a customer shows. code is read as a person may
// type it (ParseCode): a malformed code, or one with a mistyped symbol,
// is ErrInvalid, which says so. A well-formed code that is no coupon's
// (made up, of a coupon archived, or of another shop's) is ErrNotFound.
// Users get ErrForbidden: their coupons are in their wallet.
func (s *Service) CouponByCode(ctx context.Context, who quan.Identity, code string) (*quan.Coupon, error) {
	shop, err := who.ShopScope()
	if err != nil {
		return nil, err
	}
	c, err := quan.ParseCode(code)
	if err != nil {
		return nil, err
	}
	// The prefix is what comes before the CodeLength symbols every code
	// ends with; the coupon's template must have it.
	id, err := s.Coupons.CodeKey().CouponID(c, c[:len(c)-quan.CodeLength])
	if err != nil {
		return nil, err
	}
	cp, err := s.Coupons.Coupon(ctx, shop, id)
	if errors.Is(err, quan.ErrNotFound) || err == nil && cp.Code != c {
		return nil, quan.Errorf(quan.ENOTFOUND, "no coupon has code %s", c)
	}
	if err != nil {
		return nil, err
	}
	cp.Lapse(s.Now.UTC())
	return cp, nil
}

// Claimable returns the active templates, issuing now with stock left, of
// which the user holds fewer than the limit, newest first: those from
// offset on, at most limit of them (0 means DefaultPageSize), and how many
// there are. It looks at the first MaxPageSize active templates only. A
// bad offset or limit is EINVALID.
func (s *Service) Claimable(ctx context.Context, who quan.Identity, offset, limit int) ([]*quan.Template, int, error) {
	user, err := userOf(who)
	if err != nil {
		return nil, 0, err
	}
	var v quan.Validation
	v.Page(offset, limit)
	if err := v.Err("invalid list parameters"); err != nil {
		return nil, 0, err
	}
	if limit == 0 {
		limit = quan.DefaultPageSize
	}
	ts, _, err := s.Templates.Templates(ctx, quan.TemplateFilter{ShopNo: quan.AnyShop, Status: quan.TemplateActive, Limit: quan.MaxPageSize})
	if err != nil {
		return nil, 0, err
	}
	held, err := s.Coupons.UserCoupons(ctx, user, 0)
	if err != nil {
		return nil, 0, err
	}
	count := map[int64]int64{}
	for _, c := range held {
		count[c.TemplateID]++
	}
	now := s.Now.UTC()
	out := []*quan.Template{}
	for _, t := range ts {
		if t.Stock > 0 && !now.Before(t.IssueStart) && now.Before(t.IssueEnd) && count[t.ID] < t.PerUserLimit {
			out = append(out, t)
		}
	}
	total := len(out)
	if offset >= total {
		return []*quan.Template{}, total, nil
	}
	return out[offset:min(total, offset+limit)], total, nil
}

// templatesOf returns the templates of coupons.
func (s *Service) templatesOf(ctx context.Context, all []*quan.Coupon) (map[int64]*quan.Template, error) {
	templates := map[int64]*quan.Template{}
	for _, c := range all {
		if _, ok := templates[c.TemplateID]; ok {
			continue
		}
		t := s.specs.get(c.TemplateID)
		if t == nil {
			var err error
			t, err = s.Templates.Template(ctx, quan.AnyShop, c.TemplateID)
			if err != nil && !errors.Is(err, quan.ErrNotFound) {
				return nil, err
			}
			if t != nil {
				s.specs.put(t)
			}
		}
		templates[c.TemplateID] = t
	}
	return templates, nil
}

// Quote prices items, to be ordered on channel ("" if unknown; an
// applies rule reads it as order.channel), with every coupon the user
// holds that could apply: available or locked ones, and expired ones
// whose window closed lately are reported with their reason too.
func (s *Service) Quote(ctx context.Context, who quan.Identity, items []quan.OrderItem, channel string) (quan.Quote, error) {
	user, err := userOf(who)
	if err != nil {
		return quan.Quote{}, err
	}
	if err := quan.ValidateOrder(items, channel); err != nil {
		return quan.Quote{}, err
	}
	now := s.Now.UTC()
	all, err := s.Coupons.UserCoupons(ctx, user, 0)
	if err != nil {
		return quan.Quote{}, err
	}
	templates, err := s.templatesOf(ctx, all)
	if err != nil {
		return quan.Quote{}, err
	}
	var cs []*quan.Coupon
	for _, c := range all {
		c.Lapse(now)
		if c.Status == quan.CouponAvailable || c.Status == quan.CouponLocked || c.Status == quan.CouponExpired {
			cs = append(cs, c)
		}
	}
	notMet, err := s.rulesNotMet(ctx, user, items, channel, cs, now)
	if err != nil {
		return quan.Quote{}, err
	}
	return s.priceWithBudgets(ctx, items, cs, templates, now, notMet)
}
