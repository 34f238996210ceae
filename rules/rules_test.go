package rules_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/rules"
)

func newEngine(t *testing.T, opts rules.Options) *rules.Engine {
	t.Helper()
	e, err := rules.New(opts)
	if err != nil {
		t.Fatalf("New(%+v): %v", opts, err)
	}
	return e
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	e := newEngine(t, rules.Options{})
	tests := []struct {
		name string
		kind quan.RuleKind
		expr string
		want string // in the field's message
	}{
		{"UnknownVariable", quan.RuleEligibility, "levl >= 2", "1:1: undeclared reference to 'levl'"},
		{"UnknownField", quan.RuleEligibility, "user.level >= 2 && user.levl < 5", "1:24: undefined field 'levl'"},
		{"UnknownItemField", quan.RuleApplies, "order.items.exists(i, i.category == 'books')", "1:24: undefined field 'category'"},
		{"WrongType", quan.RuleEligibility, `user.level >= "2"`, "1:12: found no matching overload for '_>=_' applied to '(int, string)'"},
		{"NotBool", quan.RuleEligibility, "user.level + 1", "the rule gives int: it must give true or false (bool)"},
		{"NotBoolString", quan.RuleSegment, "user.region", "the rule gives string"},
		{"SyntaxError", quan.RuleEligibility, "user.level >=\n  && true", "2:3: Syntax error"},
		{"OrderInEligibility", quan.RuleEligibility, "order.total > 100", "1:1: undeclared reference to 'order' (the eligibility rule sees only user and now)"},
		{"OrderInSegment", quan.RuleSegment, "user.level > 1 || order.total > 100", "1:19: undeclared reference to 'order' (the segment rule"},
		{"NestedMacrosOverCost", quan.RuleEligibility, "user.tags.exists(a, user.tags.exists(b, a != b && a.startsWith(b)))", "the limit is 5000: a macro"},
		{"NestedOrderMacrosOverCost", quan.RuleApplies, "order.items.all(i, order.categories.exists(c, c == i.categoryId))", "the limit is 5000"},
		{"Unbounded", quan.RuleEligibility, "user == user", "no bound"},
		{"TooLong", quan.RuleEligibility, "user.level > 1" + strings.Repeat(" || user.level > 1", 300), "bytes long: at most 4096"},
		{"Empty", quan.RuleEligibility, "  ", "the rule is empty"},
		{"BadRegex", quan.RuleEligibility, `user.region.matches("[")`, "1:21: invalid matches argument"},
		{"NoFactsMadeUp", quan.RuleEligibility, `quan.User{level: 3}.level > 2`, "1:10: quan.User cannot be created in a rule"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := e.Compile(tt.kind, tt.expr)
			if err == nil {
				t.Fatalf("Compile(%q) = %v, want an error", tt.expr, r.Source())
			}
			if code := quan.ErrorCode(err); code != quan.EINVALID {
				t.Fatalf("code %q (%v), want %q", code, err, quan.EINVALID)
			}
			fields := quan.ErrorFields(err)
			if len(fields) != 1 || fields[0].Field != string(tt.kind) {
				t.Fatalf("fields %+v, want one for %q", fields, tt.kind)
			}
			if !strings.Contains(fields[0].Message, tt.want) {
				t.Errorf("message %q\nwant it to contain %q", fields[0].Message, tt.want)
			}
		})
	}
	t.Run("UnknownKind", func(t *testing.T) {
		_, err := e.Compile("claims", "true")
		if f := quan.ErrorFields(err); quan.ErrorCode(err) != quan.EINVALID || len(f) != 1 || f[0].Field != "kind" {
			t.Fatalf("Compile with kind claims: %v, want EINVALID on kind", err)
		}
	})
	t.Run("MaxCostConfigurable", func(t *testing.T) {
		small := newEngine(t, rules.Options{MaxCost: 10})
		_, err := small.Compile(quan.RuleEligibility, `"vip" in user.tags`)
		if f := quan.ErrorFields(err); len(f) != 1 || !strings.Contains(f[0].Message, "the limit is 10:") {
			t.Fatalf("over a MaxCost of 10: %v", err)
		}
		if _, err := small.Compile(quan.RuleEligibility, `user.level >= 2`); err != nil {
			t.Fatalf("a cheap rule under a MaxCost of 10: %v", err)
		}
	})
	t.Run("MaxLengthConfigurable", func(t *testing.T) {
		short := newEngine(t, rules.Options{MaxLength: 10})
		_, err := short.Compile(quan.RuleEligibility, `user.level >= 2`)
		if f := quan.ErrorFields(err); len(f) != 1 || f[0].Message != "the rule is 15 bytes long: at most 10" {
			t.Fatalf("over a MaxLength of 10: %v", err)
		}
	})
}

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	_, err := rules.New(rules.Options{MaxCost: 500, EvalCostLimit: 100})
	if quan.ErrorCode(err) != quan.EINVALID || !strings.Contains(err.Error(), "eval cost limit 100 is below the max cost 500") {
		t.Fatalf("New with EvalCostLimit < MaxCost: %v", err)
	}
	if _, err := rules.New(rules.Options{MaxLength: -1}); quan.ErrorCode(err) != quan.EINVALID {
		t.Fatalf("New with MaxLength -1: %v", err)
	}
}

