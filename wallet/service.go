package wallet

import (
	"context"
	"encoding/json"
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
	// Refunds, if set, records refunded orders: a refund applies to an
	// order once, and a refunded order is locked and redeemed no more.
	// Nil refunds as often as asked, each time giving back what the
	// order used.
	Refunds quan.RefundStore

	specs specCache
}

// specCache keeps templates for pricing. What pricing reads of a template
// (kind, rule, scope, source, shop) is frozen when it leaves draft, and
// only such templates have coupons, so an entry never goes stale; the
// cache is bounded and starts again when full.
type specCache struct {
	mu sync.Mutex
	m  map[int64]spec
}

// spec is a template the cache holds and its display, made and encoded
// once: every wallet page that shows the template shares them, read only.
type spec struct {
	t *quan.Template
	d *quan.TemplateDisplay
	j []byte // d as encoding/json writes it; nil if it would not
}

// maxSpecs bounds specCache: a few hundred KB of templates.
const maxSpecs = 4096

func (c *specCache) get(id int64) *quan.Template {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[id].t
}

// display returns the display of t and its JSON: the ones made when t was
// cached, or, for a template the cache does not hold as it is, a new
// display and no JSON.
func (c *specCache) display(t *quan.Template) (*quan.TemplateDisplay, []byte) {
	c.mu.Lock()
	sp := c.m[t.ID]
	c.mu.Unlock()
	if sp.t == t {
		return sp.d, sp.j
	}
	return quan.DisplayOf(t), nil
}

func (c *specCache) put(t *quan.Template) {
	if t.Status == quan.TemplateDraft {
		return
	}
	d := quan.DisplayOf(t)
	j, err := json.Marshal(d)
	if err != nil {
		j = nil // the page's encoder meets the error, as without a cache
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxSpecs {
		c.m = make(map[int64]spec)
	}
	c.m[t.ID] = spec{t, d, j}
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

// settlerOf returns the user whose order who settles. Only a service key
// with the settlement scope changes settlement state, for the user it
// names (quan.Identity.ForUser): the order system knows an order was
// paid or refunded, the shopper's app does not.
func settlerOf(who quan.Identity) (int64, error) {
	switch {
	case who.Role == "":
		return 0, quan.ErrUnauthorized
	case !who.HasScope(quan.ScopeSettlement):
		return 0, quan.Errorf(quan.EFORBIDDEN, "settlement is the order system's: it needs a service key with the settlement scope")
	case who.UserID <= 0:
		var v quan.Validation
		v.Add("userId", "name the user whose order this is")
		return 0, v.Err("invalid settlement")
	}
	return who.UserID, nil
}

// reached refuses coupons of a shop a shop's key does not own, as if
// they were not there.
func reached(who quan.Identity, cs []*quan.Coupon, what string) error {
	for _, c := range cs {
		if !who.Reaches(c.ShopNo) {
			return quan.Errorf(quan.ENOTFOUND, "no %s", what)
		}
	}
	return nil
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
	now := s.Now.UTC()
	if f.Status == "" {
		// Every coupon matches: the store reads the page alone. A status
		// is what Lapse makes of the stored one at now, so a filter by
		// status reads them all.
		page, total, err := s.Coupons.UserCouponPage(ctx, user, f.Offset, limit)
		if err != nil {
			return nil, 0, err
		}
		for _, c := range page {
			c.Lapse(now)
		}
		return page, total, nil
	}
	all, err := s.Coupons.UserCoupons(ctx, user, 0)
	if err != nil {
		return nil, 0, err
	}
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

// templatesOf returns the templates of coupons (nil for one that does
// not exist): from the cache of specs, and those it lacks from the store
// in one query a hundred, never one a coupon.
func (s *Service) templatesOf(ctx context.Context, all []*quan.Coupon) (map[int64]*quan.Template, error) {
	templates := map[int64]*quan.Template{}
	var missing []int64
	for _, c := range all {
		if _, ok := templates[c.TemplateID]; ok {
			continue
		}
		t := s.specs.get(c.TemplateID)
		if t == nil {
			missing = append(missing, c.TemplateID)
		}
		templates[c.TemplateID] = t
	}
	for len(missing) > 0 {
		n := min(len(missing), quan.MaxPageSize)
		ts, _, err := s.Templates.Templates(ctx, quan.TemplateFilter{ShopNo: quan.AnyShop, IDs: missing[:n], Limit: n})
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			s.specs.put(t)
			templates[t.ID] = t
		}
		missing = missing[n:]
	}
	return templates, nil
}

// Item is a coupon as its holder's wallet shows it: the coupon, and the
// display of its template (name, rule text, scope, logo, instructions …),
// nil only if the template is gone.
type Item struct {
	*quan.Coupon
	Template *quan.TemplateDisplay `json:"template"`
	// TemplateJSON is Template as encoding/json writes it, when the
	// service has it already (nil otherwise): a writer may copy it rather
	// than encode Template again.
	TemplateJSON []byte `json:"-"`
}

// Items returns cs with the displays of their templates, read as
// templatesOf reads them: a page of a wallet costs at most one query of
// templates, and none once they are cached.
func (s *Service) Items(ctx context.Context, cs []*quan.Coupon) ([]*Item, error) {
	ts, err := s.templatesOf(ctx, cs)
	if err != nil {
		return nil, fmt.Errorf("templates of the coupons: %w", err)
	}
	type shown struct {
		d *quan.TemplateDisplay
		j []byte
	}
	seen := make(map[int64]shown, len(ts))
	out, items := make([]*Item, len(cs)), make([]Item, len(cs))
	for i, c := range cs {
		sh, ok := seen[c.TemplateID]
		if !ok {
			if t := ts[c.TemplateID]; t != nil {
				sh.d, sh.j = s.specs.display(t)
			}
			seen[c.TemplateID] = sh
		}
		items[i] = Item{Coupon: c, Template: sh.d, TemplateJSON: sh.j}
		out[i] = &items[i]
	}
	return out, nil
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
