// Package inmem holds quan's embedded adapters: state kept in the process,
// lost when it stops. It is the default when no backend URL is given.
package inmem

import (
	"context"
	"iter"
	"sync"
	"time"

	"github.com/quanhq/quan"
)

// KeyTTL is how long a Reserve key is remembered: a retry within it gets
// the first call's outcomes.
const KeyTTL = 24 * time.Hour

var _ quan.Cache = (*Cache)(nil)

// Cache is a quan.Cache in the process memory. Each template has its own
// lock, so reservations of different templates never wait on each other.
// The zero value is not usable; call NewCache.
type Cache struct {
	// Now tells when a Reserve key expires (KeyTTL after its first use).
	// It is the wall clock, unrelated to the now passed to Reserve, and
	// replaceable so that expiry tests never sleep. Set it before use.
	Now func() time.Time

	mu        sync.RWMutex
	templates map[int64]*template

	shopMu sync.Mutex
	shops  shopCounts
}

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{Now: time.Now, templates: make(map[int64]*template)}
}

// template is the state of one template. Prime replaces the whole value,
// key records included: a record tells what was reserved from the counts
// it was made against, and those counts are gone.
type template struct {
	mu     sync.Mutex
	st     quan.TemplateState
	counts map[int64]int64
	// periods counts the reservations of each user by Shanghai day and
	// week, for the period limits; nil until a template with such limits
	// reserves. Reserve drops the days and weeks before the last.
	periods map[periodKey]int64
	// periodsFrom is the day dropPeriodsBefore last swept.
	periodsFrom int64
	keys        map[string]*record
	queue       []*record // keys by expiry: the TTL is constant, so in use order
	head        int       // queue[:head] are expired and dropped
}

// record is what one Reserve key did.
type record struct {
	key      string
	outcomes []quan.Refusal
	reserved []int64 // users who got one, once per coupon; nil once released
	expires  time.Time
	// day and week the reservations count in, when the template has
	// period limits (periodic).
	day, week int64
	periodic  bool
}

// periodKey is a user's count in one Shanghai day (week false) or week.
type periodKey struct {
	user   int64
	week   bool
	period int64
}

func (c *Cache) get(id int64) (*template, error) {
	c.mu.RLock()
	t := c.templates[id]
	c.mu.RUnlock()
	if t == nil {
		return nil, quan.ErrCacheCold
	}
	return t, nil
}

// Reserve implements quan.Cache.
func (c *Cache) Reserve(ctx context.Context, id int64, key string, users []int64, now time.Time) ([]quan.Refusal, error) {
	t, err := c.get(id)
	if err != nil {
		return nil, err
	}
	wall := c.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweep(wall)
	if r := t.keys[key]; r != nil {
		return append([]quan.Refusal(nil), r.outcomes...), nil
	}
	r := &record{key: key, outcomes: make([]quan.Refusal, len(users)), expires: wall.Add(KeyTTL)}
	all := refuseAll(&t.st, now)
	if t.st.PerUserDaily > 0 || t.st.PerUserWeekly > 0 {
		r.periodic, r.day, r.week = true, quan.ShanghaiDay(now), quan.ShanghaiWeek(now)
		t.dropPeriodsBefore(r.day, r.week)
	}
	for i, u := range users {
		switch {
		case all != "":
			r.outcomes[i] = all
		case t.counts[u] >= t.st.PerUserLimit:
			r.outcomes[i] = quan.RefusedLimit
		case r.periodic && t.st.PerUserDaily > 0 && t.periods[periodKey{u, false, r.day}] >= t.st.PerUserDaily:
			r.outcomes[i] = quan.RefusedDaily
		case r.periodic && t.st.PerUserWeekly > 0 && t.periods[periodKey{u, true, r.week}] >= t.st.PerUserWeekly:
			r.outcomes[i] = quan.RefusedWeekly
		case t.st.Stock <= 0:
			r.outcomes[i] = quan.RefusedSoldOut
		default:
			t.st.Stock--
			t.counts[u]++
			if r.periodic {
				t.periods[periodKey{u, false, r.day}]++
				t.periods[periodKey{u, true, r.week}]++
			}
			r.reserved = append(r.reserved, u)
		}
	}
	t.keys[key] = r
	t.queue = append(t.queue, r)
	return append([]quan.Refusal(nil), r.outcomes...), nil
}

// dropPeriodsBefore forgets the counts of the days before the one before
// day and of the weeks before the one before week: no reservation counts
// in them any more, and the one before stays for the Release of a
// reservation made just before midnight. It makes t.periods if needed.
func (t *template) dropPeriodsBefore(day, week int64) {
	if t.periods == nil {
		t.periods = make(map[periodKey]int64)
		return
	}
	if t.periodsFrom == day {
		return // swept today
	}
	for k := range t.periods {
		if k.week && k.period < week-1 || !k.week && k.period < day-1 {
			delete(t.periods, k)
		}
	}
	t.periodsFrom = day
}

