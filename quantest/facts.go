package quantest

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// TestFactsStore runs the conformance suite of quan.FactsStore.
// newStore returns a fresh, empty store for each subtest.
func TestFactsStore(t *testing.T, newStore func(t *testing.T) quan.FactsStore) {
	t.Helper()
	run := func(name string, test func(*testing.T, quan.FactsStore)) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, newStore(t))
		})
	}
	run("PutAndRead", testFactsRoundTrip)
	run("UpsertReplaces", testFactsReplace)
	run("BatchGet", testFactsBatchGet)
	run("ScanOrderAndCursor", testFactsScan)
	run("LargeBatch", testFactsLarge)
	run("ConcurrentPuts", testFactsConcurrent)
	run("ScanFilter", testFactsFilter)
	run("ScanReadsOnlyWhatIsAsked", testFactsFilterRead)
	run("Count", testFactsCount)
	run("Split", testFactsSplit)
}

// all is the filter of a scan that reads everything.
var all = quan.FactsFilter{Read: quan.AllFacts}

// fullFacts are facts with every field set, as a store returns them.
func fullFacts(user int64) quan.UserFacts {
	return quan.UserFacts{UserID: user, Level: 3, Tags: []string{"vip", "新客", "a|b"}, RegisteredAt: base.Add(-time.Hour),
		Region: "上海", Orders: 12, Attrs: map[string]string{"channel": "app", "城市": "杭州", "empty": ""}}
}

func putFacts(t *testing.T, s quan.FactsStore, facts ...quan.UserFacts) {
	t.Helper()
	if err := s.PutUserFacts(t.Context(), base, facts); err != nil {
		t.Fatalf("PutUserFacts(%d users): %v", len(facts), err)
	}
}

func readFacts(t *testing.T, s quan.FactsStore, users ...int64) map[int64]*quan.UserFacts {
	t.Helper()
	m, err := s.UserFacts(t.Context(), users)
	if err != nil {
		t.Fatalf("UserFacts: %v", err)
	}
	return m
}

func sameFacts(t *testing.T, what string, got *quan.UserFacts, want quan.UserFacts) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: none on file, want %+v", what, want)
		return
	}
	if want.Tags == nil {
		want.Tags = []string{}
	}
	if !got.RegisteredAt.Equal(want.RegisteredAt) {
		t.Errorf("%s: registered at %v, want %v", what, got.RegisteredAt, want.RegisteredAt)
	}
	g := *got
	g.RegisteredAt, want.RegisteredAt = time.Time{}, time.Time{}
	if !reflect.DeepEqual(g, want) {
		t.Errorf("%s:\n got %#v\nwant %#v", what, g, want)
	}
}

// testFactsRoundTrip: every fact comes back as put (text of any script,
// a tag holding a separator, an empty attribute); facts with nothing
// known come back with tags [] and no attrs; nothing put is nothing read.
func testFactsRoundTrip(t *testing.T, s quan.FactsStore) {
	putFacts(t, s, fullFacts(1), quan.UserFacts{UserID: 2, Tags: []string{}})
	m := readFacts(t, s, 1, 2, 3)
	sameFacts(t, "user 1", m[1], fullFacts(1))
	sameFacts(t, "user 2", m[2], quan.UserFacts{UserID: 2})
	if m[2] != nil && (m[2].Tags == nil || m[2].Attrs != nil || !m[2].RegisteredAt.IsZero()) {
		t.Errorf("user 2 with nothing known: %#v, want tags [], attrs nil, no registration", m[2])
	}
	if _, ok := m[3]; ok || len(m) != 2 {
		t.Errorf("UserFacts(1, 2, 3) = %d users (%v): user 3 has none on file", len(m), m[3])
	}
	if err := s.PutUserFacts(t.Context(), base, nil); err != nil {
		t.Errorf("PutUserFacts(nothing) = %v", err)
	}
	if m, err := s.UserFacts(t.Context(), nil); err != nil || len(m) != 0 {
		t.Errorf("UserFacts(nothing) = %v, %v", m, err)
	}
}

