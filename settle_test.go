package quan_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

func TestRuleDiscount(t *testing.T) {
	for _, c := range []struct {
		name   string
		kind   quan.Kind
		rule   quan.Rule
		amount int64
		off    int64
		met    bool
	}{
		{"direct", quan.KindDirect, quan.Rule{Amount: 500}, 10_000, 500, true},
		{"direct above the amount", quan.KindDirect, quan.Rule{Amount: 500}, 300, 300, true},
		{"threshold met exactly", quan.KindThreshold, quan.Rule{Amount: 1000, Threshold: 10_000}, 10_000, 1000, true},
		{"threshold one fen short", quan.KindThreshold, quan.Rule{Amount: 1000, Threshold: 10_000}, 9_999, 0, false},
		{"8.5折 rounds down", quan.KindDiscount, quan.Rule{Rate: 85}, 999, 149, true}, // 149.85
		{"8.5折 capped", quan.KindDiscount, quan.Rule{Rate: 85, Cap: 100}, 999, 100, true},
		{"折扣 below its threshold", quan.KindDiscount, quan.Rule{Rate: 85, Threshold: 1000}, 999, 0, false},
		{"9.9折 of one fen", quan.KindDiscount, quan.Rule{Rate: 99}, 1, 0, true},
		{"每满100减10, three steps", quan.KindStep, quan.Rule{Amount: 1000, Step: 10_000, Cap: 5000}, 39_999, 3000, true},
		{"每满 capped", quan.KindStep, quan.Rule{Amount: 1000, Step: 10_000, Cap: 2000}, 50_000, 2000, true},
		{"每满 not one step", quan.KindStep, quan.Rule{Amount: 1000, Step: 10_000, Cap: 2000}, 9_999, 0, false},
		{"8.5折 of the largest order", quan.KindDiscount, quan.Rule{Rate: 85}, maxOrder, maxOrder / 100 * 15, true},
	} {
		off, met := c.rule.Discount(c.kind, c.amount)
		if off != c.off || met != c.met {
			t.Errorf("%s: Discount(%d) = %d, %v; want %d, %v", c.name, c.amount, off, met, c.off, c.met)
		}
	}
}

// maxOrder is the largest order ValidateOrder allows, in fen: its amount
// times a percentage overflows 64 bits if taken naively.
const maxOrder = quan.MaxOrderItems * quan.MaxItemQuantity * quan.MaxItemUnitPrice

// TestCompositeDiscount: 满 Threshold 减 Amount, then Rate percent paid of
// the rest, at most Cap off in all, rounded down to the fen.
func TestCompositeDiscount(t *testing.T) {
	满100减10再9折 := quan.Rule{Threshold: 10_000, Amount: 1000, Rate: 90}
	capped := 满100减10再9折
	capped.Cap = 2000
	for _, c := range []struct {
		name   string
		rule   quan.Rule
		amount int64
		off    int64
		met    bool
	}{
		{"OneFenBelowThreshold", 满100减10再9折, 9_999, 0, false},
		{"AtThreshold", 满100减10再9折, 10_000, 1900, true},               // 10 + 90 × 10%
		{"RoundsDown", 满100减10再9折, 12_345, 2134, true},                // 10 + 113.45 × 10% = 21.345
		{"RoundsDownAFractionOfAFen", 满100减10再9折, 10_009, 1900, true}, // 10 + 90.09 × 10% = 19.009
		{"JustBelowCap", capped, 10_999, 1999, true},                  // 10 + 99.99 × 10% = 19.999
		{"AtCap", capped, 11_000, 2000, true},                         // 10 + 100 × 10%
		{"AboveCap", capped, 20_000, 2000, true},                      // 10 + 190 × 10% = 29, capped at 20
		{"Uncapped", 满100减10再9折, 20_000, 2900, true},
		{"CapAboveTheDiscount", quan.Rule{Threshold: 10_000, Amount: 1000, Rate: 90, Cap: 1_000_000}, 20_000, 2900, true},
		{"8.5折", quan.Rule{Threshold: 5000, Amount: 500, Rate: 85}, 10_001, 1925, true}, // 5 + 95.01 × 15% = 19.2515
		{"AmountIsTheThreshold", quan.Rule{Threshold: 1000, Amount: 1000, Rate: 50}, 1000, 1000, true},
		{"AmountIsTheThresholdOneFenMore", quan.Rule{Threshold: 1000, Amount: 1000, Rate: 50}, 1001, 1000, true}, // 0.5 fen rounds down
		{"LargestOrder", quan.Rule{Threshold: 100, Amount: 100, Rate: 1}, maxOrder, 100 + (maxOrder-100)/100*99, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			off, met := c.rule.Discount(quan.KindComposite, c.amount)
			if off != c.off || met != c.met {
				t.Errorf("Discount(%d) = %d, %v; want %d, %v", c.amount, off, met, c.off, c.met)
			}
		})
	}
}

