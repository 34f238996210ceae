package wallet_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/testrig"
	"github.com/quanhq/quan/wallet"
)

// countingTemplates counts the reads of templates a service makes of a
// real store.
type countingTemplates struct {
	quan.TemplateStore
	one, pages int
}

func (c *countingTemplates) Template(ctx context.Context, shop, id int64) (*quan.Template, error) {
	c.one++
	return c.TemplateStore.Template(ctx, shop, id)
}

func (c *countingTemplates) Templates(ctx context.Context, f quan.TemplateFilter) ([]*quan.Template, int, error) {
	c.pages++
	return c.TemplateStore.Templates(ctx, f)
}

// TestItemsReadTemplatesAPageAtATime: the display of 150 coupons of 150
// templates costs two reads of templates (100, then 50), never one a
// coupon, and none once they are known; each item carries its own
// template's display.
func TestItemsReadTemplatesAPageAtATime(t *testing.T) {
	st := testrig.Store(t)
	clock := testrig.NewClock(testrig.IssueStart)
	var cs []*quan.Coupon
	for i := range 150 {
		spec := testrig.DirectSpec(testrig.IssueStart)
		spec.Category = "饮品"
		spec.Rule.Amount = int64(100 * (i + 1))
		tpl := testrig.Template(t, st, clock.Now, spec, true)
		cs = append(cs, &quan.Coupon{ID: int64(1000 + i), TemplateID: tpl.ID, ShopNo: 1, UserID: 7, Status: quan.CouponAvailable})
	}
	count := &countingTemplates{TemplateStore: st}
	s := &wallet.Service{Coupons: st, Templates: count, Now: clock.Now}
	items, err := s.Items(t.Context(), cs)
	if err != nil {
		t.Fatal(err)
	}
	if count.one != 0 || count.pages != 2 {
		t.Errorf("150 coupons of 150 templates: %d reads of one template, %d of pages; want 0 and 2", count.one, count.pages)
	}
	for i, it := range items {
		want := quan.DirectText(quan.Rule{Amount: int64(100 * (i + 1))})
		if it.Coupon != cs[i] || it.Template == nil || it.Template.ID != cs[i].TemplateID || it.Template.RuleText != want || it.Template.Category != "饮品" {
			t.Fatalf("item %d: %+v with %+v, want coupon %d with the display of template %d (%v)", i, it.Coupon, it.Template, cs[i].ID, cs[i].TemplateID, want)
		}
	}
	again, err := s.Items(t.Context(), cs)
	if err != nil {
		t.Fatal(err)
	}
	// A cached template's display is shared, and its JSON is what
	// encoding/json makes of it.
	for i, it := range again {
		want, err := json.Marshal(it.Template)
		if err != nil {
			t.Fatal(err)
		}
		if it.Template != items[i].Template || !bytes.Equal(it.TemplateJSON, want) {
			t.Fatalf("item %d: display %p (first %p), JSON %s, want the first's, %s", i, it.Template, items[i].Template, it.TemplateJSON, want)
		}
	}
	if count.one != 0 || count.pages != 2 {
		t.Errorf("known templates read again: %d and %d reads", count.one, count.pages)
	}
}