// testFactsReplace: a put replaces all of a user's facts, tags and attrs
// included, not merging them, and leaves other users alone.
func testFactsReplace(t *testing.T, s quan.FactsStore) {
	putFacts(t, s, fullFacts(1), fullFacts(2))
	next := quan.UserFacts{UserID: 1, Level: 1, Tags: []string{"new"}, Attrs: map[string]string{"other": "x"}}
	putFacts(t, s, next)
	m := readFacts(t, s, 1, 2)
	sameFacts(t, "user 1 replaced", m[1], next)
	sameFacts(t, "user 2 untouched", m[2], fullFacts(2))
	putFacts(t, s, quan.UserFacts{UserID: 1})
	sameFacts(t, "user 1 emptied", readFacts(t, s, 1)[1], quan.UserFacts{UserID: 1})
}

// testFactsBatchGet: a read of more users than one query names finds each
// user put, and only those.
func testFactsBatchGet(t *testing.T, s quan.FactsStore) {
	var facts []quan.UserFacts
	var users []int64
	for u := int64(1); u <= 2500; u++ {
		users = append(users, u)
		if u%3 != 0 {
			facts = append(facts, quan.UserFacts{UserID: u, Level: u % 5, Region: "r" + strconv.FormatInt(u, 10)})
		}
	}
	putFacts(t, s, facts...)
	m := readFacts(t, s, users...)
	if len(m) != len(facts) {
		t.Fatalf("%d users on file, want %d", len(m), len(facts))
	}
	for _, f := range facts {
		sameFacts(t, fmt.Sprintf("user %d", f.UserID), m[f.UserID], f)
	}
}

