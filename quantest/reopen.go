package quantest

import (
	"errors"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/templates"
)

// TestReopen checks that what a store wrote survives closing it: a
// template, its stock and its history read back the same from a store
// opened anew on the same database. open opens a store on one database,
// the same each time it is called within the test, and returns it with
// the function that closes it. Closing must be safe to repeat.
func TestReopen(t *testing.T, open func(t *testing.T) (quan.TemplateStore, func() error)) {
	t.Helper()
	s, closeStore := open(t)
	now := time.Date(2030, 1, 2, 3, 4, 5, 678901234, time.UTC)
	svc := &templates.Service{Store: s, Now: func() time.Time { return now }}
	merchant := quan.Identity{Role: quan.RoleMerchant, ShopNo: 7}
	tpl, err := svc.Create(t.Context(), merchant, templates.NewTemplate{
		TemplateSpec: quan.TemplateSpec{
			Name:         "reopened",
			Kind:         quan.KindDirect,
			Rule:         quan.Rule{Amount: 300},
			Source:       quan.SourceShop,
			Scope:        quan.Scope{Kind: quan.ScopeAll},
			IssueStart:   now,
			IssueEnd:     now.AddDate(0, 1, 0),
			Validity:     quan.Validity{Kind: quan.ValidRelative, Hours: 24},
			PerUserLimit: 1,
		},
		Stock: 10,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AdjustStock(t.Context(), tpl.ID, -3); err != nil {
		t.Fatal(err)
	}
	if err := closeStore(); err != nil {
		t.Fatal(err)
	}
	if err := closeStore(); err != nil {
		t.Fatalf("second close: %v", err)
	}

	s, closeStore = open(t)
	defer closeStore()
	got, err := s.Template(t.Context(), 7, tpl.ID)
	if err != nil {
		t.Fatalf("after reopening: %v", err)
	}
	if got.Name != "reopened" || got.Stock != 7 || !got.CreatedAt.Equal(tpl.CreatedAt) {
		t.Errorf("after reopening: %+v, want %+v with stock 7", got, tpl)
	}
	if _, err := s.Template(t.Context(), 8, tpl.ID); !errors.Is(err, quan.ErrNotFound) {
		t.Errorf("another shop's template: %v, want ErrNotFound", err)
	}
	es, err := s.TemplateHistory(t.Context(), 7, tpl.ID)
	if err != nil || len(es) != 1 {
		t.Fatalf("history after reopening: %d entries, %v; want 1", len(es), err)
	}
	// The store takes the entry's time from the template, that is from the
	// service's clock.
	if !es[0].At.Equal(tpl.CreatedAt) {
		t.Errorf("create entry at %v, want the template's creation %v", es[0].At, tpl.CreatedAt)
	}
}
