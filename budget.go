package quan

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// MaxBudget bounds a template's Budget: 10 billion yuan, in fen.
const MaxBudget = 1_000_000_000_000

// ReasonBudgetSpent: the template's budget left cannot cover the coupon's
// discount (a quote's reason, and the reason of a lock's ENOTUSABLE).
const ReasonBudgetSpent = "budget_spent"

func (s *TemplateSpec) validateBudget(v *Validation) {
	switch {
	case s.Budget < 0:
		v.Add("budget", "must not be negative (0: no budget)")
	case s.Budget > MaxBudget:
		v.Add("budget", fmt.Sprintf("must be at most %d fen", MaxBudget))
	}
	period := func(field string, n int64) bool {
		switch {
		case n < 0:
			v.Add(field, "must not be negative (0: no limit)")
		case n > MaxPerUserLimit || n > s.PerUserLimit && s.PerUserLimit > 0:
			v.Add(field, "must be at most perUserLimit: the lifetime limit bounds every period")
		default:
			return true
		}
		return false
	}
	okD := period("perUserDaily", s.PerUserDaily)
	okW := period("perUserWeekly", s.PerUserWeekly)
	if okD && okW && s.PerUserDaily > 0 && s.PerUserWeekly > 0 && s.PerUserDaily > s.PerUserWeekly {
		v.Add("perUserDaily", "must be at most perUserWeekly: a day is part of a week")
	}
}

// HasPeriodLimits reports whether the template bounds what a user
// receives per day or per week.
func (s *TemplateSpec) HasPeriodLimits() bool { return s.PerUserDaily > 0 || s.PerUserWeekly > 0 }

// shanghai is Asia/Shanghai: UTC+8, without daylight saving since 1991. A
// fixed offset needs no time zone database, and the Lua of the Redis cache
// computes the same days.
const shanghaiOffset = 8 * 60 * 60

// ShanghaiDay returns the day of t in Asia/Shanghai, as days since
// 1970-01-01 there: claims at 23:59 and at 00:01 Shanghai time fall on two
// days.
func ShanghaiDay(t time.Time) int64 {
	return floorDiv(t.Unix()+shanghaiOffset, 24*60*60)
}

// ShanghaiWeek returns the week of t in Asia/Shanghai, weeks starting on
// Monday 00:00, as weeks since Monday 1969-12-29 (1970-01-01 was a
// Thursday).
func ShanghaiWeek(t time.Time) int64 { return WeekOfDay(ShanghaiDay(t)) }

// WeekOfDay returns the week (ShanghaiWeek) of day (ShanghaiDay).
func WeekOfDay(day int64) int64 { return floorDiv(day+3, 7) }

// PeriodsAt returns the instant whose Shanghai day and week the holdings
// of s that a cache is loaded with must count (CouponStore.Holdings): now
// for a template with period limits, the zero time, which asks for no
// period counts, for one without.
func (s *TemplateSpec) PeriodsAt(now time.Time) time.Time {
	if !s.HasPeriodLimits() {
		return time.Time{}
	}
	return now
}

// ShanghaiDayStart returns the instant day (ShanghaiDay) begins, and
// ShanghaiWeekStart the instant week (ShanghaiWeek) does.
func ShanghaiDayStart(day int64) time.Time {
	return time.Unix(day*24*60*60-shanghaiOffset, 0).UTC()
}

// ShanghaiWeekStart: see ShanghaiDayStart.
func ShanghaiWeekStart(week int64) time.Time { return ShanghaiDayStart(week*7 - 3) }

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// PeriodHeld counts the coupons of one template users received per
// Shanghai day and week, for the period limits: what a store reads of the
// users of a batch, and PlanClaims and PlanChunk add to as they issue.
type PeriodHeld struct {
	m map[periodKey]int64
}

type periodKey struct {
	user   int64
	week   bool
	period int64
}

// Add counts a coupon user received at. A nil p, which counts nothing
// and reads 0, serves a template without period limits.
func (p *PeriodHeld) Add(user int64, at time.Time) {
	if p == nil {
		return
	}
	if p.m == nil {
		p.m = map[periodKey]int64{}
	}
	p.m[periodKey{user, false, ShanghaiDay(at)}]++
	p.m[periodKey{user, true, ShanghaiWeek(at)}]++
}