// testFactsScan: a scan goes in user id order whatever the order of the
// puts, starts after the cursor, stops at the limit, and paging with the
// last id returned reads every user once.
func testFactsScan(t *testing.T, s quan.FactsStore) {
	ids := []int64{5, 1, 900, 42, 7, 1 << 40, 3}
	for _, u := range ids {
		putFacts(t, s, quan.UserFacts{UserID: u, Orders: u})
	}
	want := []int64{1, 3, 5, 7, 42, 900, 1 << 40}
	var got []int64
	for after, pages := int64(0), 0; ; pages++ {
		page, err := s.ScanUserFacts(t.Context(), after, 3, all)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range page {
			if f.Orders != f.UserID || f.Tags == nil {
				t.Errorf("scanned %+v", f)
			}
			got = append(got, f.UserID)
		}
		if len(page) < 3 {
			break
		}
		after = page[len(page)-1].UserID
		if pages > len(want) {
			t.Fatal("the scan does not end")
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("scanned %v, want %v", got, want)
	}
	page, err := s.ScanUserFacts(t.Context(), 5, 2, all)
	if err != nil || len(page) != 2 || page[0].UserID != 7 || page[1].UserID != 42 {
		t.Errorf("ScanUserFacts(after 5, 2) = %v, %v; want 7, 42", page, err)
	}
	if page, err := s.ScanUserFacts(t.Context(), 1<<40, 10, all); err != nil || len(page) != 0 {
		t.Errorf("ScanUserFacts past the last = %v, %v", page, err)
	}
}

// testFactsLarge: 10,000 users in one put (several statements, one
// transaction), then a second put of them all replacing every one.
func testFactsLarge(t *testing.T, s quan.FactsStore) {
	const n = 10_000
	facts := make([]quan.UserFacts, n)
	for round := range 2 {
		for i := range facts {
			u := int64(i + 1)
			facts[i] = quan.UserFacts{UserID: u, Level: int64(round), Tags: []string{"t" + strconv.Itoa(i%50)},
				Attrs: map[string]string{"round": strconv.Itoa(round)}}
		}
		putFacts(t, s, facts...)
		var seen int
		for after := int64(0); ; {
			page, err := s.ScanUserFacts(t.Context(), after, 4000, all)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range page {
				if seen++; f.UserID != int64(seen) || f.Level != int64(round) || f.Attrs["round"] != strconv.Itoa(round) {
					t.Fatalf("round %d: user %d of the scan is %+v", round, seen, f)
				}
			}
			if len(page) < 4000 {
				break
			}
			after = page[len(page)-1].UserID
		}
		if seen != n {
			t.Fatalf("round %d: %d users scanned, want %d", round, seen, n)
		}
	}
}

// testFactsConcurrent: puts of overlapping users in different orders,
// released at once, all succeed, and each user ends with the whole facts
// of one of them, never a mix.
func testFactsConcurrent(t *testing.T, s quan.FactsStore) {
	const writers, users = 8, 200
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		facts := make([]quan.UserFacts, users)
		for i := range facts {
			tag := "w" + strconv.Itoa(w)
			facts[i] = quan.UserFacts{UserID: int64(i + 1), Level: int64(w), Region: tag, Tags: []string{tag}, Attrs: map[string]string{"w": tag}}
		}
		rand.New(rand.NewPCG(uint64(w), 1)).Shuffle(len(facts), func(i, j int) { facts[i], facts[j] = facts[j], facts[i] })
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range 3 {
				if err := s.PutUserFacts(t.Context(), base, facts); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent put: %v", err)
	}
	ids := make([]int64, users)
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	m := readFacts(t, s, ids...)
	for _, u := range ids {
		f := m[u]
		if f == nil {
			t.Errorf("user %d has no facts", u)
			continue
		}
		tag := "w" + strconv.FormatInt(f.Level, 10)
		if f.Region != tag || len(f.Tags) != 1 || f.Tags[0] != tag || f.Attrs["w"] != tag {
			t.Errorf("user %d has a mix of puts: %+v", u, f)
		}
	}
}

// filterTags are the tags of testFactsFilter's users: plain ones, one
// only in case, one with a trailing space, ones a JSON writer may escape,
// and ones whose JSON holds "vip" or "vip", although they are not vip.
var filterTags = []string{"vip", "VIP", "vip ", "新客", "a&b", `q"t`, `x"vip`, `vip","x`}

// filterFacts are 256 users whose facts vary in every field a filter tests.
func filterFacts() []quan.UserFacts {
	regions := []string{"", "sh", "sh ", "上海"}
	facts := make([]quan.UserFacts, 256)
	for i := range facts {
		f := quan.UserFacts{UserID: int64(i*3 + 1), Level: int64(i % 5), Orders: int64(i % 4), Region: regions[i%len(regions)],
			Tags: []string{}, Attrs: map[string]string{"i": strconv.Itoa(i)}, RegisteredAt: base.Add(time.Duration(-i) * time.Hour)}
		for j, tag := range filterTags {
			if i>>j&1 == 1 {
				f.Tags = append(f.Tags, tag)
			}
		}
		facts[i] = f
	}
	return facts
}

// testFactsFilter: a scan through a filter returns, in pages, every user
// the filter passes (quan.FactsFilter.Match), and where the store says it
// states the clauses exactly (ExactFilter), no other. It must say so of
// clauses on integer facts, the region and tags no JSON writer escapes
// (letters, Chinese): a scan that reads everyone would miss the point of
// a filter. Of other tags it may return more, never fewer.
func testFactsFilter(t *testing.T, s quan.FactsStore) {
	facts := filterFacts()
	putFacts(t, s, facts...)
	cond := func(f quan.FactFields, op quan.FactOp, n int64, str string) quan.FactCond {
		return quan.FactCond{Field: f, Op: op, Int: n, Str: str}
	}
	tests := []struct {
		name  string
		where []quan.FactsClause
		exact bool
	}{
		{"None", nil, true},
		{"LevelGe", []quan.FactsClause{{cond(quan.FactLevel, quan.FactGe, 2, "")}}, true},
		{"LevelEqOrEq", []quan.FactsClause{{cond(quan.FactLevel, quan.FactEq, 1, ""), cond(quan.FactLevel, quan.FactEq, 4, "")}}, true},
		{"OrdersNeAndLevelLt", []quan.FactsClause{{cond(quan.FactOrders, quan.FactNe, 0, "")}, {cond(quan.FactLevel, quan.FactLt, 3, "")}}, true},
		{"OrdersLeGt", []quan.FactsClause{{cond(quan.FactOrders, quan.FactLe, 2, "")}, {cond(quan.FactOrders, quan.FactGt, 0, "")}}, true},
		{"UserID", []quan.FactsClause{{cond(quan.FactUserID, quan.FactGt, 100, "")}, {cond(quan.FactUserID, quan.FactLe, 400, "")}}, true},
		{"HasTag", []quan.FactsClause{{cond(quan.FactTags, quan.FactHasTag, 0, "vip")}}, true},
		{"HasTagChinese", []quan.FactsClause{{cond(quan.FactTags, quan.FactHasTag, 0, "新客")}}, true},
		{"LacksTag", []quan.FactsClause{{cond(quan.FactTags, quan.FactLacksTag, 0, "vip")}}, true},
		{"HasTagAndLevel", []quan.FactsClause{{cond(quan.FactTags, quan.FactHasTag, 0, "vip")}, {cond(quan.FactLevel, quan.FactGe, 2, "")}}, true},
		{"HasTagOrLevel", []quan.FactsClause{{cond(quan.FactTags, quan.FactHasTag, 0, "VIP"), cond(quan.FactLevel, quan.FactEq, 0, "")}}, true},
		{"HasEscapedTag", []quan.FactsClause{{cond(quan.FactTags, quan.FactHasTag, 0, "a&b")}}, false},
		{"LacksEscapedTag", []quan.FactsClause{{cond(quan.FactTags, quan.FactLacksTag, 0, `q"t`)}}, false},
		{"Region", []quan.FactsClause{{cond(quan.FactRegion, quan.FactEq, 0, "sh")}}, true},
		{"RegionChinese", []quan.FactsClause{{cond(quan.FactRegion, quan.FactEq, 0, "上海")}, {cond(quan.FactLevel, quan.FactGe, 1, "")}}, true},
		{"Never", []quan.FactsClause{{}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			filter := quan.FactsFilter{Read: quan.AllFacts, Where: tt.where}
			exact := s.ExactFilter(tt.where)
			if tt.exact && !exact {
				t.Errorf("ExactFilter(%+v) = false: a store states such clauses exactly", tt.where)
			}
			got := map[int64]quan.UserFacts{}
			var last int64
			for after, pages := int64(0), 0; ; pages++ {
				page, err := s.ScanUserFacts(t.Context(), after, 7, filter)
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range page {
					if f.UserID <= last {
						t.Fatalf("user %d after user %d: not in ascending order", f.UserID, last)
					}
					last = f.UserID
					got[f.UserID] = f
				}
				if len(page) < 7 {
					break
				}
				after = page[len(page)-1].UserID
				if pages > len(facts) {
					t.Fatal("the scan does not end")
				}
			}
			var want int
			for _, f := range facts {
				g, ok := got[f.UserID]
				switch {
				case filter.Match(&f) && !ok:
					t.Errorf("user %d (%+v) passes the filter and was not returned", f.UserID, f)
				case filter.Match(&f):
					want++
					sameFacts(t, fmt.Sprintf("user %d", f.UserID), &g, f)
				case ok && exact:
					t.Errorf("user %d (%+v) does not pass the filter and was returned", f.UserID, f)
				}
			}
			if want == 0 && tt.name != "Never" {
				t.Fatalf("no user passes %s: the test's facts do not test it", tt.name)
			}
		})
	}
}

// testFactsFilterRead: a scan fills in the facts filter.Read names and
// leaves the others zero (tags empty, not nil).
func testFactsFilterRead(t *testing.T, s quan.FactsStore) {
	full := fullFacts(9)
	putFacts(t, s, full)
	for _, read := range []quan.FactFields{0, quan.FactLevel, quan.FactTags, quan.FactRegisteredAt, quan.FactRegion,
		quan.FactOrders, quan.FactAttrs, quan.FactLevel | quan.FactTags, quan.AllFacts &^ quan.FactTags} {
		page, err := s.ScanUserFacts(t.Context(), 0, 10, quan.FactsFilter{Read: read})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) != 1 {
			t.Fatalf("read %b: %d users, want 1", read, len(page))
		}
		want := full.Only(read)
		if want.Tags == nil {
			t.Fatalf("Only(%b) has tags nil", read)
		}
		sameFacts(t, fmt.Sprintf("read %b", read), &page[0], want)
		if page[0].Tags == nil {
			t.Errorf("read %b: tags nil", read)
		}
	}
}

