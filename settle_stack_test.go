package quan

import (
	"math/rand/v2"
	"slices"
	"testing"
)

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

// stackQuote is a usable quote of coupon id funded by src (shop: of shop
// shop) taking off off, of stacking st and priority prio.
func stackQuote(id int64, src Source, shop int64, st Stacking, off, prio int64) CouponQuote {
	return CouponQuote{CouponID: id, TemplateID: id, Source: src, ShopNo: shop, Usable: true, Discount: off, Stacking: st, Priority: prio}
}

var stackings = []Stacking{StackAny, StackExclusive, StackWithShop, StackWithPlatform}

// TestStacksEveryPolicy: every stacking policy against every other, for
// two shops' coupons and for a platform coupon with a shop's, both ways
// round; and what the best combination and a lock make of each pair.
func TestStacksEveryPolicy(t *testing.T) {
	// want[a][b]: a coupon of policy a with one of policy b.
	shopShop := map[Stacking]map[Stacking]bool{
		StackAny:          {StackAny: true, StackExclusive: false, StackWithShop: true, StackWithPlatform: false},
		StackExclusive:    {StackAny: false, StackExclusive: false, StackWithShop: false, StackWithPlatform: false},
		StackWithShop:     {StackAny: true, StackExclusive: false, StackWithShop: true, StackWithPlatform: false},
		StackWithPlatform: {StackAny: false, StackExclusive: false, StackWithShop: false, StackWithPlatform: false},
	}
	platformShop := map[Stacking]map[Stacking]bool{ // [platform's][shop's]
		StackAny:          {StackAny: true, StackExclusive: false, StackWithShop: false, StackWithPlatform: true},
		StackExclusive:    {StackAny: false, StackExclusive: false, StackWithShop: false, StackWithPlatform: false},
		StackWithShop:     {StackAny: true, StackExclusive: false, StackWithShop: false, StackWithPlatform: true},
		StackWithPlatform: {StackAny: false, StackExclusive: false, StackWithShop: false, StackWithPlatform: false},
	}
	for _, a := range stackings {
		for _, b := range stackings {
			for _, tc := range []struct {
				name string
				x, y CouponQuote
				want bool
			}{
				{"Shop" + string(a) + "/Shop" + string(b), stackQuote(1, SourceShop, 10, a, 1000, 0), stackQuote(2, SourceShop, 20, b, 700, 0), shopShop[a][b]},
				{"Platform" + string(a) + "/Shop" + string(b), stackQuote(1, SourcePlatform, 10, a, 1000, 0), stackQuote(2, SourceShop, 20, b, 700, 0), platformShop[a][b]},
			} {
				t.Run(tc.name, func(t *testing.T) {
					if got := stacks(tc.x, tc.y); got != tc.want || stacks(tc.y, tc.x) != got {
						t.Errorf("stacks = %v, reversed %v; want %v both", got, stacks(tc.y, tc.x), tc.want)
					}
					if why := StackConflict(tc.x, tc.y); (why == "") != tc.want {
						t.Errorf("stackConflict = %q, want a reason iff they do not stack", why)
					}
					combo := bestCombination([]CouponQuote{tc.y, tc.x}, 100_000)
					want := []int64{1} // the larger alone
					if tc.want {
						want = []int64{1, 2} // the platform's, then the shop's
					}
					if ids := idsOf(combo); !slices.Equal(ids, want) {
						t.Errorf("best combination %v, want %v", ids, want)
					}
				})
			}
		}
	}
}

func idsOf(combo []CouponQuote) []int64 {
	ids := []int64{}
	for _, c := range combo {
		ids = append(ids, c.CouponID)
	}
	return ids
}

func sumOf(combo []CouponQuote, total int64) int64 {
	var s int64
	for _, c := range combo {
		s += c.Discount
	}
	return min(s, total)
}

