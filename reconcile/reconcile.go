package reconcile

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"sync"
	"time"

	"github.com/quanhq/quan"
)

// DefaultSettle is how long Reconciler waits between the two
// readings of a template that looked drifted.
const DefaultSettle = 2 * time.Second

// InFlight is work of this process that the cache has seen and the store
// not yet (or the reverse) and that no bus or ledger shows: a claim
// between its reservation and its hand-off, a chunk between its
// reservation and its commit, a template change between the store and
// the cache. claims.Service, tasks.Runner and templates.Service are InFlight.
type InFlight interface {
	// InFlight returns how many such operations are under way now.
	InFlight() int64
}

// Reconciler compares the cache's stock and holdings (and, for templates
// with period limits, the users' counts of today and this week) with the
// store's for the active templates, reports the drift and corrects the
// cache from the store: the store decides.
//
// The contract, and why it does not mistake work in flight for drift: the
// cache runs ahead of the store. A claim reserves in the cache at once and
// reaches the store later, through the bus; a chunk reserves before the
// store applies it; a template change reaches the store before the cache.
// While such work is under way the two differ, rightly, and correcting
// the cache then would give back stock that is taken (and let claims
// through that the store will refuse). So a template counts as drifted
// only when
//
//   - nothing is in flight for it at each of the checks that enclose each
//     reading (Busy: this process's InFlight work, the claims of the
//     template in the cache's Ledger, a running task of the
//     template, the claims and chunks waiting on the bus, which the
//     store has not acknowledged yet), and its cached stock did not move
//     while it was read;
//   - and two readings Settle apart find the same difference (the same
//     stocks, the same users with the same counts). Work that began
//     after one check and ended before the next shows in one reading at
//     most: it moves the store's figures (a claim committed) or the
//     cache's (a claim given back) between the two readings.
//
// The checks go this process's work first, then the ledger, then the bus:
// a claim is in the ledger from its reservation until after it is on the
// bus, and on the bus until after the store decided it, so no claim slips
// between two checks unseen.
//
// A correction is a compare-and-set from the values read (Cache.SwapStock,
// Cache.SwapHeld): a reservation made since, a Prime, or another
// Reconciler that corrected first makes it change nothing. Reconcilers in
// several processes sharing a cache are thus safe; each corrects a drift
// once it has read it twice, and the first one's correction is the only
// one that applies.
//
// Templates the cache does not hold are skipped: a cold template is loaded
// whole from the store when it is needed.
type Reconciler struct {
	Templates quan.TemplateStore
	Tasks     quan.TaskStore   // nil: no task runs (no chunk in flight)
	Coupons   quan.CouponStore // the store's holdings
	Cache     quan.Cache
	// Ledger, if set, is the cache's record of the claims reserved and not
	// yet handed off (claims.Service.Ledger): a template with any is busy.
	Ledger quan.ClaimLedger
	// Buses carry the claims and chunks that are in flight while they
	// wait on them (the claim bus and the chunk bus: nil ones are left
	// out, the same one twice is read once).
	Buses []quan.Bus
	// Local is this process's work in flight.
	Local []InFlight
	// Settle is the wait between two readings; 0 means
	// DefaultSettle, below 0 none (for tests).
	Settle time.Duration
	// Now tells the day and week whose period counts are compared (nil
	// means time.Now).
	Now      func() time.Time
	Logger   *slog.Logger
	Counters quan.ReconcileCounters

	mu     sync.Mutex
	checks map[int64]bool // templates to check besides the active ones
	wake   chan struct{}
}

// queues are the bus subjects and consumers whose backlog is work in
// flight: claims handed off and not yet persisted, their dead letters not
// yet failed, chunks not yet applied.
var reconcileQueues = [][2]string{
	{quan.ClaimBatchSubject, quan.ClaimDurable},
	{quan.DeadLetterPrefix + quan.ClaimBatchSubject, quan.ClaimDurable + "-dead"},
	{quan.ChunkSubject, quan.ChunkDurable},
}

func (r *Reconciler) logger() *slog.Logger {
	if r.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Logger
}

func (r *Reconciler) init() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.wake == nil {
		r.wake = make(chan struct{}, 1)
		r.checks = map[int64]bool{}
	}
}

