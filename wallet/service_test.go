package wallet_test

import (
	"testing"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/wallet"
)

// TestLockRequestKey: a lock request's key is its items and coupons: the
// coupons in any order, each named once or more, and the discount it
// expects do not change it; any other item or coupon does.
func TestLockRequestKey(t *testing.T) {
	items := []quan.OrderItem{
		{SKU: "shoe", Category: "wear", ShopNo: 1, UnitPrice: 12_000, Quantity: 1},
		{SKU: "hat", Category: "wear", ShopNo: 2, UnitPrice: 3_000, Quantity: 2},
	}
	base := wallet.LockRequest{Items: items, CouponIDs: []int64{3, 5}, ExpectedDiscount: 1000}
	key := base.Key()
	with := func(f func(r *wallet.LockRequest)) string {
		r := wallet.LockRequest{Items: append([]quan.OrderItem(nil), items...), CouponIDs: []int64{3, 5}, ExpectedDiscount: 1000}
		f(&r)
		return r.Key()
	}
	for name, f := range map[string]func(*wallet.LockRequest){
		"CouponsInAnotherOrder": func(r *wallet.LockRequest) { r.CouponIDs = []int64{5, 3} },
		"ACouponNamedTwice":     func(r *wallet.LockRequest) { r.CouponIDs = []int64{3, 5, 3} },
		"AnotherDiscount":       func(r *wallet.LockRequest) { r.ExpectedDiscount = 999 },
	} {
		if got := with(f); got != key {
			t.Errorf("%s: key %s, want the same %s", name, got, key)
		}
	}
	for name, f := range map[string]func(*wallet.LockRequest){
		"ErrAnotherCoupon":   func(r *wallet.LockRequest) { r.CouponIDs = []int64{3, 6} },
		"ErrACouponLess":     func(r *wallet.LockRequest) { r.CouponIDs = []int64{3} },
		"ErrAnItemLess":      func(r *wallet.LockRequest) { r.Items = r.Items[:1] },
		"ErrAnotherQuantity": func(r *wallet.LockRequest) { r.Items[1].Quantity = 3 },
		"ErrAnotherPrice":    func(r *wallet.LockRequest) { r.Items[0].UnitPrice = 12_001 },
		"ErrAnotherShop":     func(r *wallet.LockRequest) { r.Items[0].ShopNo = 3 },
		"ErrFieldsRunTogether": func(r *wallet.LockRequest) {
			r.Items[0].SKU, r.Items[0].Category = "shoe wear", ""
		},
	} {
		if got := with(f); got == key {
			t.Errorf("%s: the same key %s", name, key)
		}
	}
}
