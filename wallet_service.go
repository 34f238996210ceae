package quan

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// DefaultLockTTL is how long an order holds its coupons unless it pays.
const DefaultLockTTL = 15 * time.Minute

// CouponStores are the ports the wallet uses of one store.
type CouponStores interface {
	CouponStore
	WalletStore
}

// WalletService is the user's side of coupons after they are issued: the
// wallet, pricing an order, locking coupons for it, paying, cancelling and
// refunding, and what time does to coupons.
type WalletService struct {
	Coupons CouponStores
	// Archiver, if set, moves the coupons of ended templates to history
	// (Archive); nil moves none.
	Archiver  Archiver
	Templates TemplateStore
	Bus       Bus // nil publishes no events
	Now       Clock
	Logger    *slog.Logger
	LockTTL   time.Duration // 0 means DefaultLockTTL
	Counters  WalletCounters
	// Rules, if set, holds the templates' applies rules, and Facts
	// the users' facts they may read (nil: zero facts): a coupon whose
	// rule an order does not meet is not usable for it, ReasonRuleNotMet.
	Rules RuleSource
	Facts FactsSource

	specs specCache
}

// specCache keeps templates for pricing. What pricing reads of a template
// (kind, rule, scope, source, shop) is frozen when it leaves draft, and
// only such templates have coupons, so an entry never goes stale; the
// cache is bounded and starts again when full.
type specCache struct {
	mu sync.Mutex
	m  map[int64]*Template
}

// maxSpecs bounds specCache: a few hundred KB of templates.
const maxSpecs = 4096

func (c *specCache) get(id int64) *Template {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[id]
}

func (c *specCache) put(t *Template) {
	if t.Status == TemplateDraft {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxSpecs {
		c.m = make(map[int64]*Template)
	}
	c.m[t.ID] = t
}

func (s *WalletService) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

func userOf(who Identity) (int64, error) {
	if who.Role != RoleUser {
		return 0, Errorf(EFORBIDDEN, "only users hold coupons")
	}
	return who.UserID, nil
}

// WalletFilter selects a user's coupons.
type WalletFilter struct {
	Status CouponStatus // "" matches any
	Offset int
	Limit  int // 1 … MaxPageSize; 0 means DefaultPageSize
}

// List returns one page of the user's coupons, newest first, and the
// number of all that match, as they stand at now: a coupon whose window
// has closed is expired, and a lock that ran out released, whether or not
// the sweeper has written that down.
func (s *WalletService) List(ctx context.Context, who Identity, f WalletFilter) ([]*Coupon, int, error) {
	user, err := userOf(who)
	if err != nil {
		return nil, 0, err
	}
	var v Validation
	switch f.Status {
	case "", CouponAvailable, CouponLocked, CouponUsed, CouponExpired, CouponRevoked:
	default:
		v.Add("status", fmt.Sprintf("%q is not a status: use available, locked, used, expired or revoked", f.Status))
	}
	v.Page(f.Offset, f.Limit)
	if err := v.Err("invalid wallet query"); err != nil {
		return nil, 0, err
	}
	limit := f.Limit
	if limit == 0 {
		limit = DefaultPageSize
	}
	all, err := s.Coupons.UserCoupons(ctx, user, 0)
	if err != nil {
		return nil, 0, err
	}
	now := s.Now.UTC()
	var match []*Coupon
	for _, c := range all {
		c.Lapse(now)
		if f.Status == "" || c.Status == f.Status {
			match = append(match, c)
		}
	}
	total := len(match)
	if f.Offset >= total {
		return []*Coupon{}, total, nil
	}
	return match[f.Offset:min(total, f.Offset+limit)], total, nil
}

// Get returns coupon id of the user, as it stands at now.
func (s *WalletService) Get(ctx context.Context, who Identity, id int64) (*Coupon, error) {
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
	return nil, Errorf(ENOTFOUND, "you hold no coupon %d", id)
}

// CouponByCode returns the coupon whose code is code, as it stands at
// now, to a merchant of the coupon's shop or to an admin: what a cashier
// looks up of the code a customer shows. code is read as a person may
// type it (ParseCode): a malformed code, or one with a mistyped symbol,
// is ErrInvalid, which says so. A well-formed code that is no coupon's
// (made up, of a coupon archived, or of another shop's) is ErrNotFound.
// Users get ErrForbidden: their coupons are in their wallet.
func (s *WalletService) CouponByCode(ctx context.Context, who Identity, code string) (*Coupon, error) {
	shop, err := who.ShopScope()
	if err != nil {
		return nil, err
	}
	c, err := ParseCode(code)
	if err != nil {
		return nil, err
	}
	// The prefix is what comes before the CodeLength symbols every code
	// ends with; the coupon's template must have it.
	id, err := s.Coupons.CodeKey().CouponID(c, c[:len(c)-CodeLength])
	if err != nil {
		return nil, err
	}
	cp, err := s.Coupons.Coupon(ctx, shop, id)
	if errors.Is(err, ErrNotFound) || err == nil && cp.Code != c {
		return nil, Errorf(ENOTFOUND, "no coupon has code %s", c)
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
func (s *WalletService) Claimable(ctx context.Context, who Identity, offset, limit int) ([]*Template, int, error) {
	user, err := userOf(who)
	if err != nil {
		return nil, 0, err
	}
	var v Validation
	v.Page(offset, limit)
	if err := v.Err("invalid list parameters"); err != nil {
		return nil, 0, err
	}
	if limit == 0 {
		limit = DefaultPageSize
	}
	ts, _, err := s.Templates.Templates(ctx, TemplateFilter{ShopNo: AnyShop, Status: TemplateActive, Limit: MaxPageSize})
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
	out := []*Template{}
	for _, t := range ts {
		if t.Stock > 0 && !now.Before(t.IssueStart) && now.Before(t.IssueEnd) && count[t.ID] < t.PerUserLimit {
			out = append(out, t)
		}
	}
	total := len(out)
	if offset >= total {
		return []*Template{}, total, nil
	}
	return out[offset:min(total, offset+limit)], total, nil
}

// templatesOf returns the templates of coupons.
func (s *WalletService) templatesOf(ctx context.Context, all []*Coupon) (map[int64]*Template, error) {
	templates := map[int64]*Template{}
	for _, c := range all {
		if _, ok := templates[c.TemplateID]; ok {
			continue
		}
		t := s.specs.get(c.TemplateID)
		if t == nil {
			var err error
			t, err = s.Templates.Template(ctx, AnyShop, c.TemplateID)
			if err != nil && !errors.Is(err, ErrNotFound) {
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
func (s *WalletService) Quote(ctx context.Context, who Identity, items []OrderItem, channel string) (Quote, error) {
	user, err := userOf(who)
	if err != nil {
		return Quote{}, err
	}
	if err := ValidateOrder(items, channel); err != nil {
		return Quote{}, err
	}
	now := s.Now.UTC()
	all, err := s.Coupons.UserCoupons(ctx, user, 0)
	if err != nil {
		return Quote{}, err
	}
	templates, err := s.templatesOf(ctx, all)
	if err != nil {
		return Quote{}, err
	}
	var cs []*Coupon
	for _, c := range all {
		c.Lapse(now)
		if c.Status == CouponAvailable || c.Status == CouponLocked || c.Status == CouponExpired {
			cs = append(cs, c)
		}
	}
	notMet, err := s.rulesNotMet(ctx, user, items, channel, cs, now)
	if err != nil {
		return Quote{}, err
	}
	return s.priceWithBudgets(ctx, items, cs, templates, now, notMet)
}