// Check asks Run to reconcile template soon, active or not (a
// distribution that ended asks for its template). It does not wait.
func (r *Reconciler) Check(template int64) {
	r.init()
	r.mu.Lock()
	r.checks[template] = true
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run reconciles every interval, and soon after a Check, until ctx ends.
// An interval of 0 or less runs nothing.
func (r *Reconciler) Run(ctx context.Context, every time.Duration) error {
	if every <= 0 {
		return nil
	}
	r.init()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-r.wake:
		}
		if err := r.Reconcile(ctx); err != nil && ctx.Err() == nil {
			r.logger().Warn("reconcile the cache with the store", "err", err)
		}
	}
}

// Drift is what one reading of a template found.
type Drift struct {
	Template   int64
	CacheStock int64
	StoreStock int64
	// Held are the users whose counts differ: Old the cache's, Count the
	// store's (the correction SwapHeld makes).
	Held []quan.HeldSwap
	// For a template with period limits, the users whose counts of the
	// day and of the week of the reading differ (the corrections
	// SwapPeriodHeld makes).
	Day, Week         quan.Period
	DayHeld, WeekHeld []quan.HeldSwap
}

// None reports whether cache and store agree.
func (d Drift) None() bool {
	return d.CacheStock == d.StoreStock && len(d.Held) == 0 && len(d.DayHeld) == 0 && len(d.WeekHeld) == 0
}

func (d Drift) same(e Drift) bool {
	return d.CacheStock == e.CacheStock && d.StoreStock == e.StoreStock && d.Day == e.Day && d.Week == e.Week &&
		sameSwaps(d.Held, e.Held) && sameSwaps(d.DayHeld, e.DayHeld) && sameSwaps(d.WeekHeld, e.WeekHeld)
}

func sameSwaps(a, b []quan.HeldSwap) bool {
	if len(a) != len(b) {
		return false
	}
	m := make(map[int64]quan.HeldSwap, len(a))
	for _, h := range a {
		m[h.UserID] = h
	}
	for _, h := range b {
		if m[h.UserID] != h {
			return false
		}
	}
	return true
}

// users counts the users with any count that differs.
func (d Drift) users() int {
	seen := map[int64]bool{}
	for _, hs := range [][]quan.HeldSwap{d.Held, d.DayHeld, d.WeekHeld} {
		for _, h := range hs {
			seen[h.UserID] = true
		}
	}
	return len(seen)
}

// Reconcile runs once: it reads every active template (and those Check
// named), reads those that differ again after Settle, and corrects those
// whose difference held, then sets the gauges of Counters to what it
// found. It returns the errors of the templates it could not read or
// correct, having done the others.
func (r *Reconciler) Reconcile(ctx context.Context) error {
	r.init()
	ids, err := r.templates(ctx)
	if err != nil {
		r.Counters.RunsFailed.Add(1)
		return err
	}
	var errs []error
	var suspects []Drift
	for _, id := range ids {
		d, ok, err := r.read(ctx, id)
		switch {
		case err != nil:
			errs = append(errs, err)
		case ok && !d.None():
			suspects = append(suspects, d)
		}
	}
	var found []Drift
	if len(suspects) > 0 {
		if err := r.settle(ctx); err != nil {
			return err
		}
		for _, first := range suspects {
			d, ok, err := r.read(ctx, first.Template)
			switch {
			case err != nil:
				errs = append(errs, err)
			case ok && !d.None() && d.same(first):
				found = append(found, d)
			case ok:
				r.logger().Debug("cache and store differed once, not twice: work in flight", "template", first.Template)
			}
		}
	}
	var stock, users int64
	for _, d := range found {
		stock += max(d.CacheStock-d.StoreStock, d.StoreStock-d.CacheStock)
		users += int64(d.users())
	}
	r.Counters.StockDrift.Store(stock)
	r.Counters.DriftTemplates.Store(int64(len(found)))
	r.Counters.HeldDriftUsers.Store(users)
	for _, d := range found {
		if err := r.repair(ctx, d); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		r.Counters.RunsFailed.Add(1)
		return err
	}
	r.Counters.RunsOK.Add(1)
	return nil
}

func (r *Reconciler) settle(ctx context.Context) error {
	wait := r.Settle
	if wait == 0 {
		wait = DefaultSettle
	}
	if wait < 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(wait):
		return nil
	}
}

