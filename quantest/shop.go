package quantest

import (
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// ShopStores are the ports of one store the shops' settings and daily
// claim caps use.
type ShopStores struct {
	ClaimStores
	Shops quan.ShopStore
}

// TestShopStore runs the conformance suite of quan.ShopStore.
func TestShopStore(t *testing.T, newStores func(t *testing.T) ShopStores) {
	t.Helper()
	run := func(name string, test func(*testing.T, ShopStores)) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, newStores(t))
		})
	}
	run("Settings/ZeroWhenNone", testShopSettingsZero)
	run("Settings/PutReplaces", testShopSettingsPut)
	run("ShopClaimed/CountsClaimsOnly", testShopClaimed)
}

func testShopSettingsZero(t *testing.T, s ShopStores) {
	got, err := s.Shops.ShopSettings(t.Context(), 42)
	if err != nil {
		t.Fatal(err)
	}
	if *got != (quan.ShopSettings{ShopNo: 42}) {
		t.Errorf("settings of a shop that set none: %+v, want zero settings of shop 42", *got)
	}
}

func testShopSettingsPut(t *testing.T, s ShopStores) {
	ctx := t.Context()
	put := func(st quan.ShopSettings) {
		t.Helper()
		if err := s.Shops.PutShopSettings(ctx, &st); err != nil {
			t.Fatal(err)
		}
		got, err := s.Shops.ShopSettings(ctx, st.ShopNo)
		if err != nil {
			t.Fatal(err)
		}
		if got.ShopNo != st.ShopNo || got.DailyClaimCap != st.DailyClaimCap || !got.UpdatedAt.Equal(st.UpdatedAt) ||
			got.UpdatedAt.Location() != time.UTC || got.UpdatedBy != st.UpdatedBy {
			t.Errorf("settings read back: %+v, want %+v", *got, st)
		}
	}
	put(quan.ShopSettings{ShopNo: 1, DailyClaimCap: 100, UpdatedAt: base, UpdatedBy: "merchant:1"})
	put(quan.ShopSettings{ShopNo: 2, DailyClaimCap: 7, UpdatedAt: base, UpdatedBy: "admin:ops"})
	put(quan.ShopSettings{ShopNo: 1, DailyClaimCap: 0, UpdatedAt: base.Add(time.Hour), UpdatedBy: "admin:ops"})
	if got, _ := s.Shops.ShopSettings(ctx, 2); got.DailyClaimCap != 7 {
		t.Errorf("shop 2's cap became %d after a put of shop 1's, want 7", got.DailyClaimCap)
	}
}

// testShopClaimed: the coupons claims issued for a shop's templates, in
// the hours they were decided; distributions and other shops' claims
// count nothing.
func testShopClaimed(t *testing.T, s ShopStores) {
	ctx := t.Context()
	a := activeTemplate(t, s.TaskStores, "a", 10, 1)
	b := activeTemplate(t, s.TaskStores, "b", 10, 1)
	other := newTemplate(t, 2, "other")
	other.Status, other.Stock, other.TotalStock, other.PerUserLimit = quan.TemplateActive, 10, 10, 1
	mustValid(t, other)
	other = create(t, s.Templates, other)
	issueClaims(t, s.ClaimStores, newClaim(a.ID, 1), newClaim(a.ID, 2), newClaim(b.ID, 1), newClaim(other.ID, 1))
	// A claim that fails issues nothing.
	issueClaims(t, s.ClaimStores, newClaim(a.ID, 1))
	// A distribution of a's issues, and is no claim.
	task := runningTask(t, s.TaskStores, a, "dist")
	apply(t, s.TaskStores, chunk(task, 1, user(1, 5), user(2, 6)), quan.TaskCounts{Rows: 2, Valid: 2, Issued: 2})

	decided := claimAt.Add(time.Second).Truncate(time.Hour)
	for _, tc := range []struct {
		name     string
		shop     int64
		from, to time.Time
		want     int64
	}{
		{"TheDay", 1, decided.Add(-12 * time.Hour), decided.Add(12 * time.Hour), 3},
		{"TheHour", 1, decided, decided.Add(time.Hour), 3},
		{"HoursBefore", 1, decided.Add(-12 * time.Hour), decided, 0},
		{"HoursAfter", 1, decided.Add(time.Hour), decided.Add(12 * time.Hour), 0},
		{"OtherShop", 2, decided, decided.Add(time.Hour), 1},
		{"NoTemplates", 3, decided, decided.Add(time.Hour), 0},
	} {
		got, err := s.Shops.ShopClaimed(ctx, tc.shop, tc.from, tc.to)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("%s: ShopClaimed(%d, %s, %s) = %d, want %d", tc.name, tc.shop, tc.from, tc.to, got, tc.want)
		}
	}
}
