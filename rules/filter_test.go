package rules_test

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/rules"
)

func TestFilter(t *testing.T) {
	t.Parallel()
	e := newEngine(t, rules.Options{})
	type where = []quan.FactsClause
	cond := func(f quan.FactFields, op quan.FactOp, n int64) quan.FactCond {
		return quan.FactCond{Field: f, Op: op, Int: n}
	}
	tag := func(op quan.FactOp, s string) quan.FactCond {
		return quan.FactCond{Field: quan.FactTags, Op: op, Str: s}
	}
	region := func(s string) quan.FactCond { return quan.FactCond{Field: quan.FactRegion, Op: quan.FactEq, Str: s} }
	tests := []struct {
		name  string
		expr  string
		read  quan.FactFields
		where where
	}{
		{"LevelGe", "user.level >= 2", quan.FactLevel, where{{cond(quan.FactLevel, quan.FactGe, 2)}}},
		{"LevelAndTag", `user.level >= 2 && "vip" in user.tags`, quan.FactLevel | quan.FactTags,
			where{{cond(quan.FactLevel, quan.FactGe, 2)}, {tag(quan.FactHasTag, "vip")}}},
		{"LiteralFirst", "2 < user.level", quan.FactLevel, where{{cond(quan.FactLevel, quan.FactGt, 2)}}},
		{"FirstOrder", "user.orders == 0", quan.FactOrders, where{{cond(quan.FactOrders, quan.FactEq, 0)}}},
		{"UserID", "user.userId != 7", 0, where{{cond(quan.FactUserID, quan.FactNe, 7)}}},
		{"Negative", "user.level > -1", quan.FactLevel, where{{cond(quan.FactLevel, quan.FactGt, -1)}}},
		{"Or", `user.level == 1 || "new" in user.tags`, quan.FactLevel | quan.FactTags,
			where{{cond(quan.FactLevel, quan.FactEq, 1), tag(quan.FactHasTag, "new")}}},
		{"InList", "user.level in [1, 3]", quan.FactLevel, where{{cond(quan.FactLevel, quan.FactEq, 1), cond(quan.FactLevel, quan.FactEq, 3)}}},
		{"EmptyList", "user.level in []", quan.FactLevel, where{{}}},
		{"RegionIn", `user.region in ["上海", "sh"]`, quan.FactRegion, where{{region("上海"), region("sh")}}},
		{"RegionEq", `"sh" == user.region`, quan.FactRegion, where{{region("sh")}}},
		{"NotTag", `!("vip" in user.tags)`, quan.FactTags, where{{tag(quan.FactLacksTag, "vip")}}},
		{"NotLess", `!(user.orders < 3)`, quan.FactOrders, where{{cond(quan.FactOrders, quan.FactGe, 3)}}},
		{"NestedAnd", `(user.level > 1 && user.orders > 0) && user.userId < 100`, quan.FactLevel | quan.FactOrders,
			where{{cond(quan.FactLevel, quan.FactGt, 1)}, {cond(quan.FactOrders, quan.FactGt, 0)}, {cond(quan.FactUserID, quan.FactLt, 100)}}},
		{"OtherConjunctsRead", `user.level >= 2 && user.attrs.?city.orValue("") == "hz" && now - user.registeredAt < duration("720h")`,
			quan.FactLevel | quan.FactAttrs | quan.FactRegisteredAt, where{{cond(quan.FactLevel, quan.FactGe, 2)}}},
		{"HasIsARead", `has(user.region) && user.level > 0`, quan.FactRegion | quan.FactLevel, where{{cond(quan.FactLevel, quan.FactGt, 0)}}},
		{"MacroOverTags", `user.tags.exists(t, t.startsWith("v"))`, quan.FactTags, nil},

		// Nothing the filter could lose a user by.
		{"NotRegion", `user.region != "sh"`, quan.FactRegion, nil},
		{"NegatedRegion", `!(user.region == "sh")`, quan.FactRegion, nil},
		{"RegionOrder", `user.region < "m"`, quan.FactRegion, nil},
		{"OrWithOther", `user.level == 1 || user.attrs["vip"] == "y"`, quan.FactLevel | quan.FactAttrs, nil},
		{"NotOfOr", `!(user.level == 1 || user.level == 2)`, quan.FactLevel, nil},
		{"NotOfIn", `!(user.level in [1, 2])`, quan.FactLevel, nil},
		{"InListOfFacts", `user.level in [1, user.orders]`, quan.FactLevel | quan.FactOrders, nil},
		{"FieldToField", "user.level > user.orders", quan.FactLevel | quan.FactOrders, nil},
		{"OtherInEmpty", `user.attrs["k"] in []`, quan.FactAttrs, nil},
		{"ShadowedUser", `[1, 2].exists(user, user > 1) && user.level > 1`, quan.AllFacts, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := e.Compile(quan.RuleSegment, tt.expr)
			if err != nil {
				t.Fatalf("Compile(%q): %v", tt.expr, err)
			}
			got := r.Filter()
			if got.Read != tt.read {
				t.Errorf("Read = %06b, want %06b", got.Read, tt.read)
			}
			if !reflect.DeepEqual(got.Where, tt.where) {
				t.Errorf("Where = %+v\nwant %+v", got.Where, tt.where)
			}
			if exact := exactRules[tt.name]; got.Exact != exact {
				t.Errorf("Exact = %v, want %v", got.Exact, exact)
			}
		})
	}
}