func TestPriceOrder(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	tpl := func(id, shop int64, src quan.Source, kind quan.Kind, r quan.Rule, scope quan.Scope) *quan.Template {
		return &quan.Template{ID: id, ShopNo: shop, TemplateSpec: quan.TemplateSpec{Kind: kind, Rule: r, Source: src, Scope: scope}}
	}
	all := quan.Scope{Kind: quan.ScopeAll}
	templates := map[int64]*quan.Template{
		1: tpl(1, 10, quan.SourceShop, quan.KindThreshold, quan.Rule{Amount: 1000, Threshold: 10_000}, all),                             // shop 10: 满100减10
		2: tpl(2, 10, quan.SourceShop, quan.KindDirect, quan.Rule{Amount: 300}, all),                                                    // shop 10: 立减3
		3: tpl(3, 20, quan.SourceShop, quan.KindDiscount, quan.Rule{Rate: 90}, quan.Scope{Kind: quan.ScopeGoods, IDs: []string{"tea"}}), // shop 20: tea 9折
		4: tpl(4, 99, quan.SourcePlatform, quan.KindDirect, quan.Rule{Amount: 2000}, all),                                               // platform 立减20
		5: tpl(5, 99, quan.SourcePlatform, quan.KindThreshold, quan.Rule{Amount: 5000, Threshold: 100_000}, all),                        // platform 满1000减50
		6: tpl(6, 30, quan.SourceShop, quan.KindDirect, quan.Rule{Amount: 100}, all),                                                    // shop 30: not in the order
		7: tpl(7, 10, quan.SourceShop, quan.KindDirect, quan.Rule{Amount: 100}, quan.Scope{Kind: quan.ScopeCategories, IDs: []string{"food"}}),
	}
	valid := func(id, template int64) *quan.Coupon {
		return &quan.Coupon{ID: id, TemplateID: template, ShopNo: templates[template].ShopNo, Status: quan.CouponAvailable,
			ValidStart: now.Add(-time.Hour), ValidEnd: now.Add(time.Hour)}
	}
	expired := valid(108, 1)
	expired.ValidEnd = now // the window is [start, end)
	early := valid(109, 2)
	early.ValidStart = now.Add(time.Minute)
	locked := valid(110, 2)
	locked.Status = quan.CouponLocked
	coupons := []*quan.Coupon{valid(101, 1), valid(102, 2), valid(103, 3), valid(104, 4), valid(105, 5), valid(106, 6), valid(107, 7),
		expired, early, locked}
	items := []quan.OrderItem{
		{SKU: "shoe", Category: "wear", ShopNo: 10, UnitPrice: 6000, Quantity: 2}, // 120.00 at shop 10
		{SKU: "tea", Category: "drink", ShopNo: 20, UnitPrice: 999, Quantity: 3},  // 29.97 at shop 20
		{SKU: "cup", Category: "home", ShopNo: 20, UnitPrice: 500, Quantity: 1},
	}
	if err := quan.ValidateOrder(items, ""); err != nil {
		t.Fatal(err)
	}
	q := quan.PriceOrder(items, coupons, templates, now)
	want := map[int64]struct {
		usable   bool
		reason   string
		discount int64
	}{
		101: {true, "", 1000},
		102: {true, "", 300},
		103: {true, "", 299}, // 10% of 29.97 rounds down
		104: {true, "", 2000},
		105: {false, quan.ReasonThresholdNotMet, 0},
		106: {false, quan.ReasonOutOfScope, 0},
		107: {false, quan.ReasonOutOfScope, 0},
		108: {false, quan.ReasonExpired, 0},
		109: {false, quan.ReasonNotYetValid, 0},
		110: {false, quan.ReasonNotAvailable, 0},
	}
	if len(q.Coupons) != len(want) {
		t.Fatalf("%d coupon quotes, want %d", len(q.Coupons), len(want))
	}
	for _, cq := range q.Coupons {
		w := want[cq.CouponID]
		if cq.Usable != w.usable || cq.Reason != w.reason || cq.Discount != w.discount {
			t.Errorf("coupon %d: usable %v %q discount %d; want %v %q %d", cq.CouponID, cq.Usable, cq.Reason, cq.Discount, w.usable, w.reason, w.discount)
		}
	}
	total := int64(12_000 + 2997 + 500)
	if q.Total != total || q.Best != 104 || q.BestDiscount != 2000 {
		t.Errorf("total %d, best %d of %d; want %d, 104 of 2000", q.Total, q.Best, q.BestDiscount, total)
	}
	// One platform coupon (104), the best of shop 10 (101 over 102, one
	// per shop), shop 20's (103).
	if !slices.Equal(q.Combination, []int64{104, 101, 103}) || q.CombinationDiscount != 3299 || q.Payable != total-3299 {
		t.Errorf("combination %v off %d payable %d; want [104 101 103] off 3299", q.Combination, q.CombinationDiscount, q.Payable)
	}

	// Discounts never exceed what the order costs.
	cheap := []quan.OrderItem{{SKU: "pin", ShopNo: 10, UnitPrice: 250, Quantity: 1}}
	q = quan.PriceOrder(cheap, []*quan.Coupon{valid(102, 2), valid(104, 4)}, templates, now)
	if q.CombinationDiscount != 250 || q.Payable != 0 {
		t.Errorf("a 2.50 order with 3 + 20 off: discount %d, payable %d; want 250, 0", q.CombinationDiscount, q.Payable)
	}
}

func TestValidateOrder(t *testing.T) {
	err := quan.ValidateOrder([]quan.OrderItem{{SKU: "", ShopNo: 0, UnitPrice: -1, Quantity: 0}}, "")
	fields := quan.ErrorFields(err)
	if !errors.Is(err, quan.ErrInvalid) || len(fields) != 4 {
		t.Errorf("ValidateOrder of a bad item: %v with %d fields, want 4", err, len(fields))
	}
	if err := quan.ValidateOrder(nil, ""); !errors.Is(err, quan.ErrInvalid) {
		t.Errorf("an empty order: %v", err)
	}
}
