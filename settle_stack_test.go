package quan

import "testing"

// TestStackSlot: one platform coupon stacks with one coupon of each shop;
// two platform coupons, or two coupons of one shop, never stack, whatever
// shop a platform coupon's template was made by.
func TestStackSlot(t *testing.T) {
	var id int64 // every coupon its own id and template
	platform := func(shop int64) CouponQuote {
		id++
		return CouponQuote{CouponID: id, TemplateID: id, Source: SourcePlatform, ShopNo: shop}
	}
	shop := func(shop int64) CouponQuote {
		id++
		return CouponQuote{CouponID: id, TemplateID: id, Source: SourceShop, ShopNo: shop}
	}
	for _, tc := range []struct {
		name   string
		a, b   CouponQuote
		stacks bool
	}{
		{"PlatformAndShop", platform(99), shop(10), true},
		{"PlatformAndShopOfItsMaker", platform(10), shop(10), true},
		{"TwoShops", shop(10), shop(20), true},
		{"ErrTwoPlatform", platform(99), platform(98), false},
		{"ErrTwoOfOneShop", shop(10), shop(10), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := stackSlot(tc.a) != stackSlot(tc.b); got != tc.stacks {
				t.Errorf("%+v and %+v stack: %v, want %v (slots %d, %d)", tc.a, tc.b, got, tc.stacks, stackSlot(tc.a), stackSlot(tc.b))
			}
		})
	}
	for slot, want := range map[int64]string{0: "platform", 10: "shop 10"} {
		if got := slotName(slot); got != want {
			t.Errorf("slotName(%d) = %q, want %q", slot, got, want)
		}
	}
}
