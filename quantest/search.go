package quantest

import (
	"errors"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// SearchStores are the ports of one store whose coupons its staff search
// and revise, and its outbox.
type SearchStores struct {
	EventStores
	Search quan.CouponSearcher
}

// TestCouponSearcher runs the conformance suite of quan.CouponSearcher.
func TestCouponSearcher(t *testing.T, newStores func(t *testing.T) SearchStores) {
	t.Helper()
	run := func(name string, test func(*testing.T, SearchStores)) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, newStores(t))
		})
	}
	run("Search/Filters", testSearchFilters)
	run("Search/Paging", testSearchPaging)
	run("Revise/AuditEventStats", testReviseCoupon)
}

func search(t *testing.T, s SearchStores, f quan.CouponFilter) []int64 {
	t.Helper()
	cs, err := s.Search.SearchCoupons(t.Context(), f)
	if err != nil {
		t.Fatalf("SearchCoupons(%+v): %v", f, err)
	}
	ids := make([]int64, len(cs))
	for i, c := range cs {
		if c.Code == "" {
			t.Errorf("coupon %d found without its code", c.ID)
		}
		ids[i] = c.ID
	}
	return ids
}

func testSearchFilters(t *testing.T, s SearchStores) {
	a := walletCoupons(t, s.WalletStores, 1, 2, 3)
	b := walletCoupons(t, s.WalletStores, 3)
	tplA, tplB := a[0].TemplateID, b[0].TemplateID
	same := func(what string, got []int64, want ...int64) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s: %v, want %v", what, got, want)
			return
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s: %v, want %v", what, got, want)
				return
			}
		}
	}
	same("user 3", search(t, s, quan.CouponFilter{UserID: 3}), b[0].ID, a[2].ID)
	same("user 3 of shop 1", search(t, s, quan.CouponFilter{UserID: 3, ShopNo: 1}), b[0].ID, a[2].ID)
	same("user 3 of shop 2", search(t, s, quan.CouponFilter{UserID: 3, ShopNo: 2}))
	same("user 3 of template A", search(t, s, quan.CouponFilter{UserID: 3, TemplateID: tplA}), a[2].ID)
	same("template A", search(t, s, quan.CouponFilter{TemplateID: tplA}), a[2].ID, a[1].ID, a[0].ID)
	same("template B", search(t, s, quan.CouponFilter{TemplateID: tplB}), b[0].ID)
	same("coupon id", search(t, s, quan.CouponFilter{ID: a[1].ID}), a[1].ID)
	same("coupon id of shop 2", search(t, s, quan.CouponFilter{ID: a[1].ID, ShopNo: 2}))
	same("template A available", search(t, s, quan.CouponFilter{TemplateID: tplA, Status: quan.CouponAvailable}), a[2].ID, a[1].ID, a[0].ID)
	same("template A used", search(t, s, quan.CouponFilter{TemplateID: tplA, Status: quan.CouponUsed}))
	same("no task", search(t, s, quan.CouponFilter{TaskID: 99}))

	issued := a[0].CreatedAt
	same("issued from then", search(t, s, quan.CouponFilter{TemplateID: tplA, From: issued}), a[2].ID, a[1].ID, a[0].ID)
	same("issued before then", search(t, s, quan.CouponFilter{TemplateID: tplA, To: issued}))
	same("issued in the second after", search(t, s, quan.CouponFilter{TemplateID: tplA, From: issued, To: issued.Add(time.Second)}), a[2].ID, a[1].ID, a[0].ID)
	same("issued after", search(t, s, quan.CouponFilter{TemplateID: tplA, From: issued.Add(time.Second)}))
}