// TestBestCombination: what the search chooses, named by the rule that
// decides.
func TestBestCombination(t *testing.T) {
	const big = 1_000_000 // an order total no discount here reaches
	for _, tc := range []struct {
		name  string
		total int64
		cqs   []CouponQuote
		want  []int64
		off   int64
	}{
		{"ExclusiveBeatsAPairWorthLess", big, []CouponQuote{
			stackQuote(1, SourceShop, 10, StackExclusive, 3000, 0),
			stackQuote(2, SourcePlatform, 0, StackAny, 1000, 0),
			stackQuote(3, SourceShop, 20, StackAny, 1500, 0),
		}, []int64{1}, 3000},
		{"PairBeatsAnExclusiveWorthLess", big, []CouponQuote{
			stackQuote(1, SourceShop, 10, StackExclusive, 2000, 0),
			stackQuote(2, SourcePlatform, 0, StackAny, 1000, 0),
			stackQuote(3, SourceShop, 20, StackAny, 1500, 0),
		}, []int64{2, 3}, 2500},
		{"ExclusiveAsMuchAsAPairIsFewerCoupons", big, []CouponQuote{
			stackQuote(1, SourceShop, 10, StackExclusive, 2500, 0),
			stackQuote(2, SourcePlatform, 0, StackAny, 1000, 9),
			stackQuote(3, SourceShop, 20, StackAny, 1500, 9),
		}, []int64{1}, 2500},
		{"PlatformTakesOneWithPlatformShop", big, []CouponQuote{
			stackQuote(1, SourcePlatform, 0, StackWithShop, 1000, 0),
			stackQuote(2, SourceShop, 10, StackWithPlatform, 900, 0),
			stackQuote(3, SourceShop, 20, StackWithPlatform, 800, 0),
			stackQuote(4, SourceShop, 30, StackAny, 100, 0),
		}, []int64{1, 2}, 1900}, // not 2 and 3 together: withPlatform refuses the other shop
		{"PlatformWithSeveralShopsAllAny", big, []CouponQuote{
			stackQuote(1, SourcePlatform, 0, StackWithShop, 1000, 0),
			stackQuote(2, SourceShop, 10, StackAny, 900, 0),
			stackQuote(3, SourceShop, 20, StackAny, 800, 0),
			stackQuote(4, SourceShop, 20, StackWithPlatform, 850, 0),
		}, []int64{1, 2, 3}, 2700},
		{"ShopsOnlyWhenThePlatformOneRefusesShops", big, []CouponQuote{
			stackQuote(1, SourcePlatform, 0, StackExclusive, 1200, 0),
			stackQuote(2, SourceShop, 10, StackWithShop, 900, 0),
			stackQuote(3, SourceShop, 20, StackWithShop, 800, 0),
		}, []int64{2, 3}, 1700},
		{"PriorityBreaksATieInASlot", big, []CouponQuote{
			stackQuote(1, SourceShop, 10, StackAny, 1000, 0),
			stackQuote(2, SourceShop, 10, StackAny, 1000, 5),
		}, []int64{2}, 1000},
		{"PriorityBreaksATieBetweenCombinations", big, []CouponQuote{
			stackQuote(1, SourcePlatform, 0, StackWithShop, 1000, 0),
			stackQuote(2, SourceShop, 10, StackWithPlatform, 500, 0),
			stackQuote(3, SourceShop, 10, StackWithShop, 700, 3),
			stackQuote(4, SourceShop, 20, StackWithShop, 800, 3),
		}, []int64{3, 4}, 1500}, // {1, 2} takes 1500 off too, priority 0 < 6; no other pair stacks
		{"AtTheTotalTheLargerCouponsOnATie", 500, []CouponQuote{
			stackQuote(1, SourceShop, 10, StackAny, 1000, 0),
			stackQuote(2, SourceShop, 10, StackAny, 2000, 0),
		}, []int64{2}, 500},
		{"PriorityNeverBeatsDiscount", big, []CouponQuote{
			stackQuote(1, SourceShop, 10, StackAny, 1001, 0),
			stackQuote(2, SourceShop, 10, StackAny, 1000, 1000),
		}, []int64{1}, 1001},
		{"LowerIDsOnAFullTie", big, []CouponQuote{
			stackQuote(7, SourceShop, 10, StackAny, 1000, 3),
			stackQuote(5, SourceShop, 10, StackAny, 1000, 3),
		}, []int64{5}, 1000},
		{"AppliedByPriorityThenSlot", big, []CouponQuote{
			stackQuote(1, SourcePlatform, 0, StackAny, 1000, 0),
			stackQuote(2, SourceShop, 20, StackAny, 500, 0),
			stackQuote(3, SourceShop, 10, StackAny, 500, 0),
			stackQuote(4, SourceShop, 30, StackAny, 500, 7),
		}, []int64{4, 1, 3, 2}, 2500},
		{"NoCouponSpentForNothing", 1000, []CouponQuote{
			stackQuote(1, SourcePlatform, 0, StackAny, 1000, 0),
			stackQuote(2, SourceShop, 10, StackAny, 300, 0),
		}, []int64{1}, 1000},
		{"AtTheTotalPriorityChoosesAmongSingles", 1000, []CouponQuote{
			stackQuote(1, SourcePlatform, 0, StackAny, 1000, 0),
			stackQuote(2, SourceShop, 10, StackAny, 1200, 1),
		}, []int64{2}, 1000},
		{"ZeroDiscountNeverChosen", big, []CouponQuote{
			stackQuote(1, SourcePlatform, 0, StackAny, 0, 1000),
			stackQuote(2, SourceShop, 10, StackAny, 300, 0),
		}, []int64{2}, 300},
		{"NothingUsable", big, []CouponQuote{{CouponID: 1, Source: SourceShop, ShopNo: 10, Reason: ReasonExpired}}, []int64{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			combo := bestCombination(slices.Clone(tc.cqs), tc.total)
			if ids := idsOf(combo); !slices.Equal(ids, tc.want) || sumOf(combo, tc.total) != tc.off {
				t.Errorf("best %v off %d, want %v off %d", ids, sumOf(combo, tc.total), tc.want, tc.off)
			}
		})
	}
}

