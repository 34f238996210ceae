package console

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/quanhq/quan"
)

// statsHubs are the hubs of the live pages, made by statsRoutes: one
// poller per template (or batch) however many operators watch it.
type statsHubs struct {
	live    *Hub[int64, liveSnapshot]
	batches *Hub[int64, *quan.CodeBatch]
}

// pollerIdentity is who the hubs' pollers read as: the viewer's right to
// see a template or batch is checked, with the viewer's identity, before
// a stream is served.
var pollerIdentity = quan.Identity{Role: quan.RoleAdmin, Subject: "console"}

// statsRoutes registers the live template, statistics and code pages;
// those of a service the console lacks are not served.
func (c *Console) statsRoutes(page func(string, pageFunc)) {
	if c.Stats != nil {
		l := &live{c: c, states: map[int64]*liveState{}}
		c.stats.live = &Hub[int64, liveSnapshot]{Fetch: l.fetch, Logger: c.Logger}
		c.closers = append(c.closers, c.stats.live.Close)
		page("GET "+Prefix+"/templates/{id}/live", c.livePage)
		page("GET "+Prefix+"/templates/{id}/live/events", c.liveEvents)
		page("GET "+Prefix+"/templates/{id}/stats", c.templateStats)
		page("GET "+Prefix+"/stats", c.shopStats)
	}
	if c.Codes != nil {
		c.stats.batches = &Hub[int64, *quan.CodeBatch]{
			Fetch: func(ctx context.Context, id int64) (*quan.CodeBatch, error) {
				return c.Codes.Get(ctx, pollerIdentity, id)
			},
			Final:  func(b *quan.CodeBatch) bool { return b.Status == quan.CodeBatchReady },
			Logger: c.Logger,
		}
		c.closers = append(c.closers, c.stats.batches.Close)
		page("GET "+Prefix+"/templates/{id}/codes", c.codesPage)
		page("POST "+Prefix+"/templates/{id}/codes", c.codesCreate)
		page("GET "+Prefix+"/code-batches/{id}", c.batchPage)
		page("GET "+Prefix+"/code-batches/{id}/events", c.batchEvents)
		page("GET "+Prefix+"/code-batches/{id}/codes.csv", c.batchExport(false))
		page("GET "+Prefix+"/code-batches/{id}/codes.xlsx", c.batchExport(true))
	}
}

// statsData is what the statistics pages show: a template's (Template
// set) or a shop's.
type statsData struct {
	Template *quan.Template
	Counts   *quan.StatsCounts // nil when the range was refused
	Shop     string            // the shop picked ("" all or one's own)
	Shops    int64             // templates with any counter, of a shop's statistics
	Base     string            // the page's path, without the query
	From, To string            // the date inputs, in the operator's zone
	Week     string            // links to the last 7 and 30 days
	Month    string
	Hourly   []quan.HourStats
	Chart    statsChart
}

// statsChart is the data of a chart as window.quanChart draws it.
type statsChart struct {
	X      []int64       `json:"x"`
	Series []chartSeries `json:"series"`
}

type chartSeries struct {
	Label  string  `json:"label"`
	Values []int64 `json:"values"`
}

const dateLayout = "2006-01-02"

// statsRange reads the from and to dates of the query, whole days in the
// operator's zone: from's midnight to the midnight after to. Neither:
// the zero range, which the service takes for the last 24 hours; one: that
// day alone. The end is cut at the end of the current hour, so the chart
// does not run into hours to come.
func (c *Console) statsRange(v *view, q url.Values) (quan.StatsRange, error) {
	from, to := strings.TrimSpace(q.Get("from")), strings.TrimSpace(q.Get("to"))
	if from == "" && to == "" {
		return quan.StatsRange{}, nil
	}
	if from == "" {
		from = to
	}
	if to == "" {
		to = from
	}
	var bad []quan.FieldError
	day := func(field, s string) time.Time {
		d, err := time.ParseInLocation(dateLayout, s, v.loc)
		if err != nil {
			bad = append(bad, quan.FieldError{Field: field, Message: strconv.Quote(s) + " is not a date (YYYY-MM-DD)"})
		}
		return d
	}
	r := quan.StatsRange{From: day("from", from), To: day("to", to).AddDate(0, 0, 1)}
	if len(bad) > 0 {
		return r, &quan.Error{Code: quan.EINVALID, Message: "the statistics' range is invalid", Fields: bad}
	}
	if end := quan.DefaultStatsRange(c.Now.UTC()).To; r.To.After(end) && r.From.Before(end) {
		r.To = end
	}
	return r, nil
}

