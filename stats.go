package quan

import (
	"context"
	"fmt"
	"time"
)

// StatsStore keeps the merchant's statistics: counters per template that
// every change of a coupon updates in its own transaction (StatsDelta), so
// reading them never scans coupons.
//
// The counters follow the coupons as the store holds them: a coupon whose
// window closed is counted available until the sweeper expires it
// (LapseCoupons), and archiving coupons (Archiver) changes no counter.
type StatsStore interface {
	// TemplateStats returns the counters of template id of shop (AnyShop:
	// of any shop), with Hourly the hours of r (StatsRange.Hours) in which
	// a coupon was issued or used, ascending. ErrNotFound if there is no
	// such template.
	TemplateStats(ctx context.Context, shop, id int64, r StatsRange) (*TemplateStats, error)
	// ShopStats returns the counters of shop's templates summed, AnyShop:
	// of every shop's, Hourly as TemplateStats's. A shop with no template
	// has every counter 0.
	ShopStats(ctx context.Context, shop int64, r StatsRange) (*ShopStats, error)
	// AddRefusals adds counts of claims refused before the store (by the
	// cache or a rate limit), by template and code. Counts of a template
	// that does not exist are dropped. A code longer than
	// MaxClaimReasonLen is an invalid error, and adds nothing.
	AddRefusals(ctx context.Context, counts []RefusalCount) error
}

// StatsCounts are the counters of one template or the sum of several.
// Issued counts every coupon ever issued; Available … Revoked count the
// coupons in each status now, so they add up to Issued.Total.
type StatsCounts struct {
	Issued    IssuedCounts `json:"issued"`
	Available int64        `json:"available"`
	Locked    int64        `json:"locked"`
	Used      int64        `json:"used"`
	Expired   int64        `json:"expired"`
	Revoked   int64        `json:"revoked"`
	// DiscountFen is the discount the coupons now used took off their
	// orders: a refund, which gives its coupon back, takes its discount
	// off again.
	DiscountFen int64 `json:"discountFen"`
	// RedemptionRate is Used / Issued.Total, 0 when nothing was issued.
	RedemptionRate float64      `json:"redemptionRate"`
	Claims         ClaimTallies `json:"claims"`
}

// IssuedCounts are the coupons issued, by how users got them.
type IssuedCounts struct {
	Total        int64 `json:"total"`
	Distribution int64 `json:"distribution"`
	Claim        int64 `json:"claim"`
	Code         int64 `json:"code"`
}

// ClaimTallies count the claims that got no coupon. Refused are those
// refused before the store, by the code of their answer (sold_out,
// limit_reached, not_started, ended, paused, rate_limited); Failed those
// the store decided without a coupon, by reason (ClaimReasons).
type ClaimTallies struct {
	Refused map[string]int64 `json:"refused"`
	Failed  map[string]int64 `json:"failed"`
}

// HourStats are the coupons issued and used in the hour from Hour (UTC).
// Used counts the coupons used in that hour and not refunded since.
type HourStats struct {
	Hour   time.Time `json:"hour"`
	Issued int64     `json:"issued"`
	Used   int64     `json:"used"`
}

// TemplateStats are the statistics of one template.
type TemplateStats struct {
	TemplateID int64 `json:"templateId"`
	ShopNo     int64 `json:"shopNo"`
	StatsCounts
	From   time.Time   `json:"from"`
	To     time.Time   `json:"to"`
	Hourly []HourStats `json:"hourly"`
}

// ShopStats are the statistics of a shop's templates summed (ShopNo 0:
// of every shop).
type ShopStats struct {
	ShopNo    int64 `json:"shopNo"`
	Templates int64 `json:"templates"` // how many templates have any counter
	StatsCounts
	From   time.Time   `json:"from"`
	To     time.Time   `json:"to"`
	Hourly []HourStats `json:"hourly"`
}

// RefusalCount is how many claims of a template were refused with a code.
type RefusalCount struct {
	TemplateID int64
	Code       string
	N          int64
}

// MaxStatsRange bounds the hours one request of statistics covers.
const MaxStatsRange = 31 * 24 * time.Hour

// StatsRange is the span of the hourly statistics: the hours that start
// from From's hour on and before To.
type StatsRange struct {
	From, To time.Time
}

// DefaultStatsRange is the last 24 hours up to the end of now's hour.
func DefaultStatsRange(now time.Time) StatsRange {
	to := now.UTC().Truncate(time.Hour).Add(time.Hour)
	return StatsRange{From: to.Add(-24 * time.Hour), To: to}
}

// Validate refuses a range with an end out of range (TimeProblem), whose
// From is after its To, or longer than MaxStatsRange, naming the
// parameter (from, to) at fault.
func (r StatsRange) Validate() error {
	var v Validation
	v.Time("from", r.From)
	v.Time("to", r.To)
	if err := v.Err("the statistics' range is invalid"); err != nil {
		return err
	}
	if r.From.After(r.To) {
		return &Error{Code: EINVALID, Message: "the statistics' range is invalid", Fields: []FieldError{{
			Field: "from", Message: fmt.Sprintf("%s is after to (%s)", r.From.Format(time.RFC3339), r.To.Format(time.RFC3339))}}}
	}
	if r.To.Sub(r.From) > MaxStatsRange {
		return &Error{Code: EINVALID, Message: "the statistics' range is invalid", Fields: []FieldError{{
			Field: "to", Message: fmt.Sprintf("at most %d days after from", MaxStatsRange/(24*time.Hour))}}}
	}
	return nil
}

// Hours returns the first hour of r (From's, in UTC) and the end, To:
// the hours h with first ≤ h < end.
func (r StatsRange) Hours() (first, end time.Time) {
	return r.From.UTC().Truncate(time.Hour), r.To.UTC()
}