// bruteBest is the best legal set of cqs by bestCombination's criteria,
// found by trying every subset.
func bruteBest(cqs []CouponQuote, total int64) []CouponQuote {
	var (
		best      []CouponQuote
		bestScore stackScore
	)
	for mask := 1; mask < 1<<len(cqs); mask++ {
		var set []CouponQuote
		for i, c := range cqs {
			if mask&(1<<i) != 0 {
				set = append(set, c)
			}
		}
		if !legal(set) {
			continue
		}
		s := scoreOf(set, total)
		if best == nil || s.compare(&bestScore, set, best) < 0 {
			best, bestScore = set, s
			bestScore.ids = nil
		}
	}
	return best
}

func legal(set []CouponQuote) bool {
	for i := range set {
		if !set[i].Usable || set[i].Discount <= 0 {
			return false
		}
		for j := range i {
			if !stacks(set[i], set[j]) {
				return false
			}
		}
	}
	return true
}

// randomQuotes returns n usable quotes over a platform slot and shops
// shops, with few distinct discounts and priorities so that ties are
// common.
func randomQuotes(r *rand.Rand, n, shops int) []CouponQuote {
	cqs := make([]CouponQuote, n)
	for i := range cqs {
		src, shop := SourceShop, int64(1+r.IntN(shops))
		if r.IntN(4) == 0 {
			src = SourcePlatform
		}
		cqs[i] = stackQuote(int64(100+i), src, shop, stackings[r.IntN(len(stackings))], int64(r.IntN(5))*500, int64(r.IntN(3)))
	}
	r.Shuffle(n, func(i, j int) { cqs[i], cqs[j] = cqs[j], cqs[i] })
	return cqs
}

