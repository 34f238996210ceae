package quan

import (
	"cmp"
	"slices"
	"time"
)

// StatsDelta gathers what one transaction changes in the statistics, so
// that a store writes one row per template (and per hour and reason)
// however many coupons the transaction changed: a chunk of 50,000 coupons
// adds to its template's counters once. Its zero value is empty.
//
// The contract is that the counters change in the commit that changes the
// coupons, whatever carries it: a store may gather the changes of several
// callers that commit together (SQLite's SwapCoupons batches), or add the
// change of one coupon in the statement that writes it (MySQL's).
type StatsDelta struct {
	templates map[int64]*TemplateDelta
	hours     map[hourKey]*HourDelta
	failed    map[failKey]int64
}

// TemplateDelta is what to add to a template's counters.
type TemplateDelta struct {
	TemplateID, ShopNo                          int64
	IssuedDistribution, IssuedClaim, IssuedCode int64
	Available, Locked, Used, Expired, Revoked   int64
	DiscountFen                                 int64
}

// HourDelta is what to add to a template's counters of one hour.
type HourDelta struct {
	TemplateID, ShopNo int64
	Hour               time.Time // UTC, on the hour
	Issued, Used       int64
	// Claimed counts those of Issued that claims issued: a shop's daily
	// claim cap restarts from them (ShopStore.ShopClaimed).
	Claimed int64
}

// FailedDelta is how many claims of a template the store failed for a
// reason.
type FailedDelta struct {
	TemplateID int64
	Reason     string
	N          int64
}

type hourKey struct {
	template int64
	hour     int64 // Unix seconds
}

type failKey struct {
	template int64
	reason   string
}

func (d *StatsDelta) template(id, shop int64) *TemplateDelta {
	if d.templates == nil {
		d.templates = map[int64]*TemplateDelta{}
	}
	t := d.templates[id]
	if t == nil {
		t = &TemplateDelta{TemplateID: id, ShopNo: shop}
		d.templates[id] = t
	}
	return t
}

func (d *StatsDelta) hour(id, shop int64, at time.Time) *HourDelta {
	if d.hours == nil {
		d.hours = map[hourKey]*HourDelta{}
	}
	h := at.UTC().Truncate(time.Hour)
	k := hourKey{id, h.Unix()}
	x := d.hours[k]
	if x == nil {
		x = &HourDelta{TemplateID: id, ShopNo: shop, Hour: h}
		d.hours[k] = x
	}
	return x
}

// count adds n to the counter of status s.
func (t *TemplateDelta) count(s CouponStatus, n int64) {
	switch s {
	case CouponAvailable:
		t.Available += n
	case CouponLocked:
		t.Locked += n
	case CouponUsed:
		t.Used += n
	case CouponExpired:
		t.Expired += n
	case CouponRevoked:
		t.Revoked += n
	}
}

// Issued counts n coupons of template (of shop) issued from source at at,
// in status.
func (d *StatsDelta) Issued(template, shop int64, source CouponSource, status CouponStatus, n int64, at time.Time) {
	if n == 0 {
		return
	}
	t := d.template(template, shop)
	switch source {
	case FromDistribution:
		t.IssuedDistribution += n
	case FromClaim:
		t.IssuedClaim += n
	case FromCode:
		t.IssuedCode += n
	}
	t.count(status, n)
	h := d.hour(template, shop, at)
	h.Issued += n
	if source == FromClaim {
		h.Claimed += n
	}
}

// Changed counts the change of a coupon from before to after. A coupon
// used counts its Discount and the hour of its UpdatedAt; one no longer
// used (refunded) takes off what it counted: before's Discount, and the
// hour it was used in, before's UpdatedAt (a used coupon changes no more
// until then).
func (d *StatsDelta) Changed(before, after *Coupon) {
	if before.Status == after.Status {
		return
	}
	t := d.template(after.TemplateID, after.ShopNo)
	t.count(before.Status, -1)
	t.count(after.Status, 1)
	if before.Status == CouponUsed {
		t.DiscountFen -= before.Discount
		d.hour(after.TemplateID, after.ShopNo, before.UpdatedAt).Used--
	}
	if after.Status == CouponUsed {
		t.DiscountFen += after.Discount
		d.hour(after.TemplateID, after.ShopNo, after.UpdatedAt).Used++
	}
}

// Moved counts a coupon of template moved from one status to another by
// time (LapseCoupons): neither is used.
func (d *StatsDelta) Moved(template, shop int64, from, to CouponStatus) {
	if from == to {
		return
	}
	t := d.template(template, shop)
	t.count(from, -1)
	t.count(to, 1)
}

// Failed counts n claims of template the store decided without a coupon,
// for reason.
func (d *StatsDelta) Failed(template int64, reason string, n int64) {
	if n == 0 {
		return
	}
	if d.failed == nil {
		d.failed = map[failKey]int64{}
	}
	d.failed[failKey{template, reason}] += n
}

// Templates returns the templates' changes by template id, leaving out
// those that add up to nothing. A store writes them in this order, so that
// transactions that change several templates lock their rows in one order.
func (d *StatsDelta) Templates() []TemplateDelta {
	out := make([]TemplateDelta, 0, len(d.templates))
	for _, t := range d.templates {
		if *t != (TemplateDelta{TemplateID: t.TemplateID, ShopNo: t.ShopNo}) {
			out = append(out, *t)
		}
	}
	slices.SortFunc(out, func(a, b TemplateDelta) int { return cmp.Compare(a.TemplateID, b.TemplateID) })
	return out
}

// Hours returns the hourly changes by template and hour, leaving out
// those that add up to nothing.
func (d *StatsDelta) Hours() []HourDelta {
	out := make([]HourDelta, 0, len(d.hours))
	for _, h := range d.hours {
		if h.Issued != 0 || h.Used != 0 || h.Claimed != 0 {
			out = append(out, *h)
		}
	}
	slices.SortFunc(out, func(a, b HourDelta) int {
		return cmp.Or(cmp.Compare(a.TemplateID, b.TemplateID), a.Hour.Compare(b.Hour))
	})
	return out
}

// Failures returns the claims failed, by template and reason.
func (d *StatsDelta) Failures() []FailedDelta {
	out := make([]FailedDelta, 0, len(d.failed))
	for k, n := range d.failed {
		out = append(out, FailedDelta{TemplateID: k.template, Reason: k.reason, N: n})
	}
	slices.SortFunc(out, func(a, b FailedDelta) int {
		return cmp.Or(cmp.Compare(a.TemplateID, b.TemplateID), cmp.Compare(a.Reason, b.Reason))
	})
	return out
}

// Empty reports whether d changes nothing.
func (d *StatsDelta) Empty() bool {
	return len(d.Templates()) == 0 && len(d.Hours()) == 0 && len(d.failed) == 0
}