// Day and Week return how many coupons user received in the day and in
// the week of at.
func (p *PeriodHeld) Day(user int64, at time.Time) int64 {
	if p == nil {
		return 0
	}
	return p.m[periodKey{user, false, ShanghaiDay(at)}]
}

// Week: see Day.
func (p *PeriodHeld) Week(user int64, at time.Time) int64 {
	if p == nil {
		return 0
	}
	return p.m[periodKey{user, true, ShanghaiWeek(at)}]
}

// PeriodRefusal returns the cause a user who received held coupons is
// refused one more at at by the period limits of t, "" if none.
func (s *TemplateSpec) PeriodRefusal(held *PeriodHeld, user int64, at time.Time) Cause {
	switch {
	case s.PerUserDaily > 0 && held.Day(user, at) >= s.PerUserDaily:
		return CauseDailyLimit
	case s.PerUserWeekly > 0 && held.Week(user, at) >= s.PerUserWeekly:
		return CauseWeeklyLimit
	}
	return ""
}

// BudgetUsage is what a template's budget holds: Reserved by the coupons
// locked for orders, Spent by those used. Reserved+Spent never exceeds
// Budget.
type BudgetUsage struct {
	Budget   int64 `json:"budget"`
	Reserved int64 `json:"reserved"`
	Spent    int64 `json:"spent"`
}

// Left returns the budget neither reserved nor spent.
func (u BudgetUsage) Left() int64 { return u.Budget - u.Reserved - u.Spent }

// BudgetMove is what a change of coupons moves in one template's budget.
type BudgetMove struct {
	TemplateID int64
	Reserved   int64 // added to the reserved (negative: given back)
	Spent      int64 // added to the spent
}

// Takes returns how much more of the budget the move holds: what it must
// find left. A redeem moves the reserved to the spent and takes nothing.
func (m BudgetMove) Takes() int64 { return max(0, m.Reserved+m.Spent) }

// BudgetMoves returns what changing coupons from before to after moves in
// the budgets of the templates for which budgeted reports true, one move
// a template, in template order, none that moves nothing. The rule, one
// for every store: a coupon counts its Discount as reserved while locked
// and as spent while used; so a lock reserves (checked against the
// budget), a redeem turns the reservation into spending, and a release, a
// lock that ran out, a refund or a revoke gives back. A coupon that
// locked again for another order after its lock ran out gives back the
// old discount and reserves the new one.
func BudgetMoves(before, after []*Coupon, budgeted func(template int64) bool) []BudgetMove {
	var out []BudgetMove
	for i, a := range after {
		b := before[i]
		if a.Status == b.Status && a.Discount == b.Discount {
			continue
		}
		if !budgeted(a.TemplateID) {
			continue
		}
		r := held(a, CouponLocked) - held(b, CouponLocked)
		sp := held(a, CouponUsed) - held(b, CouponUsed)
		if r == 0 && sp == 0 {
			continue
		}
		j := slices.IndexFunc(out, func(m BudgetMove) bool { return m.TemplateID == a.TemplateID })
		if j < 0 {
			out = append(out, BudgetMove{TemplateID: a.TemplateID})
			j = len(out) - 1
		}
		out[j].Reserved += r
		out[j].Spent += sp
	}
	out = slices.DeleteFunc(out, func(m BudgetMove) bool { return m.Reserved == 0 && m.Spent == 0 })
	slices.SortFunc(out, func(x, y BudgetMove) int { return cmp.Compare(x.TemplateID, y.TemplateID) })
	return out
}

func held(c *Coupon, s CouponStatus) int64 {
	if c.Status == s {
		return c.Discount
	}
	return 0
}

// BudgetSpentError is the refusal of a change whose move the budget of
// template cannot take: ENOTUSABLE, naming ReasonBudgetSpent.
func BudgetSpentError(template int64) error {
	return Errorf(ENOTUSABLE, "the coupons of template %d cannot be used: %s (its budget cannot cover the discount)", template, ReasonBudgetSpent)
}