func testSearchPaging(t *testing.T, s SearchStores) {
	users := make([]int64, 11)
	for i := range users {
		users[i] = int64(100 + i)
	}
	cs := walletCoupons(t, s.WalletStores, users...)
	seen := map[int64]bool{}
	f := quan.CouponFilter{TemplateID: cs[0].TemplateID, Limit: 4}
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("more than 10 pages of 11 coupons")
		}
		ids := search(t, s, f)
		for i, id := range ids {
			if seen[id] || i > 0 && id >= ids[i-1] {
				t.Fatalf("page %d: %v repeats or is not newest first", pages, ids)
			}
			seen[id] = true
		}
		if len(ids) < f.Limit {
			break
		}
		f.Before = ids[len(ids)-1]
	}
	if len(seen) != len(cs) {
		t.Fatalf("pages served %d coupons, want %d", len(seen), len(cs))
	}
}

func testReviseCoupon(t *testing.T, s SearchStores) {
	ctx := t.Context()
	c := walletCoupons(t, s.WalletStores, 7)[0]
	at := walletNow
	audit := func() *quan.CouponAudit {
		return &quan.CouponAudit{Actor: "merchant:1", Action: quan.ActionRevokeCoupon, Reason: "fraud", At: at}
	}
	revoke := func(x *quan.Coupon) error { return x.Revoke(at) }

	if _, err := s.Search.ReviseCoupon(ctx, 2, c.ID, audit(), revoke); !errors.Is(err, quan.ErrNotFound) {
		t.Fatalf("another shop revises: %v, want not found", err)
	}
	if _, err := s.Search.ReviseCoupon(ctx, 1, c.ID+1000, audit(), revoke); !errors.Is(err, quan.ErrNotFound) {
		t.Fatalf("no such coupon: %v, want not found", err)
	}
	refused := errors.New("refused")
	if _, err := s.Search.ReviseCoupon(ctx, 1, c.ID, audit(), func(*quan.Coupon) error { return refused }); !errors.Is(err, refused) {
		t.Fatalf("fn fails: %v", err)
	}
	if as, err := s.Search.CouponAudits(ctx, 1, c.ID); err != nil || len(as) != 0 {
		t.Fatalf("after a failed revision: audit %v, %v; want none", as, err)
	}

	got, err := s.Search.ReviseCoupon(ctx, 1, c.ID, audit(), revoke)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != quan.CouponRevoked || got.ID != c.ID || got.Code != c.Code {
		t.Fatalf("revised: %+v", got)
	}
	if _, err := s.Search.ReviseCoupon(ctx, quan.AnyShop, c.ID, audit(), revoke); !errors.Is(err, quan.ErrTransition) {
		t.Fatalf("revoke twice: %v, want illegal transition", err)
	}
	as, err := s.Search.CouponAudits(ctx, 1, c.ID)
	if err != nil || len(as) != 1 || as[0].Actor != "merchant:1" || as[0].Reason != "fraud" || as[0].ShopNo != 1 ||
		as[0].CouponID != c.ID || !as[0].At.Equal(at) || as[0].ID == 0 {
		t.Fatalf("audit: %+v, %v", as, err)
	}
	if as, err := s.Search.CouponAudits(ctx, 2, c.ID); err != nil || len(as) != 0 {
		t.Fatalf("another shop reads the audit: %v, %v", as, err)
	}

	es, err := s.Search.CouponEvents(ctx, 1, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if sum := eventSummary(t, es); len(sum) != 2 || es[0].Type != quan.EventCouponIssued || es[1].Type != quan.EventCouponRevoked ||
		es[1].Previous != quan.CouponAvailable {
		t.Fatalf("history: %v", sum)
	}
	if es, err := s.Search.CouponEvents(ctx, 2, c.ID); err != nil || len(es) != 0 {
		t.Fatalf("another shop reads the history: %v, %v", es, err)
	}
	same := search(t, s, quan.CouponFilter{UserID: 7, Status: quan.CouponRevoked})
	if len(same) != 1 || same[0] != c.ID {
		t.Fatalf("revoked coupons of user 7: %v", same)
	}
}
