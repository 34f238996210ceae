package quan

import (
	"context"
	"iter"
	"time"
)

// TemplateState is what the issuing hot path knows of a template: the rules
// a reservation checks and the stock left to reserve.
type TemplateState struct {
	ID           int64
	ShopNo       int64
	Status       TemplateStatus
	IssueStart   time.Time
	IssueEnd     time.Time
	PerUserLimit int64
	Stock        int64 // left to reserve
	// The period limits (TemplateSpec.PerUserDaily, PerUserWeekly): 0
	// sets none, and a cache then keeps no period counts.
	PerUserDaily  int64
	PerUserWeekly int64
}

// StateOf returns the cache state of t.
func StateOf(t *Template) TemplateState {
	return TemplateState{ID: t.ID, ShopNo: t.ShopNo, Status: t.Status, IssueStart: t.IssueStart,
		IssueEnd: t.IssueEnd, PerUserLimit: t.PerUserLimit, Stock: t.Stock,
		PerUserDaily: t.PerUserDaily, PerUserWeekly: t.PerUserWeekly}
}

// Refusal says why a reservation was refused; "" means it was reserved.
type Refusal string

// Refusals, checked in this order.
const (
	RefusedInactive   Refusal = "not_active"    // draft, paused or ended
	RefusedNotStarted Refusal = "not_started"   // before the issue window
	RefusedEnded      Refusal = "ended"         // after the issue window
	RefusedLimit      Refusal = "limit_reached" // the user holds the per-user limit
	RefusedDaily      Refusal = EDAILYLIMIT     // the user received PerUserDaily today (Asia/Shanghai)
	RefusedWeekly     Refusal = EWEEKLYLIMIT    // the user received PerUserWeekly this week
	RefusedSoldOut    Refusal = "sold_out"      // no stock left
)

// Holding is how many coupons of a template a user holds and, for the
// period limits, how many the user received in one Shanghai day and week.
type Holding struct {
	UserID int64
	Count  int64
	// Day counts the coupons the user received in the Shanghai day
	// PeriodDay (ShanghaiDay), Week those of its week (WeekOfDay), by
	// when the user received each (a claim's At, else the coupon's
	// creation), as the stores check the period limits. A PeriodDay of 0
	// says the holding carries no period counts: read without them
	// (CouponStore.Holdings with a zero at), and then Day and Week are 0.
	Day, Week int64
	PeriodDay int64
}

// ErrCacheCold: the cache does not hold the template (never loaded, or the
// cache lost it, as a Redis restart does). The caller primes it from the
// store and tries again.
var ErrCacheCold = &Error{Code: ECACHECOLD, Message: "the cache does not hold this template"}

