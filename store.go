package quan

import (
	"context"
	"fmt"
	"iter"
	"time"
)

// TemplateStore keeps templates and their audit trail.
//
// Every merchant-facing method takes a shop number and sees only that
// shop's templates: a template of another shop is ErrNotFound, never
// ErrForbidden, so its existence is not revealed. AnyShop lifts the limit.
type TemplateStore interface {
	// CreateTemplate stores t, setting its ID, and records an audit entry
	// by actor in the same transaction, at t.CreatedAt.
	CreateTemplate(ctx context.Context, t *Template, actor string) error

	// Template returns the template id of shop, or ErrNotFound.
	Template(ctx context.Context, shop, id int64) (*Template, error)

	// Templates returns one page of the templates matching f, newest first,
	// and the number of all matches. A Limit above MaxPageSize is cut to it.
	Templates(ctx context.Context, f TemplateFilter) ([]*Template, int, error)

	// HighestTemplateID returns the highest id of a template stored, 0
	// if there is none. Ids are handed out in order and templates never
	// deleted, so it is a cheap answer to "may template id exist?" (one
	// index lookup, unlike a page of Templates with its count).
	HighestTemplateID(ctx context.Context) (int64, error)

	// PromoCodeTemplate returns the id of the active template whose
	// PromoCode is code, as NormalizePromoCode keeps it, or ErrNotFound:
	// also when no template holds it now, or the one that does is paused.
	PromoCodeTemplate(ctx context.Context, code string) (int64, error)

	// UpdateTemplate loads template id of shop, locks it, and calls fn with
	// it. If fn returns nil the changed template is saved (PromoCodeHeld,
	// and nothing written, if it would then hold a PromoCode another
	// active or paused template holds; CreateTemplate likewise), together with an
	// audit entry by actor for action listing the changed fields; the saved
	// template is returned. If fn fails nothing is written and its error is
	// returned. ErrNotFound if there is no such template. The entry's time
	// is the saved template's UpdatedAt. fn must not change ID or ShopNo and
	// must not call the store: it runs under the template's lock.
	UpdateTemplate(ctx context.Context, shop, id int64, actor, action string, fn func(*Template) error) (*Template, error)

	// AdjustStock adds delta (negative to take) to the stock of template
	// id and returns the stock left. Stock never falls below zero: a take
	// larger than the stock changes nothing and returns ErrOutOfStock. It
	// leaves TotalStock alone and writes no audit entry: issuing coupons is
	// not a template change.
	AdjustStock(ctx context.Context, id, delta int64) (int64, error)

	// TemplateHistory returns the audit entries of template id of shop,
	// oldest first, or ErrNotFound.
	TemplateHistory(ctx context.Context, shop, id int64) ([]*AuditEntry, error)

	// Ping reports whether the store is reachable.
	Ping(ctx context.Context) error
}

// TemplateFilter selects templates. ShopNo is required for merchants;
// AnyShop (0) matches every shop.
type TemplateFilter struct {
	ShopNo       int64
	Status       TemplateStatus // "" matches any
	Kind         Kind           // "" matches any
	NameContains string         // case-insensitive for ASCII; "" matches any
	Category     string         // exactly; "" matches any
	Goods        string         // one of the template's Goods exactly; "" matches any
	// IDs, if not empty, matches those templates only (at most
	// MaxPageSize of them).
	IDs []int64
	// Before, if positive, matches templates of lower ids only: the
	// cursor of a listing paged by id (a page's last id is the next
	// page's Before), which neither skips nor repeats a template however
	// many are created meanwhile.
	Before int64
	Offset int
	Limit  int // 1 … MaxPageSize; 0 means DefaultPageSize
	// SkipTotal spares the store the count of all matches (a scan of
	// them): Templates then returns -1 for it. A caller paging by Before
	// to the end needs none: a page shorter than Limit is the last.
	SkipTotal bool
}

// Paging defaults.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// Clock tells the time: a use case's Now field, nil for time.Now, so
// that tests set the time and expiry tests never sleep.
type Clock func() time.Time