// templates returns the active templates and those Check named since the
// last run.
func (r *Reconciler) templates(ctx context.Context) ([]int64, error) {
	r.mu.Lock()
	seen := r.checks
	r.checks = map[int64]bool{}
	r.mu.Unlock()
	var ids []int64
	for id := range seen {
		ids = append(ids, id)
	}
	for off := 0; ; off += quan.MaxPageSize {
		page, total, err := r.Templates.Templates(ctx, quan.TemplateFilter{Status: quan.TemplateActive, Offset: off, Limit: quan.MaxPageSize})
		if err != nil {
			return nil, fmt.Errorf("reconcile: active templates: %w", err)
		}
		for _, t := range page {
			if !seen[t.ID] {
				seen[t.ID] = true
				ids = append(ids, t.ID)
			}
		}
		if len(page) == 0 || off+len(page) >= total {
			return ids, nil
		}
	}
}

// Busy reports whether work on template is in flight: see Reconciler.
func (r *Reconciler) Busy(ctx context.Context, template int64) (bool, error) {
	for _, l := range r.Local {
		if l.InFlight() > 0 {
			return true, nil
		}
	}
	if l := r.Ledger; l != nil {
		n, err := l.Unhanded(ctx, template)
		if err != nil {
			return false, err
		}
		if n > 0 {
			return true, nil
		}
	}
	if r.Tasks != nil {
		running, _, err := r.Tasks.Tasks(ctx, quan.TaskFilter{Status: quan.TaskRunning, Limit: quan.MaxPageSize})
		if err != nil {
			return false, err
		}
		for _, t := range running {
			if t.TemplateID == template && !t.DryRun {
				return true, nil
			}
		}
		if len(running) == quan.MaxPageSize {
			return true, nil // too many to tell: any may be this template's
		}
	}
	var read []quan.Bus
	for _, b := range r.Buses {
		if b == nil || containsBus(read, b) {
			continue
		}
		read = append(read, b)
		for _, q := range reconcileQueues {
			n, err := b.Backlog(ctx, q[0], q[1])
			if err != nil {
				return false, err
			}
			if n > 0 {
				return true, nil
			}
		}
	}
	return false, nil
}

func containsBus(bs []quan.Bus, b quan.Bus) bool {
	for _, x := range bs {
		if x == b {
			return true
		}
	}
	return false
}

// read reads template's drift between two Busy checks. ok is false when
// the reading does not count: work was in flight, the cached stock moved
// meanwhile, or the cache does not hold the template.
func (r *Reconciler) read(ctx context.Context, template int64) (d Drift, ok bool, err error) {
	wrap := func(err error) error { return fmt.Errorf("reconcile template %d: %w", template, err) }
	if busy, err := r.Busy(ctx, template); err != nil || busy {
		return d, false, wrapNil(err, wrap)
	}
	st, err := r.Cache.State(ctx, template)
	if errors.Is(err, quan.ErrCacheCold) {
		return d, false, nil
	}
	if err != nil {
		return d, false, wrap(err)
	}
	d, err = r.compare(ctx, st)
	if err != nil {
		if errors.Is(err, quan.ErrCacheCold) {
			return d, false, nil
		}
		return d, false, wrap(err)
	}
	again, err := r.Cache.State(ctx, template)
	if errors.Is(err, quan.ErrCacheCold) {
		return d, false, nil
	}
	if err != nil {
		return d, false, wrap(err)
	}
	if again.Stock != st.Stock {
		return d, false, nil
	}
	if busy, err := r.Busy(ctx, template); err != nil || busy {
		return d, false, wrapNil(err, wrap)
	}
	return d, true, nil
}

func wrapNil(err error, wrap func(error) error) error {
	if err == nil {
		return nil
	}
	return wrap(err)
}

