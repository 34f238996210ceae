package quan

import (
	"encoding/json"
	"testing"
	"time"
)

func TestRuleKindValid(t *testing.T) {
	t.Parallel()
	for _, k := range []RuleKind{RuleEligibility, RuleApplies, RuleSegment} {
		if !k.Valid() {
			t.Errorf("%q.Valid() = false", k)
		}
	}
	for _, k := range []RuleKind{"", "Eligibility", "claim"} {
		if k.Valid() {
			t.Errorf("%q.Valid() = true", k)
		}
	}
}

// TestRuleFactsJSON pins the field names the attribute API and the rule
// evaluation endpoint will speak, and that an unknown registration time is
// left out rather than sent as year 1.
func TestRuleFactsJSON(t *testing.T) {
	t.Parallel()
	u := UserFacts{UserID: 7, Level: 2, Tags: []string{"vip"}, Region: "sh", Orders: 0}
	b, err := json.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"userId":7,"level":2,"tags":["vip"],"region":"sh","orders":0}`; string(b) != want {
		t.Errorf("user facts JSON\n got %s\nwant %s", b, want)
	}
	o := OrderFacts{Shop: 1, Channel: "app", Total: 100,
		Items: []OrderItemFacts{{GoodsID: "g", CategoryID: "c", Price: 100, Qty: 1}},
		At:    time.Date(2026, 5, 1, 20, 0, 0, 0, time.UTC)}
	b, err = json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"shop":1,"channel":"app","total":100,"items":[{"goodsId":"g","categoryId":"c","price":100,"qty":1}],` +
		`"categories":null,"at":"2026-05-01T20:00:00Z"}`
	if string(b) != want {
		t.Errorf("order facts JSON\n got %s\nwant %s", b, want)
	}
}