// UTC returns c's time now (time.Now's when c is nil) in UTC to the
// microsecond, as the stores keep times.
func (c Clock) UTC() time.Time {
	if c == nil {
		return time.Now().UTC().Truncate(time.Microsecond)
	}
	return c().UTC().Truncate(time.Microsecond)
}

// TaskStore keeps distribution tasks and applies their chunks. Like
// TemplateStore, merchant-facing methods are scoped by shop.
type TaskStore interface {
	// CreateTask stores t, setting its ID.
	CreateTask(ctx context.Context, t *Task) error

	// Task returns task id of shop (AnyShop: any), or ErrNotFound.
	Task(ctx context.Context, shop, id int64) (*Task, error)

	// Tasks returns one page of the tasks of f.ShopNo, newest first, and
	// the number of all matches.
	Tasks(ctx context.Context, f TaskFilter) ([]*Task, int, error)

	// UpdateTask loads task id of shop under a lock, calls fn and saves
	// the task if fn returns nil. fn must not change ID or ShopNo.
	UpdateTask(ctx context.Context, shop, id int64, fn func(*Task) error) (*Task, error)

	// ClaimTask gives owner the lease of one task that needs a runner,
	// until lease: a pending task whose SendAt has come (it becomes
	// running, StartedAt now), or a running task whose lease expired (its
	// runner died). Dry runs and real runs alike; oldest (lowest id) first.
	// A task taken over keeps its StartedAt and the chunks applied. It returns nil
	// and no error when no task needs a runner.
	ClaimTask(ctx context.Context, owner string, now, lease time.Time) (*Task, error)

	// ApplyChunk applies c in one transaction: it checks that the task is
	// running and that chunk c.Seq was not applied before; plans the chunk
	// with PlanChunk against the template's stock and the users' holdings
	// (nothing of the kind for a dry run); takes the stock, creates the
	// coupons, records every failed row, adds the counts, records c.Seq as
	// applied, counts it in ChunksDone and raises BytesRead to c.BytesRead
	// if that is further. It returns the chunk's counts. Chunks may come in
	// any order and more than once (a bus redelivers them): a chunk applied
	// before is ErrChunkApplied and changes nothing, so applying is
	// idempotent by (task, seq). ErrLeaseLost if the task is not running
	// (canceled, failed or done), ErrNotFound if there is no such task;
	// nothing is written then. The undecided rows of a chunk name distinct
	// users (the tasks.Runner refuses repeats as duplicates). The task's
	// UpdatedAt becomes c.Now. It may set Cause on c.Rows only if it
	// commits, so a refused chunk can be retried as it is.
	ApplyChunk(ctx context.Context, c *Chunk) (TaskCounts, error)
	// AppliedChunks returns the seqs of the chunks of task id applied so
	// far, in ascending order.
	AppliedChunks(ctx context.Context, id int64) ([]int64, error)
	// Failures returns up to limit failed rows of task id with a line
	// after afterLine, in line order.
	Failures(ctx context.Context, taskID, afterLine int64, limit int) ([]Failure, error)
}

// TaskFilter selects tasks.
type TaskFilter struct {
	ShopNo int64
	Status TaskStatus // "" matches any
	Offset int
	Limit  int
}