// compare reads the store's stock and holdings of the template of st and
// the cache's holdings, and returns how they differ from st and the
// cache. For a template with period limits it compares the counts of the
// day and the week of now as well.
func (r *Reconciler) compare(ctx context.Context, st quan.TemplateState) (Drift, error) {
	tpl, err := r.Templates.Template(ctx, quan.AnyShop, st.ID)
	if err != nil {
		return Drift{}, err
	}
	d := Drift{Template: st.ID, CacheStock: st.Stock, StoreStock: tpl.Stock}
	var at time.Time // of the period counts: none without period limits
	if st.PerUserDaily > 0 || st.PerUserWeekly > 0 {
		at = time.Now()
		if r.Now != nil {
			at = r.Now()
		}
		d.Day, d.Week = quan.PeriodsOf(at)
	}
	cached, err := countsByUser(r.Cache.Holdings(ctx, st.ID))
	if err != nil {
		return Drift{}, err
	}
	var cachedDay, cachedWeek map[int64]int64
	if !at.IsZero() {
		if cachedDay, err = countsByUser(r.Cache.PeriodHoldings(ctx, st.ID, d.Day)); err != nil {
			return Drift{}, err
		}
		if cachedWeek, err = countsByUser(r.Cache.PeriodHoldings(ctx, st.ID, d.Week)); err != nil {
			return Drift{}, err
		}
	}
	for h, err := range r.Coupons.Holdings(ctx, st.ID, at) {
		if err != nil {
			return Drift{}, err
		}
		d.Held = drifted(d.Held, cached, h.UserID, h.Count)
		if !at.IsZero() {
			d.DayHeld = drifted(d.DayHeld, cachedDay, h.UserID, h.Day)
			d.WeekHeld = drifted(d.WeekHeld, cachedWeek, h.UserID, h.Week)
		}
	}
	// Counted in the cache, none in the store.
	for _, c := range []struct {
		m     map[int64]int64
		swaps *[]quan.HeldSwap
	}{{cached, &d.Held}, {cachedDay, &d.DayHeld}, {cachedWeek, &d.WeekHeld}} {
		for u, n := range c.m {
			*c.swaps = append(*c.swaps, quan.HeldSwap{UserID: u, Old: n, Count: 0})
		}
	}
	return d, nil
}

// drifted appends to swaps the correction of user's count in cached to
// the store's count n, if they differ, and takes the user out of cached.
func drifted(swaps []quan.HeldSwap, cached map[int64]int64, user, n int64) []quan.HeldSwap {
	if c := cached[user]; n > 0 && c != n {
		swaps = append(swaps, quan.HeldSwap{UserID: user, Old: c, Count: n})
	} else if n <= 0 {
		return swaps // none in the store: left in cached, corrected to 0 if counted there
	}
	delete(cached, user)
	return swaps
}

// countsByUser collects a cache's counts by user.
func countsByUser(hs iter.Seq2[quan.Holding, error]) (map[int64]int64, error) {
	m := map[int64]int64{}
	for h, err := range hs {
		if err != nil {
			return nil, err
		}
		m[h.UserID] = h.Count
	}
	return m, nil
}

// repair corrects the cache to the store's figures of d, where the cache
// still holds what was read, and logs what it did.
func (r *Reconciler) repair(ctx context.Context, d Drift) error {
	var stockFixed bool
	if d.CacheStock != d.StoreStock {
		ok, err := r.Cache.SwapStock(ctx, d.Template, d.CacheStock, d.StoreStock)
		if err != nil && !errors.Is(err, quan.ErrCacheCold) {
			return fmt.Errorf("reconcile template %d: correct the stock: %w", d.Template, err)
		}
		stockFixed = ok
	}
	users := 0
	if len(d.Held) > 0 {
		n, err := r.Cache.SwapHeld(ctx, d.Template, d.Held)
		if err != nil && !errors.Is(err, quan.ErrCacheCold) {
			return fmt.Errorf("reconcile template %d: correct the holdings: %w", d.Template, err)
		}
		users = n
	}
	periods := 0
	for _, p := range []struct {
		p     quan.Period
		swaps []quan.HeldSwap
	}{{d.Day, d.DayHeld}, {d.Week, d.WeekHeld}} {
		if len(p.swaps) == 0 {
			continue
		}
		n, err := r.Cache.SwapPeriodHeld(ctx, d.Template, p.p, p.swaps)
		if err != nil && !errors.Is(err, quan.ErrCacheCold) {
			return fmt.Errorf("reconcile template %d: correct the period counts: %w", d.Template, err)
		}
		periods += n
	}
	if stockFixed || users > 0 || periods > 0 {
		r.Counters.Repairs.Add(1)
	}
	r.logger().Warn("the cache drifted from the store; corrected from the store",
		"template", d.Template, "cache_stock", d.CacheStock, "store_stock", d.StoreStock,
		"held_drift_users", len(d.Held), "stock_corrected", stockFixed, "held_corrected", users,
		"day_drift_users", len(d.DayHeld), "week_drift_users", len(d.WeekHeld), "period_counts_corrected", periods)
	return nil
}
