package quan

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// DefaultLockTTL is how long an order holds its coupons unless it pays.
const DefaultLockTTL = 15 * time.Minute

// CouponEventSubject is the bus subject of coupon status changes.
const CouponEventSubject = "quan.coupon.status_changed"

// CouponEvent says a coupon's status changed, for downstream systems.
type CouponEvent struct {
	Coupon   int64        `json:"coupon"`
	User     int64        `json:"user"`
	Template int64        `json:"template"`
	Old      CouponStatus `json:"old"`
	New      CouponStatus `json:"new"`
	Order    string       `json:"order,omitempty"`
	At       time.Time    `json:"at"`
}

// CouponStores are the ports the wallet uses of one store.
type CouponStores interface {
	CouponStore
	WalletStore
}

// WalletService is the user's side of coupons after they are issued: the
// wallet, pricing an order, locking coupons for it, paying, cancelling and
// refunding, and what time does to coupons.
type WalletService struct {
	Coupons   CouponStores
	Templates TemplateStore
	Bus       Bus // nil publishes no events
	Now       Clock
	Logger    *slog.Logger
	LockTTL   time.Duration // 0 means DefaultLockTTL

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

func (s *WalletService) now() time.Time {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	return now().UTC().Truncate(time.Microsecond)
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
	var v validator
	switch f.Status {
	case "", CouponAvailable, CouponLocked, CouponUsed, CouponExpired, CouponRevoked:
	default:
		v.add("status", fmt.Sprintf("%q is not a status: use available, locked, used, expired or revoked", f.Status))
	}
	v.page(f.Offset, f.Limit)
	if err := v.err("invalid wallet query"); err != nil {
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
	now := s.now()
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
			c.Lapse(s.now())
			return c, nil
		}
	}
	return nil, Errorf(ENOTFOUND, "you hold no coupon %d", id)
}