// CouponStore reads the coupons users hold.
type CouponStore interface {
	// UserCoupons returns the coupons user holds of template (0: of every
	// template), newest first.
	UserCoupons(ctx context.Context, user, template int64) ([]*Coupon, error)
	// UserCouponPage returns the page of the coupons user holds (of every
	// template) that UserCoupons would list from offset on, at most limit
	// of them, newest first, and how many coupons user holds in all: what
	// a wallet shows without reading the coupons it does not show.
	UserCouponPage(ctx context.Context, user int64, offset, limit int) ([]*Coupon, int, error)
	// UserHeld returns how many coupons user holds of each template it
	// holds any of (none: an empty map): the counts UserCoupons' list
	// adds up to, without reading the coupons.
	UserHeld(ctx context.Context, user int64) (map[int64]int64, error)
	// Coupon returns coupon id if it is of shop (AnyShop: of any shop), or
	// ErrNotFound, also for a coupon archived.
	Coupon(ctx context.Context, shop, id int64) (*Coupon, error)
	// CodeKey returns the key of the coupons' codes. Every coupon the
	// store returns whole has the Code CodeKey makes of its id and its
	// template's CodePrefix. The store keeps the key with the coupons, so
	// every process on one database makes the same codes, every time.
	CodeKey() *CodeKey
	// CouponStats summarises the coupons issued of template: how many, to
	// how many users, the most one user holds, and how many came from
	// task (0: any task).
	CouponStats(ctx context.Context, template, task int64) (CouponStats, error)
	// Holdings streams, in no particular order, how many coupons of
	// template each user who holds any has received: what a Cache is primed
	// with. It may scan every coupon; a cache needs it only after a loss.
	// With at not zero (TemplateSpec.PeriodsAt), each holding also counts
	// the coupons its user received in the Shanghai day and week of at
	// (Holding.Day, Week, PeriodDay), in the same read, each coupon at
	// the instant the store's own check of the period limits counts it
	// at; a zero at reads the counts alone, as cheaply as before.
	Holdings(ctx context.Context, template int64, at time.Time) iter.Seq2[Holding, error]
}

// CouponStats summarises the coupons of one template.
type CouponStats struct {
	Coupons    int64 `json:"coupons"`
	Users      int64 `json:"users"`
	MaxPerUser int64 `json:"maxPerUser"`
	FromTask   int64 `json:"fromTask"`
}

// WalletStore changes the coupons users hold: locks for orders, payments,
// refunds, and what time does to them.
type WalletStore interface {
	// UpdateCoupons loads the coupons ids of user under a write lock, in
	// id order (ErrNotFound if one is not the user's), and calls fn with
	// them. If fn returns nil, the coupons whose Status, OrderID,
	// LockedUntil or LockKey fn changed are saved with their UpdatedAt,
	// and all are returned; if it fails nothing is written and its error
	// is returned.
	UpdateCoupons(ctx context.Context, user int64, ids []int64, fn func([]*Coupon) error) ([]*Coupon, error)
	// OrderCoupons returns, in id order, the coupons of user that order
	// names (OrderID: held or paid with) and those among ids: what a
	// change of the order needs to read, however many the user holds.
	// Ids that are not the user's are left out.
	OrderCoupons(ctx context.Context, user int64, order string, ids []int64) ([]*Coupon, error)
	// SwapCoupons writes after over coupons of user read without a lock
	// as before (the same ids in the same order): the Status, OrderID,
	// LockedUntil, LockKey and UpdatedAt of each, at once, and only if
	// every one still has the Status, OrderID, LockedUntil and UpdatedAt
	// of before.
	// It reports whether it wrote; if it did not, nothing changed. A
	// coupon that is not the user's is never written.
	SwapCoupons(ctx context.Context, user int64, before, after []*Coupon) (bool, error)
	// LapseCoupons applies Coupon.Lapse at now to up to limit coupons that
	// time has changed: available ones whose window closed (along the
	// (status, valid end) index) and locked ones whose lock ran out, whose
	// OrderID, LockedUntil and LockKey it clears, as Lapse does. It
	// returns them with what their events need (ID, TemplateID, ShopNo,
	// UserID, the new Status and UpdatedAt; other fields may be zero), and
	// their status before in the second slice.
	LapseCoupons(ctx context.Context, now time.Time, limit int) ([]*Coupon, []CouponStatus, error)
	// BudgetUsage returns the budget of template and what its coupons
	// hold of it (reserved while locked, spent while used); zero for a
	// template without a budget. Every write above moves the budgets of
	// the templates whose coupons it locks, uses or gives back, in its
	// transaction (BudgetMoves), and refuses with BudgetSpentError,
	// writing nothing, a change that would take more than is left.
	BudgetUsage(ctx context.Context, template int64) (BudgetUsage, error)
}

