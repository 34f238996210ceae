package stats_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/stats"
)

// refusalStore records what AddRefusals gets, failing while fail is set.
type refusalStore struct {
	quan.StatsStore
	mu   sync.Mutex
	fail bool
	got  []quan.RefusalCount
}

func (s *refusalStore) AddRefusals(ctx context.Context, cs []quan.RefusalCount) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return errors.New("store down")
	}
	s.got = append(s.got, cs...)
	return nil
}

// TestRefusalCounterKeepsWhatItCouldNotWrite: counts are summed by
// template and code, written in order, and kept through a failed flush.
func TestRefusalCounterKeepsWhatItCouldNotWrite(t *testing.T) {
	st := &refusalStore{fail: true}
	c := &stats.RefusalCounter{Store: st}
	c.Add(2, quan.ESOLDOUT)
	c.Add(1, quan.ELIMIT)
	c.Add(2, quan.ESOLDOUT)
	if err := c.Flush(t.Context()); err == nil {
		t.Fatal("a flush to a failing store succeeded")
	}
	c.Add(2, quan.ESOLDOUT)
	st.fail = false
	if err := c.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := []quan.RefusalCount{{TemplateID: 1, Code: quan.ELIMIT, N: 1}, {TemplateID: 2, Code: quan.ESOLDOUT, N: 3}}
	if !slices.Equal(st.got, want) {
		t.Fatalf("written %+v, want %+v", st.got, want)
	}
	if err := c.Flush(t.Context()); err != nil || len(st.got) != 2 {
		t.Fatalf("a flush with nothing new wrote %+v, %v", st.got, err)
	}
	var none *stats.RefusalCounter
	none.Add(1, quan.ESOLDOUT) // a nil counter counts nothing, and does not panic
}

// TestRefusalCounterFlushesWhenRunEnds: what was counted before the
// process stops is written by Run on its way out.
func TestRefusalCounterFlushesWhenRunEnds(t *testing.T) {
	st := &refusalStore{}
	c := &stats.RefusalCounter{Store: st, Every: time.Hour}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	c.Add(5, quan.ERATELIMITED)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if want := []quan.RefusalCount{{TemplateID: 5, Code: quan.ERATELIMITED, N: 1}}; !slices.Equal(st.got, want) {
		t.Fatalf("written %+v, want %+v", st.got, want)
	}
}

// TestStatsRange: the default range, and the ranges refused.
func TestStatsRange(t *testing.T) {
	now := time.Date(2030, 3, 14, 9, 26, 0, 0, time.UTC)
	r := quan.DefaultStatsRange(now)
	if !r.To.Equal(now.Truncate(time.Hour).Add(time.Hour)) || r.To.Sub(r.From) != 24*time.Hour {
		t.Errorf("DefaultStatsRange(%s) = %+v", now, r)
	}
	for _, c := range []struct {
		r     quan.StatsRange
		field string
	}{
		{quan.StatsRange{From: now, To: now.Add(-time.Second)}, "from"},
		{quan.StatsRange{From: now, To: now.Add(quan.MaxStatsRange + time.Second)}, "to"},
		{quan.StatsRange{From: now, To: now.Add(quan.MaxStatsRange)}, ""},
		{quan.StatsRange{From: now, To: now}, ""},
	} {
		err := c.r.Validate()
		var e *quan.Error
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%+v: %v, want valid", c.r, err)
		case c.field != "" && (!errors.As(err, &e) || len(e.Fields) != 1 || e.Fields[0].Field != c.field):
			t.Errorf("%+v: %v, want a fault of %s", c.r, err, c.field)
		}
	}
}
