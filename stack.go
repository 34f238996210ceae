package quan

import (
	"cmp"
	"fmt"
	"slices"
)

// stackSlot is the slot rule, which quoting and locking both apply: a
// combination holds at most one coupon of each slot, and the slot of a
// platform coupon is 0, that of a shop coupon its shop. So one platform
// coupon stacks with at most one coupon of each shop, and two coupons of
// one template, which share their slot, never stack.
func stackSlot(cq CouponQuote) int64 {
	if cq.Source == SourceShop {
		return cq.ShopNo
	}
	return 0
}

// slotName names a slot of stackSlot for messages.
func slotName(slot int64) string {
	if slot == 0 {
		return "platform"
	}
	return fmt.Sprintf("shop %d", slot)
}

// stacks reports whether coupons a and b may be used in one order: they
// are in different slots, and the stacking of each allows the source of
// the other.
func stacks(a, b CouponQuote) bool {
	return stackSlot(a) != stackSlot(b) && a.Stacking.allows(b.Source) && b.Stacking.allows(a.Source)
}

// StackConflict says why coupons a and b may not be used in one order, or
// returns "" if they may (stacks).
func StackConflict(a, b CouponQuote) string {
	if s := stackSlot(a); s == stackSlot(b) {
		return fmt.Sprintf("coupons %d and %d do not stack: at most one %s coupon", a.CouponID, b.CouponID, slotName(s))
	}
	for _, p := range [][2]CouponQuote{{a, b}, {b, a}} {
		x, y := p[0], p[1]
		if x.Stacking.allows(y.Source) {
			continue
		}
		switch x.Stacking {
		case StackWithShop:
			return fmt.Sprintf("coupons %d and %d do not stack: coupon %d stacks only with shop-funded coupons, and coupon %d is platform-funded",
				a.CouponID, b.CouponID, x.CouponID, y.CouponID)
		case StackWithPlatform:
			return fmt.Sprintf("coupons %d and %d do not stack: coupon %d stacks only with platform-funded coupons, and coupon %d is shop-funded",
				a.CouponID, b.CouponID, x.CouponID, y.CouponID)
		default:
			return fmt.Sprintf("coupons %d and %d do not stack: coupon %d is exclusive, used with no other coupon",
				a.CouponID, b.CouponID, x.CouponID)
		}
	}
	return ""
}

// MaxStackCombinations bounds the exhaustive search of bestCombination:
// the number of combinations (the product over slots of one plus the
// coupons kept in the slot) it walks at most.
const MaxStackCombinations = 1 << 14

// bestCombination returns the best legal combination of the usable
// coupons of cqs for an order of total fen, in the order their discounts
// apply (applyOrder), or an empty slice.
//
// Legal. A set of coupons may be used together iff every two of them
// stack:
//   - the slot rule (stackSlot) holds as before: at most one platform
//     coupon, and at most one coupon of each shop;
//   - each coupon's Stacking allows the source of every other: exclusive
//     allows none, withShop only shop-funded ones, withPlatform only
//     platform-funded ones, any (and "") all.
//
// So a coupon alone is always legal, and, of two or more: shop coupons
// alone stack when each is withShop or any; a platform coupon that is
// withShop or any takes one shop coupon that is withPlatform or any, or
// several that are all any. Every subset of a legal set is legal. With
// every template any (the default), this is the rule quan always had.
//
// Best. Only coupons that take something off are considered; of the legal
// sets the best one has, in this order:
//  1. the largest discount, min(sum of its coupons' discounts, total);
//  2. the fewest coupons (none is spent for nothing);
//  3. the largest sum of its coupons' Priority;
//  4. the largest sum of its coupons' own discounts, before the total
//     caps them (when it does, the larger coupons are used, as before
//     priorities; an operator who wants a coupon kept for later gives
//     the other a higher priority);
//  5. the smallest list of coupon ids, sorted, compared element-wise.
//
// That is a total order, so the answer is one and deterministic.
//
// Cost. In one slot, of two coupons of the same Stacking, one with no less
// discount and no less priority (and the smaller id on a tie) does
// everything the other does as well or better by 1–5 (criterion 4 is
// what makes this so when the total caps both), so each slot keeps only
// the coupons no other of its policy beats so (at most one per distinct
// priority): O(n log n) for n coupons. If the product over slots of
// (1 + coupons kept) is at most MaxStackCombinations, every combination is
// walked (pruned as soon as a pair does not stack), each checked against
// the coupons chosen before it, fewer than log2(MaxStackCombinations) =
// 14, and the result is the best by 1–5 exactly. Beyond the bound (an order over many shops, each
// with several coupons), the search takes the largest-sum set of each
// shape of legal set (alone; shops only; platform with one shop; platform
// with shops all any, taking in each slot the coupon of largest discount,
// then priority, then smallest id), drops the coupons a set does not need
// to reach the total, and keeps the best by 1–5: O(n + s log s) for s
// slots. Every legal set has one of those shapes and the largest sum of a
// shape is no less than any set's of it, so the discount is still the
// largest there is, exactly, and the set is legal; only the ties of 2–5
// may then be settled otherwise than the exhaustive walk would.
func bestCombination(cqs []CouponQuote, total int64) []CouponQuote {
	var cands []CouponQuote
	for _, cq := range cqs {
		if cq.Usable && cq.Discount > 0 {
			cands = append(cands, cq)
		}
	}
	if len(cands) == 0 {
		return []CouponQuote{}
	}
	slots := keptBySlot(cands)
	var combo []CouponQuote
	if combinations(slots) <= MaxStackCombinations {
		combo = searchAll(slots, total)
	} else {
		combo = searchShapes(slots, total)
	}
	SortInApplyOrder(combo)
	return combo
}

