package sqlrow

import (
	"context"
	"fmt"

	"github.com/quanhq/quan"
)

// StatsCounters are the counter columns of template_stats, in the order
// ScanStatsCounts reads them (each summed, in a query over several rows).
var StatsCounters = []string{"issued_distribution", "issued_claim", "issued_code",
	"available", "locked", "used", "expired", "revoked", "discount_fen"}

// StatsDests returns the destinations of the StatsCounters columns in c.
func StatsDests(c *quan.StatsCounts) []any {
	return []any{&c.Issued.Distribution, &c.Issued.Claim, &c.Issued.Code,
		&c.Available, &c.Locked, &c.Used, &c.Expired, &c.Revoked, &c.DiscountFen}
}

// TemplateDeltaArgs returns the values of d in the order of StatsCounters.
func TemplateDeltaArgs(d quan.TemplateDelta) []any {
	return []any{d.IssuedDistribution, d.IssuedClaim, d.IssuedCode,
		d.Available, d.Locked, d.Used, d.Expired, d.Revoked, d.DiscountFen}
}

// ScanHour reads a row of the columns hour, issued, used.
func ScanHour(row Scanner) (quan.HourStats, error) {
	var h quan.HourStats
	err := row.Scan(Time(&h.Hour), &h.Issued, &h.Used)
	return h, err
}

// Tallies reads the rows of the columns decided_by, code, n that query
// selects into c's Claims: 'cache' into Refused, 'store' into Failed.
func Tallies(ctx context.Context, q Queryer, c *quan.StatsCounts, query string, args ...any) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("read claim refusals: %w", err)
	}
	defer rows.Close()
	c.Claims.Refused, c.Claims.Failed = map[string]int64{}, map[string]int64{}
	for rows.Next() {
		var (
			by, code string
			n        int64
		)
		if err := rows.Scan(&by, &code, &n); err != nil {
			return fmt.Errorf("read claim refusals: %w", err)
		}
		if by == "cache" {
			c.Claims.Refused[code] += n
		} else {
			c.Claims.Failed[code] += n
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read claim refusals: %w", err)
	}
	return nil
}

// CheckClaimCode refuses, as invalid, a claim's reason or a refusal's code
// longer than quan.MaxClaimReasonLen, which the stores' columns do not
// hold: what names it.
func CheckClaimCode(what, code string) error {
	if len(code) > quan.MaxClaimReasonLen {
		return quan.Errorf(quan.EINVALID, "%s %.24q… has %d bytes: at most %d", what, code, len(code), quan.MaxClaimReasonLen)
	}
	return nil
}