// Cache holds the hot-path state of issuing — template snapshots, stock
// left to reserve, per-user counts — in the process or in Redis, so that
// claims and distributions check and reserve without the store. The store
// stays the final arbiter (it never lets stock fall below zero or a user
// exceed the limit), so whatever the cache loses, nothing is oversold.
type Cache interface {
	// Reserve tries, in order, to reserve one coupon of template for each
	// user at now. Each reservation is atomic: the template issues at now,
	// the user holds fewer than its limit, received fewer than the period
	// limits in the Shanghai day and week of now (ShanghaiDay,
	// ShanghaiWeek) and stock is left, then the stock falls by one and the
	// user's counts rise by one; otherwise the refusal is returned in its
	// place, in the order of the Refusals. The period counts are those
	// Prime and Load loaded from holdings plus those of the reservations
	// the cache made since (a Release gives them back). key makes a batch
	// idempotent: a Reserve with a key seen before (within a day) changes
	// nothing and returns the first call's outcomes, even after a Release
	// or with other users. ErrCacheCold if the template is not loaded.
	Reserve(ctx context.Context, template int64, key string, users []int64, now time.Time) ([]Refusal, error)

	// Release gives back what Reserve under key reserved: the stock and
	// the user counts. It is idempotent: an unknown key, a template not
	// loaded, or a key recorded before the last Prime changes nothing and
	// returns nil (what was reserved before a loss is already in the
	// store's figures that Prime loaded).
	Release(ctx context.Context, template int64, key string) error

	// Prime replaces the state of st.ID with st and the given holdings,
	// which may be millions (counts ≤ 0 are ignored), and forgets the
	// earlier key records. Reserve sees the old state or the new, whole one,
	// never a part; if holdings or ctx fail, the old state stays.
	//
	// For a template with period limits, holdings that carry period
	// counts (Holding.PeriodDay, the same day in all of them, else an
	// EINVALID error) also replace, in the same step, the cache's counts
	// of that Shanghai day and of its week with their Day and Week: a
	// user not among them received none. Those counts are kept as Reserve
	// keeps its own (Release gives back a reservation made after the
	// Prime). The counts of other days and weeks, and all of them when
	// the holdings carry none, stay as they were.
	Prime(ctx context.Context, st TemplateState, holdings iter.Seq2[Holding, error]) error

	// Load is Prime for a cache miss: it loads st and holdings only if the
	// template is not loaded, leaves a loaded one alone, and reports
	// whether it loaded. Callers that all found the cache cold thus never
	// undo each other's reservations, as a second Prime would.
	Load(ctx context.Context, st TemplateState, holdings iter.Seq2[Holding, error]) (bool, error)
	// Update replaces the snapshot of a loaded template (shop, status,
	// window, limit; st.Stock is ignored) and adds stockDelta to its stock,
	// keeping the user counts. The stock may fall below zero; Reserve then
	// answers sold_out until it is positive. ErrCacheCold if not loaded.
	Update(ctx context.Context, st TemplateState, stockDelta int64) error

	// Reservation returns the outcomes Reserve recorded under key, or
	// ErrNotFound if the cache holds no record of it: never made, older
	// than a day, or forgotten by a Prime or a loss of the cache.
	Reservation(ctx context.Context, template int64, key string) ([]Refusal, error)
	// State returns the cached state of template and Held the count of
	// user; both ErrCacheCold if the template is not loaded. An in-process
	// cache loses everything on restart, Redis on restart or FLUSHALL.
	State(ctx context.Context, template int64) (TemplateState, error)
	Held(ctx context.Context, template, user int64) (int64, error)

	// Holdings streams the cached count of every user of template whose
	// count is above zero, in no particular order: what Reconciler
	// compares with the store's. A template not loaded yields
	// ErrCacheCold. It is not a snapshot: reservations made while it
	// runs may or may not show.
	Holdings(ctx context.Context, template int64) iter.Seq2[Holding, error]
	// SwapStock sets the stock of template to stock if it is still old,
	// in one atomic step, and reports whether it did: a compare-and-set,
	// so that a repair computed from a reading changes nothing once the
	// stock moved since (a reservation, a Prime, another repair).
	// ErrCacheCold if the template is not loaded.
	SwapStock(ctx context.Context, template, old, stock int64) (bool, error)
	// SwapHeld does for each swap what SwapStock does for the stock: the
	// user's count becomes Count if it is still Old (0 for a user the
	// cache holds no count of; a Count of 0 removes the user). Each swap
	// is atomic on its own. It returns how many it made; ErrCacheCold if
	// the template is not loaded.
	SwapHeld(ctx context.Context, template int64, swaps []HeldSwap) (int, error)
	// PeriodHoldings is Holdings of the counts of period p (a Shanghai
	// day or week) that the period limits check: Count is the user's
	// count in p, and users with none are left out. A template without
	// period limits yields none. ErrCacheCold if it is not loaded.
	PeriodHoldings(ctx context.Context, template int64, p Period) iter.Seq2[Holding, error]
	// SwapPeriodHeld is SwapHeld of the counts of period p.
	SwapPeriodHeld(ctx context.Context, template int64, p Period, swaps []HeldSwap) (int, error)

	// The count of a shop's claims in a Shanghai day, for the shop's
	// DailyClaimCap (ShopSettings): unlike everything above, one counter
	// across the shop's templates, so it lives apart from them (in Redis
	// under a hash tag of its own, and so in its own call). The cache
	// keeps a count at least two days after its Load, then may drop it.
	//
	// ShopClaimsTake adds one to the count of shop in day if it is below
	// limit, atomically, and reports whether it did. ErrCacheCold if the
	// cache holds no count of shop in day: never loaded (the day's first
	// claim) or lost; the caller counts in the store and loads.
	ShopClaimsTake(ctx context.Context, shop, day, limit int64) (bool, error)
	// ShopClaimsLoad sets the count of shop in day to n unless the cache
	// holds one: callers that all found it cold never undo each other's
	// takes.
	ShopClaimsLoad(ctx context.Context, shop, day, n int64) error
	// ShopClaimsGive takes one off the count of shop in day, for a claim
	// counted that then got no coupon: never below zero, and nothing
	// when the cache holds no count. A key (the claim's id) gives back
	// at most once in a shop's day, however often the claim's failure is
	// settled (a redelivery); "" gives back every time (the claim path,
	// giving back what the same call took).
	ShopClaimsGive(ctx context.Context, shop, day int64, key string) error
}