// RefundStore keeps which orders were refunded, so that a refund applies
// to an order once and a refunded order settles nothing more.
type RefundStore interface {
	// RefundOrder records order of user as refunded at at and, in the
	// same transaction, changes coupons ids of user as
	// WalletStore.UpdateCoupons does. EREFUNDED, with nothing written, if
	// the order was recorded refunded before; fn's error, with nothing
	// written, if it fails.
	RefundOrder(ctx context.Context, user int64, order string, at time.Time, ids []int64, fn func([]*Coupon) error) ([]*Coupon, error)
	// OrderRefunded reports whether order of user was refunded.
	OrderRefunded(ctx context.Context, user int64, order string) (bool, error)
}

// Archiver moves old coupons out of the way.
type Archiver interface {
	// ArchiveCoupons moves up to limit used, expired or revoked coupons
	// last changed before before, of templates that have ended, into the
	// history table at now, and returns how many. Coupons of templates
	// that still issue stay: the per-user limit counts them.
	ArchiveCoupons(ctx context.Context, before, now time.Time, limit int) (int, error)
}

// MonitorStore answers what monitoring asks of the store at each scrape
// (package prom): small reads along indexes, never a scan of coupons.
type MonitorStore interface {
	// TaskStatuses returns how many tasks there are of each status; a
	// status no task has may be missing.
	TaskStatuses(ctx context.Context) (map[TaskStatus]int64, error)
	// OldestRunningTask returns the earliest UpdatedAt among running tasks
	// (a chunk applied or the task taken moves it, a lease renewed does
	// not), or the zero time if none runs.
	OldestRunningTask(ctx context.Context) (time.Time, error)
	// OldestAvailableEnd returns the earliest ValidEnd among available
	// coupons, or the zero time if none is available: once it is past, a
	// coupon waits for the sweeper to expire it.
	OldestAvailableEnd(ctx context.Context) (time.Time, error)
	// StoreRetries returns how many times the store ran a transaction, or
	// part of one, again after a deadlock, a lock wait timeout or a busy
	// database, since it was opened; always 0 on an engine that never
	// needs to.
	StoreRetries() int64
}

// Validate reports every invalid filter value at once.
func (f TemplateFilter) Validate() error {
	var v Validation
	switch f.Status {
	case "", TemplateDraft, TemplateActive, TemplatePaused, TemplateEnded:
	default:
		v.Add("status", fmt.Sprintf("%q is not a status: use draft, active, paused or ended", f.Status))
	}
	switch f.Kind {
	case "", KindDirect, KindThreshold, KindDiscount, KindStep, KindComposite:
	default:
		v.Add("kind", fmt.Sprintf("%q is not a kind: use %s", f.Kind, KindNames))
	}
	v.Line("name", f.NameContains)
	v.Line("category", f.Category)
	v.Line("goods", f.Goods)
	if len(f.IDs) > MaxPageSize {
		v.Add("ids", fmt.Sprintf("must list at most %d ids", MaxPageSize))
	}
	if f.Before < 0 {
		v.Add("cursor", "must not be negative")
	}
	v.Page(f.Offset, f.Limit)
	return v.Err("invalid list parameters")
}

// Store is every port of what quan keeps, as one adapter provides them
// all (sqlite.Store, mysql.Store): what the binary wires the use cases
// to, each through the ports it needs.
type Store interface {
	TemplateStore
	TaskStore
	CouponStore
	CouponSearcher
	ClaimStore
	WalletStore
	CodeStore
	MonitorStore
	NotificationStore
	ContactStore
	SecretStore
	StatsStore
	ReminderStore
	AccountStore
	FactsStore
	ShopStore
	RulesStore
	APIKeyStore
	RefundStore
	Archiver
	EventStore
	// Ping reports whether the store answers.
	Ping(ctx context.Context) error
}