// exactRules are the rules of TestFilter that are nothing but their
// clauses.
var exactRules = map[string]bool{"LevelGe": true, "LevelAndTag": true, "LiteralFirst": true, "FirstOrder": true,
	"UserID": true, "Negative": true, "Or": true, "InList": true, "EmptyList": true, "RegionIn": true, "RegionEq": true,
	"NotTag": true, "NotLess": true, "NestedAnd": true}

// TestFilterSound evaluates rules on random facts by their CEL programs:
// a user the filter does not pass is one the rule decides false, the rule
// decides the same on the facts the filter reads alone as on all of them,
// an exact filter passes the users the rule is true of and no others, and
// Eval (which decides an exact rule by the filter) agrees with CEL.
func TestFilterSound(t *testing.T) {
	t.Parallel()
	e := newEngine(t, rules.Options{})
	exprs := []string{
		`user.level >= 2 && "vip" in user.tags`,
		`user.level >= 2 && user.attrs["city"] == "hz"`,
		`user.attrs["city"] == "hz" && user.orders == 0`,
		`user.orders == 0 || "new" in user.tags`,
		`!("vip" in user.tags) && user.level in [0, 3]`,
		`user.region in ["sh", "上海"] && user.level != 1`,
		`user.region == "sh " && user.userId % 2 == 0`,
		`user.level < 2 && now - user.registeredAt < duration("720h")`,
		`2 <= user.orders && !(user.level > 2) && user.attrs.?vip.orValue("n") == "y"`,
		`user.level in [] || user.orders > 2`,
		`user.userId > 50 && user.userId <= 150`,
		`size(user.tags) > 1 && user.level == 3`,
		`user.level >= 2 && ("vip" in user.tags || user.orders == 0)`,
		`user.region in ["sh", "上海"] && !("new" in user.tags) && user.userId != 3`,
		`!(user.level <= 1) || user.level in [0]`,
	}
	var exact int
	rng := rand.New(rand.NewPCG(20, 26))
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	tags := []string{"vip", "new", "VIP", "vip "}
	regions := []string{"", "sh", "sh ", "上海", "bj"}
	var passed, refused int
	for _, expr := range exprs {
		r, err := e.Compile(quan.RuleSegment, expr)
		if err != nil {
			t.Fatalf("Compile(%q): %v", expr, err)
		}
		filter := r.Filter()
		if filter.Where == nil {
			t.Fatalf("%q: no clause: the test tests nothing", expr)
		}
		if filter.Exact {
			exact++
		}
		for u := range 200 {
			f := quan.UserFacts{UserID: int64(u + 1), Level: rng.Int64N(4), Orders: rng.Int64N(4), Region: regions[rng.IntN(len(regions))],
				Tags: []string{}, RegisteredAt: now.Add(-time.Duration(rng.IntN(60*24)) * time.Hour)}
			for _, tg := range tags {
				if rng.IntN(2) == 0 {
					f.Tags = append(f.Tags, tg)
				}
			}
			if rng.IntN(3) > 0 {
				f.Attrs = map[string]string{"city": []string{"hz", "sh"}[rng.IntN(2)], "vip": []string{"y", "n"}[rng.IntN(2)]}
			}
			ok, err := rules.EvalCEL(r, &f, now)
			if filter.Exact && (ok != filter.Match(&f) || err != nil) {
				t.Errorf("%q on %+v: the exact filter gives %v, the rule %v, %v", expr, f, filter.Match(&f), ok, err)
			}
			if ok2, err2 := r.Eval(&f, nil, now); ok2 != ok || (err2 == nil) != (err == nil) {
				t.Errorf("%q on %+v: Eval gives %v, %v; CEL %v, %v", expr, f, ok2, err2, ok, err)
			}
			if !filter.Match(&f) {
				refused++
				if ok || err != nil {
					t.Errorf("%q on %+v: the filter refuses it, the rule gives %v, %v", expr, f, ok, err)
				}
				continue
			}
			passed++
			read := f.Only(filter.Read)
			ok2, err2 := rules.EvalCEL(r, &read, now)
			if ok != ok2 || (err == nil) != (err2 == nil) {
				t.Errorf("%q: on all facts %v, %v; on the facts it reads (%+v) %v, %v", expr, ok, err, read, ok2, err2)
			}
		}
	}
	if exact < 3 || passed == 0 || refused == 0 {
		t.Fatalf("%d exact filters, %d users passed the filters and %d were refused: the test tests too little", exact, passed, refused)
	}
}