// Period is a Shanghai day (ShanghaiDay) or, with Week, a week
// (ShanghaiWeek): the span of the counts a period limit checks.
type Period struct {
	Week bool
	N    int64
}

// PeriodsOf returns the day and the week of at.
func PeriodsOf(at time.Time) (day, week Period) {
	return Period{N: ShanghaiDay(at)}, Period{Week: true, N: ShanghaiWeek(at)}
}

// HeldSwap is one user's count as Cache.SwapHeld corrects it: from Old
// to Count.
type HeldSwap struct {
	UserID int64
	Old    int64
	Count  int64
}

// LimitedReserver is a Cache that also takes rate-limit tokens in the same
// atomic step as a reservation: one round trip for a claim instead of two.
// It is optional: claims.Service uses it when its Cache has it and its
// Limiter is that very cache; otherwise it calls Allow, then Reserve.
type LimitedReserver interface {
	// ReserveLimited is RateLimiter.Allow(buckets...) followed by
	// Reserve(template, key, users, now), both or neither:
	//   - ErrCacheCold if the template is not loaded, with no token taken
	//     (the caller loads it and calls again);
	//   - a bucket without a token: refused is its index in buckets (as
	//     Allow answers), retryAfter its wait, and nothing is reserved or
	//     taken from any bucket;
	//   - else refused is -1, a token is taken from every bucket, and out
	//     is what Reserve answers, refusals included (a sold-out claim
	//     still costs a token, as it does with Allow then Reserve). A key
	//     seen before also costs tokens: each call is a request.
	ReserveLimited(ctx context.Context, template int64, key string, users []int64, now time.Time, buckets []Bucket) (refused int, retryAfter time.Duration, out []Refusal, err error)
}

// Handoff is what the ledger said of a claim handed to the bus.
type Handoff int

const (
	// HandedNow: the claim was in the ledger and left it; it will never
	// be reaped, and its reservation stands until the store decides it.
	HandedNow Handoff = iota
	// HandedReaping: a reaper took the claim as abandoned and is giving
	// its reservation back; the hand-off must not be confirmed.
	HandedReaping
	// HandedBefore: the claim is in neither ledger: handed off before (a
	// retry), or reaped already (the store holds its failure).
	HandedBefore
)

// LedgerEntry is a claim the ledger holds: reserved at At under Key (the
// claim's id) of Template.
type LedgerEntry struct {
	Template int64
	Key      string
	At       time.Time
}

// ClaimLedger is a Cache shared by processes (Redis) that keeps a ledger
// of the claims it reserved and that are not yet on the bus, so that the
// reservation of a claim whose process died before its hand-off is found
// and given back (claims.Service.Reap), and no other is. ReserveLimited
// enters a claim that reserved a coupon under a new key in the same
// atomic step as the reservation. An in-process cache needs none: its
// reservations die with the process, and the next loads the store's.
type ClaimLedger interface {
	// Handed takes the claims under keys of template out of the ledger, once
	// they are on the bus, and says for each where it was.
	Handed(ctx context.Context, template int64, keys []string) ([]Handoff, error)
	// Abandoned moves the claims entered before cutoff to the reaping
	// ledger, at most max of a template, and returns every entry there:
	// those just moved and those a reaper that stopped left. From then on
	// Handed answers HandedReaping for them.
	Abandoned(ctx context.Context, cutoff time.Time, max int) ([]LedgerEntry, error)
	// Reaped forgets an entry of the reaping ledger once its reservation
	// is given back and its failure recorded.
	Reaped(ctx context.Context, template int64, key string) error
	// Unhanded returns how many claims of template the ledger and the
	// reaping ledger hold: reserved in the cache and neither on the bus
	// yet nor given back, so not in the store's figures.
	Unhanded(ctx context.Context, template int64) (int64, error)
}

// SharedCache is a Cache the processes share (Redis), which is also the
// claims' Ledger, their one-call Reserver, the RateLimiter and the
// Idempotency store, so that every process sees the same. The binary
// wires each of these roles from it explicitly.
type SharedCache interface {
	Cache
	LimitedReserver
	ClaimLedger
	RateLimiter
	Idempotency
	// Ping reports whether the cache answers.
	Ping(ctx context.Context) error
}