// refuseAll returns the refusal every user of a batch gets from the
// template's status and window, "" when it issues at now.
func refuseAll(st *quan.TemplateState, now time.Time) quan.Refusal {
	switch {
	case st.Status != quan.TemplateActive:
		return quan.RefusedInactive
	case now.Before(st.IssueStart):
		return quan.RefusedNotStarted
	case !now.Before(st.IssueEnd):
		return quan.RefusedEnded
	}
	return ""
}

// sweep forgets the keys expired at wall. It runs with t.mu held, so
// memory stays bounded by a day of keys without a background goroutine.
func (t *template) sweep(wall time.Time) {
	for t.head < len(t.queue) && !wall.Before(t.queue[t.head].expires) {
		r := t.queue[t.head]
		t.queue[t.head] = nil
		t.head++
		if t.keys[r.key] == r {
			delete(t.keys, r.key)
		}
	}
	if t.head > 1024 && t.head > len(t.queue)/2 {
		t.queue = append([]*record(nil), t.queue[t.head:]...)
		t.head = 0
	}
}

// Release implements quan.Cache. A template not loaded has nothing to give
// back: Release changes nothing and returns nil.
func (c *Cache) Release(ctx context.Context, id int64, key string) error {
	t, err := c.get(id)
	if err != nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweep(c.Now())
	r := t.keys[key]
	if r == nil {
		return nil
	}
	for _, u := range r.reserved {
		if t.counts[u]--; t.counts[u] <= 0 {
			delete(t.counts, u)
		}
		if r.periodic {
			for _, k := range []periodKey{{u, false, r.day}, {u, true, r.week}} {
				if t.periods[k]--; t.periods[k] <= 0 {
					delete(t.periods, k)
				}
			}
		}
		t.st.Stock++
	}
	r.reserved = nil
	return nil
}

// Prime implements quan.Cache. It reads holdings before taking any lock,
// so reservations go on against the old state meanwhile; an error of
// holdings leaves the old state in place.
func (c *Cache) Prime(ctx context.Context, st quan.TemplateState, holdings iter.Seq2[quan.Holding, error]) error {
	_, err := c.prime(ctx, st, holdings, false)
	return err
}

// Load implements quan.Cache.
func (c *Cache) Load(ctx context.Context, st quan.TemplateState, holdings iter.Seq2[quan.Holding, error]) (bool, error) {
	if _, err := c.get(st.ID); err == nil {
		return false, nil // spare reading the holdings
	}
	return c.prime(ctx, st, holdings, true)
}

