package prom_test

import (
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/prom"
)

func TestNames(t *testing.T) {
	reg := prom.NewRegistry()
	// A vector with no label values yet: absent from Gather, present in Names.
	reg.MustRegister(prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "quan_test_seconds", Help: "h"}, []string{"op"}))
	reg.MustRegister(prom.Claims(&quan.ClaimCounters{}, nil))
	names, err := prom.Names(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"quan_test_seconds", "quan_claims_total", "quan_claims_dead_lettered_total", "go_goroutines", "process_resident_memory_bytes"} {
		if !slices.Contains(names, want) {
			t.Errorf("Names lacks %s: %q", want, names)
		}
	}
	if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Errorf("Names not sorted and unique: %q", names)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if !slices.Contains(names, mf.GetName()) {
			t.Errorf("scraped %s, not in Names", mf.GetName())
		}
	}
}
