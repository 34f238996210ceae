package prom_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/quanhq/quan/prom"
	"github.com/quanhq/quan/reconcile"
)

// TestReconcile: a scrape reads the Reconciler's counters as they are.
func TestReconcile(t *testing.T) {
	r := &reconcile.Reconciler{}
	reg := prometheus.NewRegistry()
	reg.MustRegister(prom.Reconcile(&r.Counters))
	c := &r.Counters
	c.StockDrift.Store(3)
	c.DriftTemplates.Store(1)
	c.HeldDriftUsers.Store(2)
	c.RunsOK.Add(4)
	c.RunsFailed.Add(1)
	c.Repairs.Add(1)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += "{" + l.GetName() + "=" + l.GetValue() + "}"
			}
			switch {
			case m.GetGauge() != nil:
				got[name] = m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				got[name] = m.GetCounter().GetValue()
			}
		}
	}
	want := map[string]float64{
		"quan_stock_drift":                        3,
		"quan_stock_drift_templates":              1,
		"quan_holding_drift_users":                2,
		"quan_reconcile_runs_total{result=ok}":    4,
		"quan_reconcile_runs_total{result=error}": 1,
		"quan_reconcile_repairs_total":            1,
	}
	if len(got) != len(want) {
		t.Errorf("scraped %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}
