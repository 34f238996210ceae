package console

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/quanhq/quan"
)

// liveWindow is how many snapshots (seconds) the live chart shows.
const liveWindow = 300

// liveSnapshot is what the live template page shows, pushed once a
// second during a flash sale.
type liveSnapshot struct {
	At         int64               `json:"at"` // Unix seconds, of the console's clock
	Status     quan.TemplateStatus `json:"status"`
	Stock      int64               `json:"stock"` // left to issue
	TotalStock int64               `json:"totalStock"`
	Issued     int64               `json:"issued"`  // coupons issued so far, every source
	Claimed    int64               `json:"claimed"` // of those, by claims
	Refused    int64               `json:"refused"` // claims refused so far, every code
	// Refusals are the claims refused, by code: those refused before
	// the store (sold_out, limit_reached, rate_limited …, counted within
	// a few seconds: stats.RefusalCounter) and those the store failed.
	Refusals map[string]int64 `json:"refusals"`
	// ClaimsPerSec and RefusedPerSec are the claims issued and refused a
	// second since the snapshot before.
	ClaimsPerSec  float64 `json:"claimsPerSec"`
	RefusedPerSec float64 `json:"refusedPerSec"`
	// Chart is the last liveWindow snapshots' rates, oldest first.
	Chart liveChart `json:"chart"`
}

type liveChart struct {
	X       []int64   `json:"x"`
	Claims  []float64 `json:"claims"`
	Refused []float64 `json:"refused"`
}

// live computes the live snapshots. The rates come from two successive
// reads of the counters, so each poller keeps the last of its template's
// in states; the state goes with the poller (its context), and a poller
// started later begins a fresh chart.
type live struct {
	c      *Console
	mu     sync.Mutex
	states map[int64]*liveState
}

type liveState struct {
	poller  <-chan struct{} // the Done of the poller's context
	read    time.Time       // when the counters were read, monotonic
	claimed int64
	refused int64
	chart   liveChart
}

// fetch reads template id and its counters as the console (pollers have
// no viewer) and adds the rates since the last read.
func (l *live) fetch(ctx context.Context, id int64) (liveSnapshot, error) {
	t, err := l.c.Templates.Get(ctx, pollerIdentity, id)
	if err != nil {
		return liveSnapshot{}, err
	}
	// An empty range: the counters are what is wanted, not the hours.
	now := l.c.Now.UTC()
	st, err := l.c.Stats.Template(ctx, pollerIdentity, id, quan.StatsRange{From: now, To: now})
	if err != nil {
		return liveSnapshot{}, err
	}
	snap := liveSnapshot{
		At: now.Unix(), Status: t.Status, Stock: t.Stock, TotalStock: t.TotalStock,
		Issued: st.Issued.Total, Claimed: st.Issued.Claim, Refusals: map[string]int64{},
	}
	for _, m := range []map[string]int64{st.Claims.Refused, st.Claims.Failed} {
		for code, n := range m {
			snap.Refusals[code] += n
			snap.Refused += n
		}
	}
	// The rates are measured on the monotonic clock: they are the
	// process's own, whatever the console's clock says.
	read := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.states[id]
	if s == nil || s.poller != ctx.Done() {
		s = &liveState{poller: ctx.Done()}
		l.states[id] = s
		context.AfterFunc(ctx, func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.states[id] == s {
				delete(l.states, id)
			}
		})
	} else if dt := read.Sub(s.read).Seconds(); dt > 0 {
		snap.ClaimsPerSec = max(0, float64(snap.Claimed-s.claimed)/dt)
		snap.RefusedPerSec = max(0, float64(snap.Refused-s.refused)/dt)
	}
	s.read, s.claimed, s.refused = read, snap.Claimed, snap.Refused
	ch := &s.chart
	ch.X = append(ch.X, snap.At)
	ch.Claims = append(ch.Claims, snap.ClaimsPerSec)
	ch.Refused = append(ch.Refused, snap.RefusedPerSec)
	if n := len(ch.X); n > liveWindow {
		ch.X, ch.Claims, ch.Refused = ch.X[n-liveWindow:], ch.Claims[n-liveWindow:], ch.Refused[n-liveWindow:]
	}
	// Each snapshot has its own copy: the state's slices grow on.
	snap.Chart = liveChart{X: slices.Clone(ch.X), Claims: slices.Clone(ch.Claims), Refused: slices.Clone(ch.Refused)}
	return snap, nil
}

// liveData is the live page's first render, before the stream's
// snapshots take over.
type liveData struct {
	T        *quan.Template
	Snap     liveSnapshot
	Codes    []string          // the refusal codes in order
	Labels   map[string]string // refusal codes and chart series in words
	Interval int               // seconds between two snapshots
}

// refusalCodes are the codes the page has words for, in the order shown.
var refusalCodes = []string{quan.ESOLDOUT, quan.ELIMIT, quan.ENOTSTARTED, quan.EENDED, quan.EPAUSED, quan.ERATELIMITED}

func (c *Console) livePage(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	t, err := c.Templates.Get(r.Context(), s.Who, id)
	if err != nil {
		return err
	}
	now := c.Now.UTC()
	st, err := c.Stats.Template(r.Context(), s.Who, id, quan.StatsRange{From: now, To: now})
	if err != nil {
		return err
	}
	v := c.newView(r, s)
	v.Title = v.T("live.title", t.Name)
	d := liveData{T: t, Interval: 1, Labels: map[string]string{
		"claims": v.T("live.claimsPerSec"), "refused": v.T("live.refusedPerSec"),
	}}
	d.Snap = liveSnapshot{Status: t.Status, Stock: t.Stock, TotalStock: t.TotalStock, Issued: st.Issued.Total,
		Claimed: st.Issued.Claim, Refusals: map[string]int64{}}
	for _, m := range []map[string]int64{st.Claims.Refused, st.Claims.Failed} {
		for code, n := range m {
			d.Snap.Refusals[code] += n
			d.Snap.Refused += n
		}
	}
	d.Codes = slices.Clone(refusalCodes)
	for _, code := range slices.Sorted(maps.Keys(d.Snap.Refusals)) {
		if !slices.Contains(d.Codes, code) {
			d.Codes = append(d.Codes, code)
		}
	}
	for _, code := range d.Codes {
		d.Labels[code] = v.RefusalText(code)
	}
	v.Data = d
	c.renderView(w, http.StatusOK, "live", v)
	return nil
}

// RefusalText names a refusal code in the operator's language; a code
// without words (a store's failure cause) shows as itself.
func (v *view) RefusalText(code string) string {
	if s := v.T("live.refusal." + code); s != "live.refusal."+code {
		return s
	}
	return code
}

// liveEvents streams template id's snapshots, once the viewer is known to
// see the template.
func (c *Console) liveEvents(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	if _, err := c.Templates.Get(r.Context(), s.Who, id); err != nil {
		return err
	}
	ch, cancel := c.stats.live.Watch(r.Context(), id)
	defer cancel()
	if err := ServeEvents(w, r, ch, "snapshot", func(v liveSnapshot) ([]byte, error) { return json.Marshal(v) }); err != nil {
		c.logger().Warn("console live stream", "template", id, "err", err)
	}
	return nil
}