var (
	now    = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC) // 20:00 in Shanghai
	member = &quan.UserFacts{
		UserID: 7, Level: 3, Tags: []string{"student", "vip"}, Region: "sh", Orders: 4,
		RegisteredAt: now.Add(-10 * 24 * time.Hour), Attrs: map[string]string{"city": "shanghai"},
	}
	newcomer = &quan.UserFacts{UserID: 8, Level: 0}
	order    = &quan.OrderFacts{
		Shop: 9, Channel: "app", Total: 12800,
		Items: []quan.OrderItemFacts{
			{GoodsID: "g1", CategoryID: "food", Price: 1800, Qty: 1},
			{GoodsID: "g2", CategoryID: "books", Price: 5500, Qty: 2},
		},
		Categories: []string{"food", "books"},
	}
	smallOrder = &quan.OrderFacts{
		Shop: 9, Channel: "web", Total: 3000, At: now.Add(-10 * time.Hour), // 10:00 in Shanghai
		Items:      []quan.OrderItemFacts{{GoodsID: "g1", CategoryID: "food", Price: 3000, Qty: 1}},
		Categories: []string{"food"},
	}
)

func TestEval(t *testing.T) {
	t.Parallel()
	e := newEngine(t, rules.Options{})
	tests := []struct {
		kind  quan.RuleKind
		expr  string
		user  *quan.UserFacts
		order *quan.OrderFacts
		want  bool
	}{
		{quan.RuleEligibility, `user.level >= 2 && "vip" in user.tags`, member, nil, true},
		{quan.RuleEligibility, `user.level >= 2 && "vip" in user.tags`, newcomer, nil, false},
		{quan.RuleEligibility, `user.level >= 2 && "vip" in user.tags`, &quan.UserFacts{Level: 2, Tags: []string{"student"}}, nil, false},
		{quan.RuleEligibility, `user.orders == 0`, newcomer, nil, true},
		{quan.RuleEligibility, `user.orders == 0`, member, nil, false},
		{quan.RuleEligibility, `user.orders == 0`, nil, nil, true}, // nothing known: a first order
		{quan.RuleSegment, `now - user.registeredAt < duration("720h")`, member, nil, true},
		{quan.RuleSegment, `now - user.registeredAt < duration("720h")`, newcomer, nil, false}, // unknown: the epoch
		{quan.RuleSegment, `user.region in ["sh", "bj"] && user.userId == 7`, member, nil, true},
		{quan.RuleEligibility, `"city" in user.attrs && user.attrs["city"] == "shanghai"`, member, nil, true},
		{quan.RuleEligibility, `"city" in user.attrs && user.attrs["city"] == "shanghai"`, newcomer, nil, false},
		{quan.RuleEligibility, `user.attrs.?city.orValue("") == "shanghai"`, newcomer, nil, false},
		{quan.RuleEligibility, `has(user.attrs.city) && user.tags.exists(t, t.upperAscii() == "VIP")`, member, nil, true},
		{quan.RuleEligibility, `user.tags.all(t, t.size() <= 8) && size(user.tags) == 2`, member, nil, true},
		{quan.RuleApplies, `order.total >= 10000 && order.channel == "app"`, member, order, true},
		{quan.RuleApplies, `order.total >= 10000 && order.channel == "app"`, member, smallOrder, false},
		{quan.RuleApplies, `order.items.exists(i, i.categoryId == "books")`, member, order, true},
		{quan.RuleApplies, `order.items.exists(i, i.categoryId == "books")`, member, smallOrder, false},
		{quan.RuleApplies, `order.hour >= 18`, member, order, true},       // no At: now, 20:00 in Shanghai
		{quan.RuleApplies, `order.hour >= 18`, member, smallOrder, false}, // 10:00 in Shanghai
		{quan.RuleApplies, `order.at == now`, member, order, true},
		{quan.RuleApplies, `"books" in order.categories && order.shop == 9`, member, order, true},
		{quan.RuleApplies, `order.items.filter(i, i.price * i.qty >= 10000).size() == 1`, member, order, true},
		{quan.RuleApplies, `order.items[1].goodsId == "g2" && order.items.map(i, i.qty).exists(q, q > 1)`, member, order, true},
		{quan.RuleApplies, `order.items.exists_one(i, i.categoryId == "food") && user.level > 2`, member, order, true},
		{quan.RuleApplies, `order.items.exists_one(i, i.categoryId == "food") && user.level > 2`, newcomer, order, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind)+"/"+tt.expr, func(t *testing.T) {
			r, err := e.Compile(tt.kind, tt.expr)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			if r.Source() != tt.expr {
				t.Errorf("Source() = %q, want %q", r.Source(), tt.expr)
			}
			got, err := r.Eval(tt.user, tt.order, now)
			if err != nil {
				t.Fatalf("Eval: %v", err)
			}
			if got != tt.want {
				t.Errorf("Eval = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestEvalLocation(t *testing.T) {
	t.Parallel()
	e := newEngine(t, rules.Options{Location: time.UTC})
	r, err := e.Compile(quan.RuleApplies, "order.hour == 12")
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := r.Eval(member, order, now); err != nil || !ok {
		t.Fatalf("order.hour in UTC at 12:00 UTC: %v, %v; want true", ok, err)
	}
}

func TestEvalErrors(t *testing.T) {
	t.Parallel()
	e := newEngine(t, rules.Options{})
	t.Run("MissingAttrsKey", func(t *testing.T) {
		r, err := e.Compile(quan.RuleEligibility, `user.attrs["tier"] == "gold"`)
		if err != nil {
			t.Fatal(err)
		}
		ok, err := r.Eval(member, nil, now)
		f := quan.ErrorFields(err)
		if ok || quan.ErrorCode(err) != quan.EINVALID || len(f) != 1 || f[0].Field != "eligibility" ||
			!strings.Contains(f[0].Message, "no such key: tier") {
			t.Fatalf("Eval = %v, %v; want an EINVALID error naming the key", ok, err)
		}
	})
	t.Run("AppliesWithoutOrder", func(t *testing.T) {
		r, err := e.Compile(quan.RuleApplies, `order.total > 0`)
		if err != nil {
			t.Fatal(err)
		}
		ok, err := r.Eval(member, nil, now)
		if ok || quan.ErrorCode(err) != quan.EINVALID || !strings.Contains(err.Error(), "needs the order") {
			t.Fatalf("Eval without an order = %v, %v", ok, err)
		}
	})
	t.Run("Overflow", func(t *testing.T) {
		r, err := e.Compile(quan.RuleApplies, `order.total * 9223372036854775807 > 0`)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := r.Eval(member, order, now); ok || quan.ErrorCode(err) != quan.EINVALID {
			t.Fatalf("Eval = %v, %v; want an overflow error", ok, err)
		}
	})
	t.Run("OrderIgnoredByEligibility", func(t *testing.T) {
		r, err := e.Compile(quan.RuleEligibility, `user.level >= 3`)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := r.Eval(member, order, now); err != nil || !ok {
			t.Fatalf("Eval = %v, %v; want true", ok, err)
		}
	})
}

// TestEvalCostLimit: facts beyond the sizes a rule is priced for run under
// the runtime limit, which stops them rather than running away.
func TestEvalCostLimit(t *testing.T) {
	t.Parallel()
	e := newEngine(t, rules.Options{})
	r, err := e.Compile(quan.RuleEligibility, `user.tags.exists(t, t.startsWith("zz"))`)
	if err != nil {
		t.Fatal(err)
	}
	tags := func(n int) []string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprintf("tag%d", i)
		}
		return s
	}
	t.Run("OverPricedSizesUnderLimit", func(t *testing.T) {
		u := &quan.UserFacts{Tags: append(tags(rules.SizeTags+10), "zzz")}
		if ok, err := r.Eval(u, nil, now); err != nil || !ok {
			t.Fatalf("Eval = %v, %v; want true", ok, err)
		}
	})
	t.Run("LongStringUnderLimit", func(t *testing.T) {
		u := &quan.UserFacts{Tags: []string{strings.Repeat("a", rules.SizeString+1), "zzz"}}
		if ok, err := r.Eval(u, nil, now); err != nil || !ok {
			t.Fatalf("Eval = %v, %v; want true", ok, err)
		}
	})
	t.Run("OverLimit", func(t *testing.T) {
		u := &quan.UserFacts{Tags: tags(100_000)}
		ok, err := r.Eval(u, nil, now)
		if ok || quan.ErrorCode(err) != quan.EINVALID || !strings.Contains(err.Error(), "cost limit exceeded") {
			t.Fatalf("Eval over 100000 tags = %v, %v; want the cost limit", ok, err)
		}
	})
}

// TestConcurrentEval evaluates one compiled rule from many goroutines on
// different facts (run with -race).
func TestConcurrentEval(t *testing.T) {
	t.Parallel()
	e := newEngine(t, rules.Options{})
	r, err := e.Compile(quan.RuleApplies,
		`user.level >= 2 && "vip" in user.tags && order.items.exists(i, i.categoryId == "books") && order.hour >= 18`)
	if err != nil {
		t.Fatal(err)
	}
	const goroutines, evals = 8, 500
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			u := &quan.UserFacts{Level: int64(g % 4), Tags: []string{"vip"}}
			want := g%4 >= 2
			// Facts over the priced sizes take the guarded program.
			if g%2 == 1 {
				u.Tags = append(make([]string, rules.SizeTags+1), "vip")
			}
			for range evals {
				ok, err := r.Eval(u, order, now)
				if err != nil || ok != want {
					errs <- fmt.Errorf("goroutine %d: Eval = %v, %v; want %v", g, ok, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