// Claimable returns the active templates, issuing now with stock left, of
// which the user holds fewer than the limit: the first MaxPageSize of
// them, newest first.
func (s *WalletService) Claimable(ctx context.Context, who Identity) ([]*Template, error) {
	user, err := userOf(who)
	if err != nil {
		return nil, err
	}
	ts, _, err := s.Templates.Templates(ctx, TemplateFilter{ShopNo: AnyShop, Status: TemplateActive, Limit: MaxPageSize})
	if err != nil {
		return nil, err
	}
	held, err := s.Coupons.UserCoupons(ctx, user, 0)
	if err != nil {
		return nil, err
	}
	count := map[int64]int64{}
	for _, c := range held {
		count[c.TemplateID]++
	}
	now := s.now()
	out := []*Template{}
	for _, t := range ts {
		if t.Stock > 0 && !now.Before(t.IssueStart) && now.Before(t.IssueEnd) && count[t.ID] < t.PerUserLimit {
			out = append(out, t)
		}
	}
	return out, nil
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

// change runs fn on the coupons ids of user as seen, read a moment ago
// without a lock, and writes what it made of them if they are still so:
// one round trip. If one changed in between (another order, the sweeper),
// fn runs again on the coupons as they are, under the store's lock.
func (s *WalletService) change(ctx context.Context, user int64, seen []*Coupon, ids []int64, fn func([]*Coupon) error) ([]*Coupon, error) {
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	before := make([]*Coupon, 0, len(ids))
	for _, id := range ids {
		i := slices.IndexFunc(seen, func(c *Coupon) bool { return c.ID == id })
		if i < 0 {
			// The locked way says what is missing.
			return s.Coupons.UpdateCoupons(ctx, user, ids, fn)
		}
		before = append(before, seen[i])
	}
	after := make([]*Coupon, len(before))
	for i, c := range before {
		cp := *c
		after[i] = &cp
	}
	if err := fn(after); err != nil {
		return nil, err
	}
	changed := false
	for i, c := range after {
		b := before[i]
		changed = changed || c.Status != b.Status || c.OrderID != b.OrderID || !c.LockedUntil.Equal(b.LockedUntil)
	}
	if !changed {
		return after, nil // nothing to write: a change made before, asked again
	}
	ok, err := s.Coupons.SwapCoupons(ctx, user, before, after)
	if err != nil {
		return nil, err
	}
	if ok {
		return after, nil
	}
	return s.Coupons.UpdateCoupons(ctx, user, ids, fn)
}

// Quote prices items with every coupon the user holds that could apply:
// available or locked ones, and expired ones whose window closed lately
// are reported with their reason too.
func (s *WalletService) Quote(ctx context.Context, who Identity, items []OrderItem) (Quote, error) {
	user, err := userOf(who)
	if err != nil {
		return Quote{}, err
	}
	if err := ValidateOrder(items); err != nil {
		return Quote{}, err
	}
	now := s.now()
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
	return PriceOrder(items, cs, templates, now), nil
}

// LockRequest asks to hold coupons for an order at the discount the client
// was quoted.
type LockRequest struct {
	Items            []OrderItem `json:"items"`
	CouponIDs        []int64     `json:"couponIds"`
	ExpectedDiscount int64       `json:"expectedDiscount"`
}

// Key identifies the request among the locks of its order: a digest of
// its items and its coupons (in id order, each once). The discount
// expected is left out: the items and coupons decide it, and a lock asked
// again at another is refused as a price change.
func (r LockRequest) Key() string {
	h := sha256.New()
	for _, it := range r.Items {
		// Quoted, the strings cannot run into the next field.
		fmt.Fprintf(h, "%q %q %d %d %d\n", it.SKU, it.Category, it.ShopNo, it.UnitPrice, it.Quantity)
	}
	fmt.Fprintf(h, "coupons %v", slices.Compact(slices.Sorted(slices.Values(r.CouponIDs))))
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Lock holds the coupons for order until the lock TTL runs out. The server
// prices the order again: the coupons must be usable together under the
// stacking rules and give exactly the expected discount. Locking a locked
// order again with the same items and coupons (LockRequest.Key) returns its
// coupons (idempotent); with other items or coupons it is a conflict, as
// is a coupon that another order holds.
func (s *WalletService) Lock(ctx context.Context, who Identity, order string, req LockRequest) ([]*Coupon, error) {
	user, err := userOf(who)
	if err != nil {
		return nil, err
	}
	if err := validOrderID(order); err != nil {
		return nil, err
	}
	if err := ValidateOrder(req.Items); err != nil {
		return nil, err
	}
	if len(req.CouponIDs) == 0 {
		return nil, Errorf(EINVALID, "couponIds: name at least one coupon")
	}
	now := s.now()
	key := req.Key()
	// The coupons named, and those the order holds already: a lock of
	// the order by another request is a conflict.
	all, err := s.Coupons.OrderCoupons(ctx, user, order, req.CouponIDs)
	if err != nil {
		return nil, err
	}
	for _, c := range all {
		c := *c
		c.Lapse(now)
		if c.Status == CouponLocked && c.OrderID == order && c.LockKey != key {
			return nil, lockedOtherwise(order)
		}
	}
	templates, err := s.templatesOf(ctx, all)
	if err != nil {
		return nil, err
	}
	var chosen []*Coupon
	for _, id := range slices.Compact(slices.Sorted(slices.Values(req.CouponIDs))) {
		i := slices.IndexFunc(all, func(c *Coupon) bool { return c.ID == id })
		if i < 0 {
			return nil, Errorf(ENOTFOUND, "you hold no coupon %d", id)
		}
		c := *all[i]
		c.Lapse(now)
		switch {
		case c.Status == CouponLocked && c.OrderID == order:
			c.Status = CouponAvailable // price it as the lock found it
		case c.Status == CouponLocked:
			return nil, Errorf(ECONFLICT, "coupon %d is held by another order", id)
		}
		chosen = append(chosen, &c)
	}
	q := PriceOrder(req.Items, chosen, templates, now)
	slots := map[int64]int64{} // stackSlot → coupon
	var discount int64
	for _, cq := range q.Coupons {
		if !cq.Usable {
			return nil, Errorf(ENOTUSABLE, "coupon %d cannot be used for this order: %s", cq.CouponID, cq.Reason)
		}
		slot := stackSlot(cq)
		if other, ok := slots[slot]; ok {
			return nil, Errorf(ENOTUSABLE, "coupons %d and %d do not stack: at most one %s coupon", other, cq.CouponID, slotName(slot))
		}
		slots[slot] = cq.CouponID
		discount += cq.Discount
	}
	discount = min(discount, q.Total)
	if discount != req.ExpectedDiscount {
		return nil, Errorf(EPRICECHANGED, "these coupons take %d fen off this order, not the %d expected: quote again", discount, req.ExpectedDiscount)
	}
	until := now.Add(cmp0(s.LockTTL, DefaultLockTTL))
	var events []CouponEvent
	cs, err := s.change(ctx, user, all, req.CouponIDs, func(cs []*Coupon) error {
		events = events[:0]
		for _, c := range cs {
			old := c.Status
			c.Lapse(now)
			switch {
			case c.Status == CouponLocked && c.OrderID == order && c.LockKey == key:
				continue // locked by this request before: idempotent
			case c.Status == CouponLocked && c.OrderID == order:
				return lockedOtherwise(order) // by another request meanwhile
			case c.Status == CouponLocked:
				return Errorf(ECONFLICT, "coupon %d is held by another order", c.ID)
			}
			if err := c.Lock(order, now, until); err != nil {
				return err
			}
			c.LockKey = key
			events = append(events, eventOf(c, old, now))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lock coupons for order %s: %w", order, err)
	}
	s.publish(ctx, events)
	return cs, nil
}

// lockedOtherwise is the conflict of locking order again with another
// request than the one that locked it.
func lockedOtherwise(order string) error {
	return Errorf(ECONFLICT, "order %s is locked already, with other items or coupons: release it to lock it again", order)
}

func cmp0(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// validOrderID refuses order ids that are empty or too long.
func validOrderID(order string) error {
	if order == "" || len(order) > 64 {
		return Errorf(EINVALID, "order id %q: 1 to 64 characters", order)
	}
	return nil
}

// Redeem spends the coupons order holds: it was paid. Redeeming a paid
// order again returns its coupons; an order that holds none (never
// locked, released, or its lock ran out) is an illegal transition.
func (s *WalletService) Redeem(ctx context.Context, who Identity, order string) ([]*Coupon, error) {
	return s.orderChange(ctx, who, order, "redeem", func(c *Coupon, now time.Time) (bool, error) {
		switch c.Status {
		case CouponUsed:
			return false, nil
		case CouponLocked:
			return true, c.Redeem(now)
		}
		return false, nil
	}, func(cs []*Coupon) error {
		for _, c := range cs {
			if c.Status == CouponUsed || c.Status == CouponLocked {
				return nil
			}
		}
		return Errorf(ETRANSITION, "order %s holds no coupons to pay with: it was never locked, was released, or its lock ran out", order)
	})
}

// Release gives back the coupons order holds: it was cancelled. It is
// idempotent: an order that holds nothing releases nothing. A paid order
// is refunded, not released.
func (s *WalletService) Release(ctx context.Context, who Identity, order string) ([]*Coupon, error) {
	return s.orderChange(ctx, who, order, "release", func(c *Coupon, now time.Time) (bool, error) {
		switch c.Status {
		case CouponLocked:
			return true, c.Release(now)
		case CouponUsed:
			return false, Errorf(ETRANSITION, "coupon %d was paid with: refund order %s instead", c.ID, order)
		}
		return false, nil
	}, nil)
}

// Refund gives back the coupons a paid order used: available again while
// valid, expired otherwise. It is idempotent.
func (s *WalletService) Refund(ctx context.Context, who Identity, order string) ([]*Coupon, error) {
	return s.orderChange(ctx, who, order, "refund", func(c *Coupon, now time.Time) (bool, error) {
		switch c.Status {
		case CouponUsed:
			return true, c.Refund(now)
		case CouponLocked:
			return false, Errorf(ETRANSITION, "coupon %d is locked, not paid: release order %s instead", c.ID, order)
		}
		return false, nil
	}, nil)
}

// orderChange applies change to the coupons of the user that order holds
// or used, in one transaction, after check (if any) passes on them.
func (s *WalletService) orderChange(ctx context.Context, who Identity, order, verb string,
	change func(c *Coupon, now time.Time) (bool, error), check func([]*Coupon) error) ([]*Coupon, error) {
	user, err := userOf(who)
	if err != nil {
		return nil, err
	}
	if err := validOrderID(order); err != nil {
		return nil, err
	}
	all, err := s.Coupons.OrderCoupons(ctx, user, order, nil)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(all))
	for i, c := range all {
		ids[i] = c.ID
	}
	now := s.now()
	var events []CouponEvent
	cs, err := s.change(ctx, user, all, ids, func(cs []*Coupon) error {
		events = events[:0]
		for _, c := range cs {
			old := c.Status
			if c.Lapse(now) {
				events = append(events, eventOf(c, old, now))
				old = c.Status
			}
		}
		mine := cs[:0:0]
		for _, c := range cs {
			if c.OrderID == order || c.Status == CouponUsed {
				mine = append(mine, c)
			}
		}
		if check != nil {
			if err := check(mine); err != nil {
				return err
			}
		}
		for _, c := range mine {
			old := c.Status
			changed, err := change(c, now)
			if err != nil {
				return err
			}
			if changed {
				events = append(events, eventOf(c, old, now))
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s order %s: %w", verb, order, err)
	}
	s.publish(ctx, events)
	if cs == nil {
		cs = []*Coupon{}
	}
	return cs, nil
}

func eventOf(c *Coupon, old CouponStatus, now time.Time) CouponEvent {
	return CouponEvent{Coupon: c.ID, User: c.UserID, Template: c.TemplateID, Old: old, New: c.Status, Order: c.OrderID, At: now}
}

// MaxEventsPerMessage bounds the events one message on
// CouponEventSubject carries.
const MaxEventsPerMessage = 1000

// publish sends events on the bus, up to MaxEventsPerMessage in a
// message: a JSON array, in the order the changes were made. JetStream
// spends about as much on a message of one event as of a thousand: one
// event a message made the sweeper three times slower with a bus than
// without. They follow the commit: a publish that fails is logged, and the
// sweeper's and the next change's events go on.
func (s *WalletService) publish(ctx context.Context, events []CouponEvent) {
	if s.Bus == nil || len(events) == 0 {
		return
	}
	ms := make([]Message, 0, (len(events)+MaxEventsPerMessage-1)/MaxEventsPerMessage)
	for part := range slices.Chunk(events, MaxEventsPerMessage) {
		data, err := json.Marshal(part)
		if err != nil {
			s.logger().Error("encode coupon events", "events", len(part), "err", err)
			return
		}
		// A change is one coupon's, at one moment, to one status: the
		// first names the message (the bus drops a repeat of it).
		e := part[0]
		ms = append(ms, Message{Subject: CouponEventSubject, Data: data,
			ID: fmt.Sprintf("coupon-%d-%s-%d-%d", e.Coupon, e.New, e.At.UnixMicro(), len(part))})
	}
	if err := s.Bus.PublishMany(context.WithoutCancel(ctx), ms); err != nil {
		s.logger().Error("publish coupon events", "events", len(events), "messages", len(ms), "err", err)
	}
}

// DecodeCouponEvents reads a message of CouponEventSubject: a JSON array
// of events.
func DecodeCouponEvents(data []byte) ([]CouponEvent, error) {
	var es []CouponEvent
	if err := json.Unmarshal(data, &es); err != nil {
		return nil, Errorf(EINVALID, "coupon events: %v", err)
	}
	return es, nil
}

// Sweep writes down what time did to coupons, in batches of up to batch:
// available coupons whose window closed expire, locks that ran out are
// released. It returns how many coupons it changed.
func (s *WalletService) Sweep(ctx context.Context, batch int) (int, error) {
	now := s.now()
	// The events of a batch go out while the next batch is swept.
	out := make(chan []CouponEvent, 1)
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for events := range out {
			s.publish(ctx, events)
		}
	}()
	defer func() {
		close(out)
		<-sent
	}()
	n := 0
	for {
		cs, was, err := s.Coupons.LapseCoupons(ctx, now, batch)
		if err != nil {
			return n, err
		}
		n += len(cs)
		if s.Bus != nil && len(cs) > 0 {
			events := make([]CouponEvent, len(cs))
			for i, c := range cs {
				events[i] = eventOf(c, was[i], now)
				events[i].Order = ""
			}
			out <- events
		}
		if len(cs) < batch {
			return n, nil
		}
	}
}

// Archive moves the used, expired and revoked coupons of ended templates
// last changed over after ago into the history table, in batches, and
// returns how many; nothing when the store cannot archive.
func (s *WalletService) Archive(ctx context.Context, after time.Duration, batch int) (int, error) {
	a, ok := s.Coupons.(Archiver)
	if !ok || after <= 0 {
		return 0, nil
	}
	now := s.now()
	n := 0
	for {
		k, err := a.ArchiveCoupons(ctx, now.Add(-after), now, batch)
		n += k
		if err != nil || k < batch {
			return n, err
		}
	}
}