// TestBestCombinationMatchesBruteForce: on random sets small enough to
// try every subset, the exhaustive walk finds exactly the best set, and
// the search beyond the bound finds a legal set taking exactly as much
// off.
func TestBestCombinationMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 26))
	for i := range 2000 {
		n := 1 + r.IntN(10)
		cqs := randomQuotes(r, n, 1+r.IntN(5))
		total := []int64{500, 1500, 3000, 1_000_000}[r.IntN(4)]
		want := bruteBest(cqs, total)
		got := bestCombination(slices.Clone(cqs), total)
		wantIDs, gotIDs := idsOf(want), idsOf(got)
		slices.Sort(wantIDs)
		slices.Sort(gotIDs)
		if !slices.Equal(gotIDs, wantIDs) {
			t.Fatalf("case %d, total %d, %+v:\nbest %v, brute force %v", i, total, cqs, gotIDs, wantIDs)
		}
		var cands []CouponQuote
		for _, c := range cqs {
			if c.Discount > 0 {
				cands = append(cands, c)
			}
		}
		if len(cands) == 0 {
			continue
		}
		shapes := searchShapes(keptBySlot(cands), total)
		if !legal(shapes) || sumOf(shapes, total) != sumOf(want, total) {
			t.Fatalf("case %d, total %d, %+v:\nbeyond the bound %v (legal %v) takes %d off, brute force %v %d",
				i, total, cqs, idsOf(shapes), legal(shapes), sumOf(shapes, total), wantIDs, sumOf(want, total))
		}
	}
}

// TestBestCombinationBeyondTheBound: an order over 40 shops, each with
// three coupons, has far more combinations than MaxStackCombinations: the
// search still takes exactly the largest discount, with a legal set, and
// the same set whatever order the coupons come in.
func TestBestCombinationBeyondTheBound(t *testing.T) {
	var cqs []CouponQuote
	var want int64
	id := int64(0)
	for shop := int64(1); shop <= 40; shop++ {
		for k := range int64(3) {
			id++
			// Per shop: an any of shop×10 + k, a withShop one fen more, an
			// exclusive worth 10 yuan.
			switch k {
			case 0:
				cqs = append(cqs, stackQuote(id, SourceShop, shop, StackAny, shop*10, k))
			case 1:
				cqs = append(cqs, stackQuote(id, SourceShop, shop, StackWithShop, shop*10+1, k))
			case 2:
				cqs = append(cqs, stackQuote(id, SourceShop, shop, StackExclusive, 1000, k))
			}
		}
		want += shop*10 + 1
	}
	cqs = append(cqs, stackQuote(1000, SourcePlatform, 0, StackAny, 30, 0))
	// The platform coupon adds 30 but takes the withShop ones away (each
	// 1 fen more): shops alone, withShop everywhere, take 40 × 10.5 +
	// 40 = 8240 off; the platform coupon with every any takes 8200 + 30.
	if want != 8240 {
		t.Fatalf("the test's sum is %d", want)
	}
	if c := combinations(keptBySlot(slices.Clone(cqs))); c <= MaxStackCombinations {
		t.Fatalf("%d combinations: within the bound", c)
	}
	first := bestCombination(slices.Clone(cqs), 1_000_000)
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		r.Shuffle(len(cqs), func(i, j int) { cqs[i], cqs[j] = cqs[j], cqs[i] })
		got := bestCombination(slices.Clone(cqs), 1_000_000)
		if !slices.Equal(idsOf(got), idsOf(first)) {
			t.Fatalf("in another order: %v, first %v", idsOf(got), idsOf(first))
		}
	}
	if !legal(first) || sumOf(first, 1_000_000) != want || len(first) != 40 {
		t.Fatalf("best %v (legal %v) takes %d off, want 40 withShop coupons taking %d", idsOf(first), legal(first), sumOf(first, 1_000_000), want)
	}
	// At a total the discounts pass, the discount is the total and no
	// coupon is spent that is not needed.
	capped := bestCombination(slices.Clone(cqs), 5000)
	if !legal(capped) || sumOf(capped, 5000) != 5000 {
		t.Fatalf("at a total of 5000: %v (legal %v) takes %d off", idsOf(capped), legal(capped), sumOf(capped, 5000))
	}
	var sum int64
	for _, c := range capped {
		sum += c.Discount
	}
	for _, c := range capped {
		if sum-c.Discount >= 5000 {
			t.Fatalf("at a total of 5000: %v spends coupon %d for nothing", idsOf(capped), c.CouponID)
		}
	}
}