func (c *Cache) prime(ctx context.Context, st quan.TemplateState, holdings iter.Seq2[quan.Holding, error], onlyCold bool) (bool, error) {
	t := &template{st: st, counts: make(map[int64]int64), keys: make(map[string]*record)}
	periodic := st.PerUserDaily > 0 || st.PerUserWeekly > 0
	var (
		day     int64 // of the holdings' period counts; 0: they carry none
		periods map[periodKey]int64
	)
	for h, err := range holdings {
		if err != nil {
			return false, err
		}
		if err := ctx.Err(); err != nil {
			return false, err
		}
		if h.Count > 0 { // a user holding none needs no entry
			t.counts[h.UserID] = h.Count
		}
		if !periodic || h.PeriodDay == 0 {
			continue
		}
		if day == 0 {
			day, periods = h.PeriodDay, make(map[periodKey]int64)
		} else if h.PeriodDay != day {
			return false, mixedDays(st.ID, day, h.PeriodDay)
		}
		if h.Day > 0 {
			periods[periodKey{h.UserID, false, day}] = h.Day
		}
		if h.Week > 0 {
			periods[periodKey{h.UserID, true, quan.WeekOfDay(day)}] = h.Week
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old, loaded := c.templates[st.ID]
	if loaded && onlyCold {
		return false, nil
	}
	t.periods = periods
	if loaded {
		// The period counts of other days and weeks are the
		// reservations' own, which the holdings do not tell: they stay,
		// as they do in Redis. They are copied, not shared: a Reserve
		// that found old before the swap may still write old's.
		old.mu.Lock()
		if len(old.periods) > 0 {
			t.periods = make(map[periodKey]int64, len(old.periods)+len(periods))
			week := quan.WeekOfDay(day)
			for k, n := range old.periods {
				if day != 0 && (k.week && k.period == week || !k.week && k.period == day) {
					continue // replaced by the holdings'
				}
				t.periods[k] = n
			}
			for k, n := range periods {
				t.periods[k] = n
			}
		}
		t.periodsFrom = old.periodsFrom
		old.mu.Unlock()
	}
	c.templates[st.ID] = t
	return true, nil
}

// mixedDays is the error of holdings whose period counts are of two days.
func mixedDays(template, day, other int64) error {
	return quan.Errorf(quan.EINVALID, "the holdings of template %d count the periods of two days, %d and %d: a load takes one", template, day, other)
}

// Update implements quan.Cache. The stock may fall below zero if
// stockDelta says so; Reserve then refuses with sold_out until it is
// positive again.
func (c *Cache) Update(ctx context.Context, st quan.TemplateState, stockDelta int64) error {
	t, err := c.get(st.ID)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	stock := t.st.Stock + stockDelta
	t.st = st
	t.st.Stock = stock
	return nil
}

// State implements quan.Cache.
func (c *Cache) State(ctx context.Context, id int64) (quan.TemplateState, error) {
	t, err := c.get(id)
	if err != nil {
		return quan.TemplateState{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.st, nil
}

// Held implements quan.Cache; ErrCacheCold if the template is not loaded.
func (c *Cache) Held(ctx context.Context, id, user int64) (int64, error) {
	t, err := c.get(id)
	if err != nil {
		return 0, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.counts[user], nil
}

// Reservation implements quan.Cache.
func (c *Cache) Reservation(ctx context.Context, id int64, key string) ([]quan.Refusal, error) {
	t, err := c.get(id)
	if err != nil {
		return nil, quan.Errorf(quan.ENOTFOUND, "no reservation %q of template %d", key, id)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweep(c.Now())
	r := t.keys[key]
	if r == nil {
		return nil, quan.Errorf(quan.ENOTFOUND, "no reservation %q of template %d", key, id)
	}
	return append([]quan.Refusal(nil), r.outcomes...), nil
}

// Holdings implements quan.Cache. It copies the counts under the
// template's lock, then yields them.
func (c *Cache) Holdings(ctx context.Context, id int64) iter.Seq2[quan.Holding, error] {
	return func(yield func(quan.Holding, error) bool) {
		t, err := c.get(id)
		if err != nil {
			yield(quan.Holding{}, err)
			return
		}
		t.mu.Lock()
		hs := make([]quan.Holding, 0, len(t.counts))
		for u, n := range t.counts {
			if n > 0 {
				hs = append(hs, quan.Holding{UserID: u, Count: n})
			}
		}
		t.mu.Unlock()
		for _, h := range hs {
			if !yield(h, nil) {
				return
			}
		}
	}
}

// SwapStock implements quan.Cache.
func (c *Cache) SwapStock(ctx context.Context, id, old, stock int64) (bool, error) {
	t, err := c.get(id)
	if err != nil {
		return false, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.st.Stock != old {
		return false, nil
	}
	t.st.Stock = stock
	return true, nil
}

// SwapHeld implements quan.Cache.
func (c *Cache) SwapHeld(ctx context.Context, id int64, swaps []quan.HeldSwap) (int, error) {
	t, err := c.get(id)
	if err != nil {
		return 0, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, s := range swaps {
		if t.counts[s.UserID] != s.Old {
			continue
		}
		if s.Count > 0 {
			t.counts[s.UserID] = s.Count
		} else {
			delete(t.counts, s.UserID)
		}
		n++
	}
	return n, nil
}

// PeriodHoldings implements quan.Cache.
func (c *Cache) PeriodHoldings(ctx context.Context, id int64, p quan.Period) iter.Seq2[quan.Holding, error] {
	return func(yield func(quan.Holding, error) bool) {
		t, err := c.get(id)
		if err != nil {
			yield(quan.Holding{}, err)
			return
		}
		t.mu.Lock()
		var hs []quan.Holding
		for k, n := range t.periods {
			if k.week == p.Week && k.period == p.N && n > 0 {
				hs = append(hs, quan.Holding{UserID: k.user, Count: n})
			}
		}
		t.mu.Unlock()
		for _, h := range hs {
			if !yield(h, nil) {
				return
			}
		}
	}
}

// SwapPeriodHeld implements quan.Cache.
func (c *Cache) SwapPeriodHeld(ctx context.Context, id int64, p quan.Period, swaps []quan.HeldSwap) (int, error) {
	t, err := c.get(id)
	if err != nil {
		return 0, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.periods == nil {
		t.periods = make(map[periodKey]int64)
	}
	n := 0
	for _, s := range swaps {
		k := periodKey{s.UserID, p.Week, p.N}
		if max(t.periods[k], 0) != s.Old {
			continue
		}
		if s.Count > 0 {
			t.periods[k] = s.Count
		} else {
			delete(t.periods, k)
		}
		n++
	}
	return n, nil
}
