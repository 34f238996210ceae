package events_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/events"
	"github.com/quanhq/quan/internal/testrig"
	"github.com/quanhq/quan/nats"
)

// BenchmarkRelay relays 20,000 coupon.issued events from a SQLite outbox
// to an embedded NATS bus in batches of events.DefaultBatch, and reports
// events a second and the machine's cores
// (go test ./events -run '^$' -bench Relay -benchtime 3x).
func BenchmarkRelay(b *testing.B) {
	const n = 20_000
	var total time.Duration
	for range b.N {
		b.StopTimer()
		st := testrig.Store(b)
		srv, err := nats.StartEmbedded(b.Context(), b.TempDir(), nil)
		if err != nil {
			b.Fatal(err)
		}
		bus, err := srv.Bus(b.Context(), nats.Config{})
		if err != nil {
			b.Fatal(err)
		}
		tpl := &quan.Template{ShopNo: 1, TemplateSpec: quan.TemplateSpec{
			Name: "bench", Kind: quan.KindDirect, Rule: quan.Rule{Amount: 500}, Source: quan.SourceShop,
			Scope: quan.Scope{Kind: quan.ScopeAll}, IssueStart: testrig.IssueStart, IssueEnd: testrig.IssueStart.Add(48 * time.Hour),
			Validity: quan.Validity{Kind: quan.ValidRelative, Hours: 48}, PerUserLimit: 1,
		}, Stock: n, TotalStock: n, Status: quan.TemplateActive, CreatedBy: "merchant:1", CreatedAt: testrig.IssueStart, UpdatedAt: testrig.IssueStart}
		if err := st.CreateTemplate(b.Context(), tpl, "merchant:1"); err != nil {
			b.Fatal(err)
		}
		for first := 1; first <= n; first += 1000 {
			var cs []*quan.Claim
			for u := first; u < first+1000; u++ {
				cs = append(cs, &quan.Claim{ID: quan.NewClaimID(tpl.ID, int64(u)), TemplateID: tpl.ID, UserID: int64(u), Status: quan.ClaimPending, At: testrig.ClaimAt})
			}
			if _, err := st.IssueClaims(b.Context(), cs, testrig.ClaimAt); err != nil {
				b.Fatal(err)
			}
		}
		relay := &events.Relay{Store: st, Bus: bus, Owner: "bench", Now: testrig.NewClock(testrig.ClaimAt).At()}
		b.StartTimer()
		start := time.Now()
		for {
			k, err := relay.RelayOnce(b.Context())
			if err != nil {
				b.Fatal(err)
			}
			if k == 0 {
				break
			}
		}
		total += time.Since(start)
		b.StopTimer()
		if got := relay.Counters.Relayed.Load(); got != n {
			b.Fatalf("relayed %d of %d", got, n)
		}
		bus.Close()
		srv.Close()
	}
	b.ReportMetric(float64(n*b.N)/total.Seconds(), "events/s")
	b.ReportMetric(float64(runtime.NumCPU()), "cores")
}