// links sets the links to the last 7 and 30 days, today included.
func (d *statsData) links(v *view, now time.Time) {
	today := now.In(v.loc)
	link := func(days int) string {
		q := url.Values{}
		if d.Shop != "" {
			q.Set("shop", d.Shop)
		}
		q.Set("from", today.AddDate(0, 0, 1-days).Format(dateLayout))
		q.Set("to", today.Format(dateLayout))
		return d.Base + "?" + q.Encode()
	}
	d.Week, d.Month = link(7), link(30)
}

// fill sets d's range inputs, links and chart from the statistics.
func (d *statsData) fill(v *view, now time.Time, from, to time.Time, hourly []quan.HourStats) {
	d.From = from.In(v.loc).Format(dateLayout)
	d.To = to.Add(-time.Nanosecond).In(v.loc).Format(dateLayout)
	d.links(v, now)
	d.Hourly = hourly
	issued := chartSeries{Label: v.T("stats.issued"), Values: make([]int64, len(hourly))}
	used := chartSeries{Label: v.T("stats.used"), Values: make([]int64, len(hourly))}
	d.Chart.X = make([]int64, len(hourly))
	for i, h := range hourly {
		d.Chart.X[i] = h.Hour.Unix()
		issued.Values[i], used.Values[i] = h.Issued, h.Used
	}
	d.Chart.Series = []chartSeries{issued, used}
}

// Percent formats a ratio as a percentage with one decimal: 0.125 → "12.5".
func (v *view) Percent(f float64) string { return strconv.FormatFloat(f*100, 'f', 1, 64) }

// showStats renders a statistics page; a refused range or shop is shown
// next to its input with status 400, an error of another kind as the
// error page.
func (c *Console) showStats(w http.ResponseWriter, v *view, d statsData, err error) error {
	if d.Week == "" {
		d.links(v, c.Now.UTC())
	}
	status := http.StatusOK
	if err != nil {
		if quan.ErrorCode(err) != quan.EINVALID {
			return err
		}
		v.setError(err, "from", "to", "shop")
		status = http.StatusBadRequest
	}
	v.Data = d
	c.renderView(w, status, "stats", v)
	return nil
}

func (c *Console) templateStats(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	t, err := c.Templates.Get(r.Context(), s.Who, id)
	if err != nil {
		return err
	}
	v := c.newView(r, s)
	v.Title = v.T("stats.templateTitle", t.Name)
	d := statsData{Template: t, Base: r.URL.Path, From: r.URL.Query().Get("from"), To: r.URL.Query().Get("to")}
	rg, err := c.statsRange(v, r.URL.Query())
	if err != nil {
		return c.showStats(w, v, d, err)
	}
	st, err := c.Stats.Template(r.Context(), s.Who, id, rg)
	if err != nil {
		return c.showStats(w, v, d, err)
	}
	d.Counts = &st.StatsCounts
	d.fill(v, c.Now.UTC(), st.From, st.To, st.Hourly)
	return c.showStats(w, v, d, nil)
}

// shopStats is the statistics of the operator's shop; an admin picks a
// shop (?shop=N) or sees every shop's summed.
func (c *Console) shopStats(w http.ResponseWriter, r *http.Request, s *session) error {
	q := r.URL.Query()
	v := c.newView(r, s)
	v.Title = v.T("stats.title")
	d := statsData{Shop: strings.TrimSpace(q.Get("shop")), Base: r.URL.Path, From: q.Get("from"), To: q.Get("to")}
	var shop int64
	if d.Shop != "" {
		n, err := strconv.ParseInt(d.Shop, 10, 64)
		if err != nil || n <= 0 {
			return c.showStats(w, v, d, &quan.Error{Code: quan.EINVALID, Message: "the shop is invalid",
				Fields: []quan.FieldError{{Field: "shop", Message: strconv.Quote(d.Shop) + " is not a shop number"}}})
		}
		shop = n
	}
	rg, err := c.statsRange(v, q)
	if err != nil {
		return c.showStats(w, v, d, err)
	}
	st, err := c.Stats.Shop(r.Context(), s.Who, shop, rg)
	if err != nil {
		return c.showStats(w, v, d, err)
	}
	d.Counts, d.Shops = &st.StatsCounts, st.Templates
	if st.ShopNo != 0 {
		if v.Admin() {
			d.Shop = strconv.FormatInt(st.ShopNo, 10)
		}
		v.Title = v.T("stats.shopTitle", st.ShopNo)
	} else {
		v.Title = v.T("stats.allTitle")
	}
	d.fill(v, c.Now.UTC(), st.From, st.To, st.Hourly)
	return c.showStats(w, v, d, nil)
}