// SortInApplyOrder sorts a combination in the order its discounts apply: the
// higher Priority first, then the platform coupon, then shops by number.
// When the discounts together exceed the order's total, the coupons
// first in this order keep their whole discount (the share Lock records)
// and the last ones give up what is over.
func SortInApplyOrder(combo []CouponQuote) {
	slices.SortFunc(combo, func(a, b CouponQuote) int {
		return cmp.Or(cmp.Compare(b.Priority, a.Priority), cmp.Compare(stackSlot(a), stackSlot(b)), cmp.Compare(a.CouponID, b.CouponID))
	})
}

// byValue orders coupons by discount, then priority, both descending,
// then id ascending: the first of a slot and policy is the one to take.
func byValue(a, b CouponQuote) int {
	return cmp.Or(cmp.Compare(b.Discount, a.Discount), cmp.Compare(b.Priority, a.Priority), cmp.Compare(a.CouponID, b.CouponID))
}

// keptBySlot groups cands by slot, platform first then shops by number,
// and keeps of each slot and policy the coupons no other beats in both
// discount and priority (bestCombination), each slot's in byValue order.
func keptBySlot(cands []CouponQuote) [][]CouponQuote {
	slices.SortFunc(cands, func(a, b CouponQuote) int {
		return cmp.Or(cmp.Compare(stackSlot(a), stackSlot(b)), byValue(a, b))
	})
	var slots [][]CouponQuote
	for i := 0; i < len(cands); {
		j := i
		for j < len(cands) && stackSlot(cands[j]) == stackSlot(cands[i]) {
			j++
		}
		top := map[Stacking]int64{} // the highest priority kept of each policy
		var kept []CouponQuote
		for _, c := range cands[i:j] {
			// In byValue order, every coupon before c has no less
			// discount; c is beaten unless its priority is higher.
			if p, ok := top[c.Stacking]; ok && c.Priority <= p {
				continue
			}
			top[c.Stacking] = c.Priority
			kept = append(kept, c)
		}
		slots = append(slots, kept)
		i = j
	}
	return slots
}

// combinations returns the number of combinations of one or no coupon of
// each slot, or MaxStackCombinations+1 if it is more.
func combinations(slots [][]CouponQuote) int {
	n := 1
	for _, s := range slots {
		n *= 1 + len(s)
		if n > MaxStackCombinations {
			return MaxStackCombinations + 1
		}
	}
	return n
}

// stackScore is how bestCombination ranks a set (criteria 1–5).
type stackScore struct {
	discount, n, priority, nominal int64
	ids                            []int64 // sorted; filled only to settle a tie
}

func scoreOf(combo []CouponQuote, total int64) stackScore {
	var s stackScore
	for _, c := range combo {
		s.nominal += c.Discount
		s.priority += c.Priority
	}
	s.discount, s.n = min(s.nominal, total), int64(len(combo))
	return s
}

