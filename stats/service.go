package stats

import (
	"context"
	"time"

	"github.com/quanhq/quan"
)

// denseHours returns an entry for every hour of r, those of rows (sparse,
// ascending) as they are and the others 0.
func denseHours(r quan.StatsRange, rows []quan.HourStats) []quan.HourStats {
	first, end := r.Hours()
	out := []quan.HourStats{}
	i := 0
	for h := first; h.Before(end); h = h.Add(time.Hour) {
		for i < len(rows) && rows[i].Hour.Before(h) {
			i++
		}
		if i < len(rows) && rows[i].Hour.Equal(h) {
			out = append(out, quan.HourStats{Hour: h, Issued: rows[i].Issued, Used: rows[i].Used})
			continue
		}
		out = append(out, quan.HourStats{Hour: h})
	}
	return out
}

// finish sets what follows from the counters, and empty maps for none.
func finish(c *quan.StatsCounts) {
	c.Issued.Total = c.Issued.Distribution + c.Issued.Claim + c.Issued.Code
	c.RedemptionRate = 0
	if c.Issued.Total > 0 {
		c.RedemptionRate = float64(c.Used) / float64(c.Issued.Total)
	}
	if c.Claims.Refused == nil {
		c.Claims.Refused = map[string]int64{}
	}
	if c.Claims.Failed == nil {
		c.Claims.Failed = map[string]int64{}
	}
}

// Service answers merchants' and admins' questions about how their
// coupons did.
type Service struct {
	Store quan.StatsStore
	Now   quan.Clock // nil means time.Now
}

// statsRange fills a range left zero with DefaultStatsRange's ends and
// validates it.
func (s *Service) statsRange(r quan.StatsRange) (quan.StatsRange, error) {
	def := quan.DefaultStatsRange(s.Now.UTC())
	switch {
	case r.From.IsZero() && r.To.IsZero():
		r = def
	case r.From.IsZero():
		r.From = r.To.Add(-24 * time.Hour)
	case r.To.IsZero():
		r.To = r.From.Add(24 * time.Hour)
	}
	r.From, r.To = r.From.UTC(), r.To.UTC()
	return r, r.Validate()
}

// Template returns the statistics of template id, as a merchant of its
// shop or an admin sees them, over r (zero ends: DefaultStatsRange; one
// end zero: 24 hours from or to the other). ErrNotFound for a template of
// another shop; EINVALID for a range StatsRange.Validate refuses.
func (s *Service) Template(ctx context.Context, who quan.Identity, id int64, r quan.StatsRange) (*quan.TemplateStats, error) {
	shop, err := who.ShopScope()
	if err != nil {
		return nil, err
	}
	if r, err = s.statsRange(r); err != nil {
		return nil, err
	}
	st, err := s.Store.TemplateStats(ctx, shop, id, r)
	if err != nil {
		return nil, err
	}
	finish(&st.StatsCounts)
	st.From, st.To = r.From, r.To
	st.Hourly = denseHours(r, st.Hourly)
	return st, nil
}

// Shop returns the statistics of shop's templates summed: a merchant's
// own shop (shop must be 0 or its own), an admin's choice (0: every
// shop), over r as Template.
func (s *Service) Shop(ctx context.Context, who quan.Identity, shop int64, r quan.StatsRange) (*quan.ShopStats, error) {
	scope, err := who.ShopScope()
	if err != nil {
		return nil, err
	}
	if scope != quan.AnyShop {
		if shop != 0 && shop != scope {
			return nil, quan.Errorf(quan.EFORBIDDEN, "a merchant sees the statistics of its own shop only")
		}
		shop = scope
	}
	if shop < 0 {
		return nil, &quan.Error{Code: quan.EINVALID, Message: "the shop is invalid", Fields: []quan.FieldError{{Field: "shop", Message: "a positive shop number"}}}
	}
	if r, err = s.statsRange(r); err != nil {
		return nil, err
	}
	st, err := s.Store.ShopStats(ctx, shop, r)
	if err != nil {
		return nil, err
	}
	finish(&st.StatsCounts)
	st.ShopNo = shop
	st.From, st.To = r.From, r.To
	st.Hourly = denseHours(r, st.Hourly)
	return st, nil
}
