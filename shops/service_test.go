package shops_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/testrig"
	"github.com/quanhq/quan/shops"
	"github.com/quanhq/quan/sqlite"
)

func newShopService(t *testing.T, now func() time.Time) (*shops.Service, *sqlite.Store) {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "quan.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st := sqlite.NewStore(db)
	return &shops.Service{Store: st, Now: now}, st
}

func TestShopService(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 3, 14, 9, 0, 0, 0, time.UTC)

	t.Run("MerchantSetsItsOwnShop", func(t *testing.T) {
		t.Parallel()
		s, _ := newShopService(t, func() time.Time { return at })
		ctx := t.Context()
		got, err := s.Settings(ctx, testrig.Merchant1, 1)
		if err != nil || *got != (quan.ShopSettings{ShopNo: 1}) {
			t.Fatalf("settings never set: %+v, %v; want zero settings of shop 1", got, err)
		}
		set, err := s.SetSettings(ctx, testrig.Merchant1, 1, quan.ShopSettings{ShopNo: 99, DailyClaimCap: 500})
		if err != nil {
			t.Fatal(err)
		}
		want := quan.ShopSettings{ShopNo: 1, DailyClaimCap: 500, UpdatedAt: at, UpdatedBy: "merchant:1"}
		if *set != want {
			t.Errorf("SetSettings returned %+v, want %+v (the ShopNo given is the path's)", *set, want)
		}
		if got, err := s.Settings(ctx, testrig.Merchant1, 1); err != nil || *got != want {
			t.Errorf("Settings after the set: %+v, %v; want %+v", got, err, want)
		}
		if c, err := s.DailyClaimCap(ctx, 1); err != nil || c != 500 {
			t.Errorf("DailyClaimCap = %d, %v; want 500", c, err)
		}
	})

	t.Run("AdminSetsAnyShop", func(t *testing.T) {
		t.Parallel()
		s, _ := newShopService(t, func() time.Time { return at })
		set, err := s.SetSettings(t.Context(), testrig.Admin, 7, quan.ShopSettings{DailyClaimCap: 3})
		if err != nil || set.DailyClaimCap != 3 || set.UpdatedBy != "admin:root" {
			t.Fatalf("an admin's set of shop 7: %+v, %v", set, err)
		}
	})

	t.Run("ErrForbidden", func(t *testing.T) {
		t.Parallel()
		s, _ := newShopService(t, func() time.Time { return at })
		ctx := t.Context()
		for _, who := range []quan.Identity{testrig.Merchant1, {Role: quan.RoleUser, UserID: 1}} {
			if _, err := s.SetSettings(ctx, who, 2, quan.ShopSettings{DailyClaimCap: 1}); quan.ErrorCode(err) != quan.EFORBIDDEN {
				t.Errorf("%s sets shop 2: %v, want forbidden", who, err)
			}
			if _, err := s.Settings(ctx, who, 2); quan.ErrorCode(err) != quan.EFORBIDDEN {
				t.Errorf("%s reads shop 2: %v, want forbidden", who, err)
			}
		}
		if _, err := s.Settings(ctx, quan.Identity{}, 1); !errors.Is(err, quan.ErrUnauthorized) {
			t.Errorf("no identity: %v, want unauthorized", err)
		}
		if got, _ := s.Store.ShopSettings(ctx, 2); got.DailyClaimCap != 0 {
			t.Errorf("shop 2's cap is %d after refused sets, want 0", got.DailyClaimCap)
		}
	})

	t.Run("ErrInvalid", func(t *testing.T) {
		t.Parallel()
		s, _ := newShopService(t, func() time.Time { return at })
		for _, n := range []int64{-1, quan.MaxDailyClaimCap + 1} {
			_, err := s.SetSettings(t.Context(), testrig.Merchant1, 1, quan.ShopSettings{DailyClaimCap: n})
			var e *quan.Error
			if !errors.As(err, &e) || e.Code != quan.EINVALID || len(e.Fields) != 1 || e.Fields[0].Field != "dailyClaimCap" {
				t.Errorf("cap %d: %v, want invalid naming dailyClaimCap", n, err)
			}
		}
		if _, err := s.SetSettings(t.Context(), testrig.Admin, 0, quan.ShopSettings{DailyClaimCap: 1}); quan.ErrorCode(err) != quan.EINVALID {
			t.Errorf("shop 0: %v, want invalid", err)
		}
	})

	t.Run("CapCachedForTTL", func(t *testing.T) {
		t.Parallel()
		now := at
		s, st := newShopService(t, func() time.Time { return now })
		s.CacheTTL = 10 * time.Second
		ctx := t.Context()
		if c, _ := s.DailyClaimCap(ctx, 1); c != 0 {
			t.Fatalf("cap %d, want 0", c)
		}
		// A change by another process, straight in the store: unseen for
		// the TTL, seen after.
		if err := st.PutShopSettings(ctx, &quan.ShopSettings{ShopNo: 1, DailyClaimCap: 9, UpdatedAt: at, UpdatedBy: "admin"}); err != nil {
			t.Fatal(err)
		}
		now = at.Add(9 * time.Second)
		if c, _ := s.DailyClaimCap(ctx, 1); c != 0 {
			t.Errorf("cap %d within the TTL of a read of 0, want 0 (cached)", c)
		}
		now = at.Add(10 * time.Second)
		if c, _ := s.DailyClaimCap(ctx, 1); c != 9 {
			t.Errorf("cap %d after the TTL, want 9", c)
		}
		// A change through the service is seen at once.
		if _, err := s.SetSettings(ctx, testrig.Merchant1, 1, quan.ShopSettings{DailyClaimCap: 4}); err != nil {
			t.Fatal(err)
		}
		if c, _ := s.DailyClaimCap(ctx, 1); c != 4 {
			t.Errorf("cap %d after SetSettings here, want 4", c)
		}
	})
}