// testFactsCount: CountUserFacts counts the users on file, once each.
func testFactsCount(t *testing.T, s quan.FactsStore) {
	if n, err := s.CountUserFacts(t.Context()); err != nil || n != 0 {
		t.Fatalf("CountUserFacts of none = %d, %v", n, err)
	}
	putFacts(t, s, fullFacts(1), fullFacts(2), fullFacts(3))
	putFacts(t, s, fullFacts(2))
	if n, err := s.CountUserFacts(t.Context()); err != nil || n != 3 {
		t.Fatalf("CountUserFacts = %d, %v; want 3", n, err)
	}
}

// testFactsSplit: the splits cut the users on file into ranges of about
// equal count, none empty, in ascending order.
func testFactsSplit(t *testing.T, s quan.FactsStore) {
	if got, err := s.SplitUserFacts(t.Context(), 4); err != nil || len(got) != 0 {
		t.Fatalf("SplitUserFacts of none = %v, %v", got, err)
	}
	putFacts(t, s, fullFacts(5))
	if got, err := s.SplitUserFacts(t.Context(), 4); err != nil || len(got) != 0 {
		t.Fatalf("SplitUserFacts of one user = %v, %v; want none", got, err)
	}
	var (
		ids   []int64
		facts []quan.UserFacts
	)
	for i := range int64(1000) {
		ids = append(ids, i*i+6) // unevenly spread, so cutting by value would not do
		facts = append(facts, quan.UserFacts{UserID: i*i + 6})
	}
	putFacts(t, s, facts...)
	ids = append([]int64{5}, ids...) // 1,001 users
	for _, parts := range []int{0, 1, 2, 3, 4, 7} {
		splits, err := s.SplitUserFacts(t.Context(), parts)
		if err != nil {
			t.Fatal(err)
		}
		if want := max(parts-1, 0); len(splits) != want {
			t.Fatalf("SplitUserFacts(%d) = %v: %d ids, want %d", parts, splits, len(splits), want)
		}
		var counts []int
		lo := int64(0)
		for i, hi := range append(splits, 1<<62) {
			if i > 0 && hi <= lo {
				t.Fatalf("SplitUserFacts(%d) = %v: not ascending", parts, splits)
			}
			n := 0
			for _, u := range ids {
				if u > lo && u <= hi {
					n++
				}
			}
			counts = append(counts, n)
			lo = hi
		}
		for _, n := range counts {
			if parts > 1 && (n < len(ids)/parts-1 || n > len(ids)/parts+1) {
				t.Errorf("SplitUserFacts(%d) = %v cuts %v users: not about %d each", parts, splits, counts, len(ids)/parts)
			}
		}
	}
	putFacts(t, s, quan.UserFacts{UserID: 8}, quan.UserFacts{UserID: 9})
	if got, err := s.SplitUserFacts(t.Context(), 2000); err != nil || len(got) != 1002 {
		t.Errorf("SplitUserFacts(2000) of 1,003 users = %d ids, %v; want 1,002 (no empty range)", len(got), err)
	}
}