// compare is negative if a set scored s is better than one scored o,
// positive if worse, and compares the sets' ids (filling them from the
// sets) only when 1–4 tie.
func (s *stackScore) compare(o *stackScore, sc, oc []CouponQuote) int {
	if c := cmp.Or(cmp.Compare(o.discount, s.discount), cmp.Compare(s.n, o.n), cmp.Compare(o.priority, s.priority),
		cmp.Compare(o.nominal, s.nominal)); c != 0 {
		return c
	}
	for _, p := range []struct {
		score *stackScore
		combo []CouponQuote
	}{{s, sc}, {o, oc}} {
		if p.score.ids == nil {
			for _, c := range p.combo {
				p.score.ids = append(p.score.ids, c.CouponID)
			}
			slices.Sort(p.score.ids)
		}
	}
	return slices.Compare(s.ids, o.ids)
}

// searchAll walks every legal combination of one or no coupon of each
// slot and returns the best.
func searchAll(slots [][]CouponQuote, total int64) []CouponQuote {
	var (
		chosen, best []CouponQuote
		bestScore    stackScore
	)
	var walk func(i int)
	walk = func(i int) {
		if i == len(slots) {
			if len(chosen) == 0 {
				return
			}
			s := scoreOf(chosen, total)
			if best == nil || s.compare(&bestScore, chosen, best) < 0 {
				best, bestScore = slices.Clone(chosen), s
				bestScore.ids = nil // filled again from best when needed
			}
			return
		}
		walk(i + 1)
	next:
		for _, c := range slots[i] {
			for _, o := range chosen {
				if !stacks(c, o) {
					continue next
				}
			}
			chosen = append(chosen, c)
			walk(i + 1)
			chosen = chosen[:len(chosen)-1]
		}
	}
	walk(0)
	return best
}

// searchShapes is bestCombination beyond its bound: the best of the
// largest-sum set of each shape of legal set, trimmed.
func searchShapes(slots [][]CouponQuote, total int64) []CouponQuote {
	// pick returns the first coupon of opts (byValue order) whose
	// policy is one of ok.
	pick := func(opts []CouponQuote, ok ...Stacking) (CouponQuote, bool) {
		for _, c := range opts {
			if slices.Contains(ok, c.Stacking) {
				return c, true
			}
		}
		return CouponQuote{}, false
	}
	var platform []CouponQuote
	shops := slots
	if stackSlot(slots[0][0]) == 0 {
		platform, shops = slots[0], slots[1:]
	}
	var shapes [][]CouponQuote
	for _, opts := range slots {
		for _, c := range opts {
			shapes = append(shapes, []CouponQuote{c}) // alone
		}
	}
	var shopsOnly []CouponQuote
	for _, opts := range shops {
		if c, ok := pick(opts, StackWithShop, StackAny); ok {
			shopsOnly = append(shopsOnly, c)
		}
	}
	shapes = append(shapes, shopsOnly)
	if p, ok := pick(platform, StackWithShop, StackAny); ok {
		withAny := []CouponQuote{p}
		for _, opts := range shops {
			if c, ok := pick(opts, StackWithPlatform, StackAny); ok {
				shapes = append(shapes, []CouponQuote{p, c}) // with one shop
			}
			if c, ok := pick(opts, StackAny); ok {
				withAny = append(withAny, c)
			}
		}
		shapes = append(shapes, withAny)
	}
	var (
		best      []CouponQuote
		bestScore stackScore
	)
	for _, combo := range shapes {
		if len(combo) == 0 {
			continue
		}
		combo = trim(combo, total)
		s := scoreOf(combo, total)
		if best == nil || s.compare(&bestScore, combo, best) < 0 {
			best, bestScore = combo, s
			bestScore.ids = nil
		}
	}
	return best
}

// trim drops from a legal set the coupons it does not need to take the
// whole total off, the lowest priority, then the smallest discount, then
// the highest id first. What is left is legal (a subset) and takes off as
// much. One pass suffices: the sum only falls as coupons go, so a coupon
// kept stays needed.
func trim(combo []CouponQuote, total int64) []CouponQuote {
	var sum int64
	for _, c := range combo {
		sum += c.Discount
	}
	if sum <= total {
		return combo
	}
	order := slices.Clone(combo)
	slices.SortFunc(order, func(a, b CouponQuote) int {
		return cmp.Or(cmp.Compare(a.Priority, b.Priority), cmp.Compare(a.Discount, b.Discount), cmp.Compare(b.CouponID, a.CouponID))
	})
	drop := map[int64]bool{}
	for _, c := range order {
		if sum-c.Discount >= total {
			sum -= c.Discount
			drop[c.CouponID] = true
		}
	}
	return slices.DeleteFunc(slices.Clone(combo), func(c CouponQuote) bool { return drop[c.CouponID] })
}
