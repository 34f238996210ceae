package http_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/templates"
)

// ruleError returns the message of the problem's error on field, failing
// the test if there is none.
func ruleError(t *testing.T, r response, field string) string {
	t.Helper()
	for _, f := range r.Problem.Errors {
		if f.Field == field {
			return f.Message
		}
	}
	t.Fatalf("errors %+v do not name %q", r.Problem.Errors, field)
	return ""
}

// TestRulesTypeChecked: a rule that does not compile is refused when the
// template is saved (create, edit of a draft, a new version), 400 naming
// the field and the position; so is one over the cost limit.
func TestRulesTypeChecked(t *testing.T) {
	ts := newTestServer(t)
	tok := ts.merchant(t, 1001)

	t.Run("CreateNamesFieldAndPosition", func(t *testing.T) {
		body := validTemplate()
		body["name"] = ""
		body["eligibility"] = "user.level >= 2 && user.levl < 5"
		body["applies"] = `order.total >= "100"`
		r := ts.do(t, "POST", "/api/v1/templates", tok, body)
		r.want(t, http.StatusBadRequest, quan.EINVALID)
		if msg := ruleError(t, r, "eligibility"); !strings.HasPrefix(msg, "1:24: undefined field 'levl'") {
			t.Errorf("eligibility: %q, want the position 1:24 first", msg)
		}
		if msg := ruleError(t, r, "applies"); !strings.HasPrefix(msg, "1:13: found no matching overload") {
			t.Errorf("applies: %q, want the position 1:13 first", msg)
		}
		ruleError(t, r, "name") // every problem at once
	})
	t.Run("OrderInEligibility", func(t *testing.T) {
		body := validTemplate()
		body["eligibility"] = "order.total > 100"
		r := ts.do(t, "POST", "/api/v1/templates", tok, body)
		r.want(t, http.StatusBadRequest, quan.EINVALID)
		if msg := ruleError(t, r, "eligibility"); !strings.Contains(msg, "sees only user and now") {
			t.Errorf("eligibility: %q", msg)
		}
	})
	t.Run("OverTheCostLimit", func(t *testing.T) {
		body := validTemplate()
		body["eligibility"] = "user.tags.exists(a, user.tags.exists(b, a != b && a.startsWith(b)))"
		r := ts.do(t, "POST", "/api/v1/templates", tok, body)
		r.want(t, http.StatusBadRequest, quan.EINVALID)
		if msg := ruleError(t, r, "eligibility"); !strings.Contains(msg, "the limit is 5000") {
			t.Errorf("eligibility: %q, want the cost limit named", msg)
		}
	})
	t.Run("SavedAndEditedOnADraft", func(t *testing.T) {
		body := validTemplate()
		body["eligibility"] = `  user.level >= 2 && "vip" in user.tags  `
		tpl := ts.create(t, tok, body)
		if tpl.Eligibility != `user.level >= 2 && "vip" in user.tags` || tpl.Applies != "" {
			t.Fatalf("rules saved as %q, %q", tpl.Eligibility, tpl.Applies)
		}
		r := ts.do(t, "PATCH", loc(tpl.ID), tok, map[string]any{"applies": "order.items.exists(i, i.category == 'books')"})
		r.want(t, http.StatusBadRequest, quan.EINVALID)
		if msg := ruleError(t, r, "applies"); !strings.HasPrefix(msg, "1:24:") {
			t.Errorf("applies: %q", msg)
		}
		r = ts.do(t, "PATCH", loc(tpl.ID), tok, map[string]any{"applies": "order.total >= 20000"})
		r.want(t, http.StatusOK, "")
		var got quan.Template
		r.decode(t, &got)
		if got.Applies != "order.total >= 20000" || got.Eligibility != tpl.Eligibility {
			t.Fatalf("edited rules %q, %q", got.Eligibility, got.Applies)
		}
	})
}

// TestRulesOrderChannel: the channel a quote or a lock names is the
// order.channel an applies rule reads; an order that names none has the
// channel "", and a channel longer than a fact may be is refused.
func TestRulesOrderChannel(t *testing.T) {
	ts := newTestServer(t)
	m := ts.merchant(t, 1)
	body := validTemplate()
	body["applies"] = `order.channel == "app"`
	tpl := ts.create(t, m, body)
	ts.do(t, "POST", loc(tpl.ID)+"/activate", m, nil).want(t, http.StatusOK, "")
	if task := ts.distribute(t, m, tpl.ID, "users.csv", []byte("userId\n7\n"), nil); task.Counts.Issued != 1 {
		t.Fatalf("distribution: %+v", task.Counts)
	}
	u := ts.user(t, 7)
	quote := func(req map[string]any) quan.CouponQuote {
		t.Helper()
		var q quan.Quote
		r := ts.do(t, "POST", "/api/v1/settlement/quote", u, req)
		r.want(t, http.StatusOK, "")
		r.decode(t, &q)
		if len(q.Coupons) != 1 {
			t.Fatalf("quote %+v: want the one coupon", q)
		}
		return q.Coupons[0]
	}
	for _, c := range []struct {
		name    string
		channel any
		usable  bool
	}{{"App", "app", true}, {"Web", "web", false}, {"None", nil, false}} {
		req := map[string]any{"items": order(30_000)}
		if c.channel != nil {
			req["channel"] = c.channel
		}
		if cq := quote(req); cq.Usable != c.usable || (!c.usable && cq.Reason != quan.ReasonRuleNotMet) {
			t.Errorf("%s: usable %v reason %q, want usable %v", c.name, cq.Usable, cq.Reason, c.usable)
		}
	}
	cq := quote(map[string]any{"items": order(30_000), "channel": "app"})
	lock := func(channel string) response {
		return ts.settle(t, u, "/api/v1/orders/o-channel/lock", map[string]any{
			"items": order(30_000), "channel": channel, "couponIds": []int64{cq.CouponID}, "expectedDiscount": cq.Discount})
	}
	r := lock("web")
	r.want(t, http.StatusConflict, quan.ENOTUSABLE)
	if !strings.Contains(r.Problem.Detail, quan.ReasonRuleNotMet) {
		t.Errorf("lock on the web refused with %q, want the reason %s", r.Problem.Detail, quan.ReasonRuleNotMet)
	}
	lock("app").want(t, http.StatusOK, "")
	lock("app").want(t, http.StatusOK, "")                    // the same lock again
	lock("mini").want(t, http.StatusConflict, quan.ECONFLICT) // another request for the order

	long := strings.Repeat("a", quan.MaxFactBytes+1)
	r = ts.do(t, "POST", "/api/v1/settlement/quote", u, map[string]any{"items": order(30_000), "channel": long})
	r.want(t, http.StatusBadRequest, quan.EINVALID)
	if len(r.Problem.Errors) != 1 || r.Problem.Errors[0].Field != "channel" {
		t.Errorf("errors %+v, want one naming channel", r.Problem.Errors)
	}
}

// TestRulesVersions: the rules of an active template change by versions;
// a coupon keeps the applies rule of the version it was issued under,
// unless a later version in force applies to issued coupons; a version
// in the future is not in force before its time.
func TestRulesVersions(t *testing.T) {
	ts := newTestServer(t)
	m := ts.merchant(t, 1)
	body := validTemplate()
	body["perUserLimit"] = 2
	body["applies"] = "order.total >= 20000"
	tpl := ts.create(t, m, body)
	rulesPath := loc(tpl.ID) + "/rules"

	// A draft's rules change with the template.
	ts.do(t, "POST", rulesPath, m, map[string]any{"applies": "true"}).want(t, http.StatusConflict, quan.ETRANSITION)
	ts.do(t, "POST", loc(tpl.ID)+"/activate", m, nil).want(t, http.StatusOK, "")

	issue := func() quan.Coupon {
		t.Helper()
		task := ts.distribute(t, m, tpl.ID, "users.csv", []byte("userId\n7\n"), nil)
		if task.Counts.Issued != 1 {
			t.Fatalf("distribution: %+v", task.Counts)
		}
		var page struct{ Items []quan.Coupon }
		ts.do(t, "GET", "/api/v1/me/coupons?status=available", ts.user(t, 7), nil).decode(t, &page)
		return page.Items[0] // newest first
	}
	quote := func(total int64) map[int64]quan.CouponQuote {
		t.Helper()
		var q quan.Quote
		r := ts.do(t, "POST", "/api/v1/settlement/quote", ts.user(t, 7), map[string]any{"items": order(total)})
		r.want(t, http.StatusOK, "")
		r.decode(t, &q)
		out := map[int64]quan.CouponQuote{}
		for _, cq := range q.Coupons {
			out[cq.CouponID] = cq
		}
		return out
	}
	wantUsable := func(q map[int64]quan.CouponQuote, c quan.Coupon, usable bool) {
		t.Helper()
		cq := q[c.ID]
		if cq.Usable != usable || !usable && cq.Reason != quan.ReasonRuleNotMet {
			t.Errorf("coupon %d: usable %v reason %q, want usable %v (else %s)", c.ID, cq.Usable, cq.Reason, usable, quan.ReasonRuleNotMet)
		}
	}

	v0 := issue()
	wantUsable(quote(15_000), v0, false) // 150 yuan: the threshold (100) is met, the rule is not
	wantUsable(quote(30_000), v0, true)

	// Version 1, now: coupons issued from now on need 500 yuan. (A
	// coupon issued at the very time a version comes into force is of
	// that version.)
	ts.setNow(testNow.Add(time.Minute))
	r := ts.do(t, "POST", rulesPath, m, map[string]any{"applies": "order.total >= 50000"})
	r.want(t, http.StatusCreated, "")
	var v quan.RulesVersion
	r.decode(t, &v)
	if v.Version != 1 || !v.EffectiveAt.Equal(testNow.Add(time.Minute)) || v.Applies != "order.total >= 50000" || v.ApplyToIssued {
		t.Fatalf("version %+v", v)
	}
	v1 := issue()
	q := quote(30_000)
	wantUsable(q, v0, true) // keeps version 0's rule
	wantUsable(q, v1, false)
	wantUsable(quote(60_000), v1, true)

	// A lock refuses a coupon whose rule is not met, naming the reason.
	r = ts.settle(t, ts.user(t, 7), "/api/v1/orders/o-rule/lock", map[string]any{
		"items": order(30_000), "couponIds": []int64{v1.ID}, "expectedDiscount": 1000})
	r.want(t, http.StatusConflict, quan.ENOTUSABLE)
	if !strings.Contains(r.Problem.Detail, quan.ReasonRuleNotMet) {
		t.Errorf("lock refused with %q, want the reason %s", r.Problem.Detail, quan.ReasonRuleNotMet)
	}

	// Version 2, in an hour, for the coupons issued too. (Tokens are
	// minted at the clock's time: the merchant's again after it moves.)
	in := ts.clock().Add(time.Hour)
	r = ts.do(t, "POST", rulesPath, m, map[string]any{"applies": "order.total >= 90000", "applyToIssued": true,
		"effectiveAt": in.Format(time.RFC3339Nano)})
	r.want(t, http.StatusCreated, "")
	wantUsable(quote(30_000), v0, true) // not yet in force
	ts.setNow(in)
	m = ts.merchant(t, 1)
	q = quote(60_000)
	wantUsable(q, v0, false)
	wantUsable(q, v1, false)
	q = quote(95_000)
	wantUsable(q, v0, true)
	wantUsable(q, v1, true)

	// Listed, version 0 first, and in the audit trail.
	var info templates.RulesInfo
	ts.do(t, "GET", rulesPath, m, nil).decode(t, &info)
	if info.Current != 2 || len(info.Versions) != 3 || info.Versions[0].Applies != "order.total >= 20000" ||
		info.Versions[2].Applies != "order.total >= 90000" || !info.Versions[2].ApplyToIssued {
		t.Fatalf("rules %+v", info)
	}
	ts.do(t, "GET", rulesPath, ts.merchant(t, 2), nil).want(t, http.StatusNotFound, quan.ENOTFOUND)
	var hist struct{ Items []quan.AuditEntry }
	ts.do(t, "GET", loc(tpl.ID)+"/history", m, nil).decode(t, &hist)
	var changes int
	for _, e := range hist.Items {
		if e.Action == quan.ActionRules {
			changes++
		}
	}
	if changes != 2 {
		t.Errorf("%d rules entries in the audit trail, want 2", changes)
	}

	// Refused changes.
	r = ts.do(t, "POST", rulesPath, m, map[string]any{"applies": "order.total >= 1", "effectiveAt": testNow.Format(time.RFC3339)})
	r.want(t, http.StatusBadRequest, quan.EINVALID)
	ruleError(t, r, "effectiveAt")
	r = ts.do(t, "POST", rulesPath, m, map[string]any{"eligibility": "user.levl > 1"})
	r.want(t, http.StatusBadRequest, quan.EINVALID)
	if msg := ruleError(t, r, "eligibility"); !strings.HasPrefix(msg, "1:5: undefined field") {
		t.Errorf("eligibility: %q", msg)
	}
}

// TestRulesClaimNotEligible: a claim the eligibility rule refuses is 409
// not_eligible and takes no stock; once the user's attributes qualify,
// the claim is accepted.
func TestRulesClaimNotEligible(t *testing.T) {
	ts := newClaimServer(t, nil)
	m := ts.merchant(t, 1)
	admin := ts.token(t, quan.Identity{Role: quan.RoleAdmin, Subject: "upstream"})
	body := validTemplate()
	body["eligibility"] = `user.level >= 2 && "vip" in user.tags`
	tpl := ts.create(t, m, body)
	ts.do(t, "POST", loc(tpl.ID)+"/activate", m, nil).want(t, http.StatusOK, "")

	ts.claim(t, ts.user(t, 7), tpl.ID).want(t, http.StatusConflict, quan.ENOTELIGIBLE)
	ts.do(t, "PUT", attributesPath(8), admin, map[string]any{"level": 5, "tags": []string{"new"}}).want(t, http.StatusOK, "")
	ts.claim(t, ts.user(t, 8), tpl.ID).want(t, http.StatusConflict, quan.ENOTELIGIBLE)
	var got quan.Template
	ts.do(t, "GET", loc(tpl.ID), m, nil).decode(t, &got)
	if got.Stock != 1000 {
		t.Fatalf("stock %d after refused claims, want 1000", got.Stock)
	}

	ts.do(t, "PUT", attributesPath(7), admin, map[string]any{"level": 2, "tags": []string{"vip"}}).want(t, http.StatusOK, "")
	if c := ts.claimed(t, ts.user(t, 7), tpl.ID); c.Status != quan.ClaimIssued {
		t.Fatalf("claim of a member: %+v", c)
	}
	// The per-user limit (1) was not touched by the refusals: the second
	// claim is refused for the limit, not eligibility.
	ts.claim(t, ts.user(t, 7), tpl.ID).want(t, http.StatusConflict, quan.ELIMIT)

	// A template without rules takes anyone.
	plain := ts.create(t, m, validTemplate())
	ts.do(t, "POST", loc(plain.ID)+"/activate", m, nil).want(t, http.StatusOK, "")
	if c := ts.claimed(t, ts.user(t, 9), plain.ID); c.Status != quan.ClaimIssued {
		t.Fatalf("claim without rules: %+v", c)
	}
	// An unknown template is still 404.
	ts.claim(t, ts.user(t, 7), 999).want(t, http.StatusNotFound, quan.ENOTFOUND)
}

// TestRulesCodeNotEligible: a code redeemed by a user the template's
// eligibility rule refuses is 409 not_eligible and stays unused; a member
// redeems it, and is answered the same coupon again after the facts
// change.
func TestRulesCodeNotEligible(t *testing.T) {
	ts := newTestServer(t)
	m := ts.merchant(t, 1)
	admin := ts.token(t, quan.Identity{Role: quan.RoleAdmin, Subject: "upstream"})
	body := validTemplate()
	body["eligibility"] = `user.level >= 2 && "vip" in user.tags`
	tpl := ts.create(t, m, body)
	ts.do(t, "POST", loc(tpl.ID)+"/activate", m, nil).want(t, http.StatusOK, "")
	codes := ts.storedCodes(t, tpl.ID, 1)
	redeem := func(user int64) response {
		return ts.do(t, "POST", "/api/v1/codes/redeem", ts.user(t, user), map[string]any{"code": codes[0]})
	}
	redeem(7).want(t, http.StatusConflict, quan.ENOTELIGIBLE)
	ts.do(t, "PUT", attributesPath(8), admin, map[string]any{"level": 2, "tags": []string{"vip"}}).want(t, http.StatusOK, "")
	r := redeem(8)
	r.want(t, http.StatusCreated, "")
	var first quan.Coupon
	r.decode(t, &first)
	ts.do(t, "PUT", attributesPath(8), admin, map[string]any{"level": 0}).want(t, http.StatusOK, "")
	r = redeem(8)
	r.want(t, http.StatusCreated, "")
	var again quan.Coupon
	r.decode(t, &again)
	if again.ID != first.ID {
		t.Errorf("the same code again: coupon %d, want %d", again.ID, first.ID)
	}
	redeem(7).want(t, http.StatusConflict, quan.ECODEUSED) // used, whoever asks
	ts.do(t, "POST", "/api/v1/codes/redeem", ts.user(t, 7), map[string]any{"code": newCodeNotStored(t)}).want(t, http.StatusNotFound, quan.ENOTFOUND)
}

// newCodeNotStored is a well-formed code that no batch holds.
func newCodeNotStored(t *testing.T) string {
	t.Helper()
	cs, err := quan.NewCodes(1, "")
	if err != nil {
		t.Fatal(err)
	}
	return cs[0]
}

// TestRulesDistributionNotEligible: rows whose user the eligibility rule
// refuses fail not_eligible, counted and in the failure report.
func TestRulesDistributionNotEligible(t *testing.T) {
	ts := newTestServer(t)
	m := ts.merchant(t, 1)
	admin := ts.token(t, quan.Identity{Role: quan.RoleAdmin, Subject: "upstream"})
	for _, u := range []int64{3, 5} {
		ts.do(t, "PUT", attributesPath(u), admin, map[string]any{"level": 2}).want(t, http.StatusOK, "")
	}
	body := validTemplate()
	body["eligibility"] = "user.level >= 2"
	tpl := ts.create(t, m, body)
	ts.do(t, "POST", loc(tpl.ID)+"/activate", m, nil).want(t, http.StatusOK, "")

	task := ts.distribute(t, m, tpl.ID, "users.csv", []byte("userId\n3\n4\n5\n6\nabc\n"), nil)
	if task.Counts.Issued != 2 || task.Counts.Failed.NotEligible != 2 || task.Counts.Failed.InvalidID != 1 {
		t.Fatalf("counts %+v, want 2 issued, 2 not eligible, 1 invalid", task.Counts)
	}
	rows := ts.reportRows(t, m, task.ID)
	var refused []string
	for _, row := range rows {
		if row[3] == string(quan.CauseNotEligible) {
			refused = append(refused, row[1])
			if row[2] != "不符合领取条件 not eligible" {
				t.Errorf("reason %q", row[2])
			}
		}
	}
	if strings.Join(refused, ",") != "4,6" {
		t.Errorf("not eligible in the report: %v, want users 4 and 6 (rows %v)", refused, rows)
	}
}

// TestRulesEvaluate: an operator sees what each rule gives on sample
// facts, the template's rules or rules given.
func TestRulesEvaluate(t *testing.T) {
	ts := newTestServer(t)
	m := ts.merchant(t, 1)
	body := validTemplate()
	body["eligibility"] = `user.level >= 2 && "vip" in user.tags`
	body["applies"] = `order.items.exists(i, i.categoryId == "books")`
	tpl := ts.create(t, m, body)
	path := loc(tpl.ID) + "/rules/evaluate"

	var res templates.RulesEvaluation
	r := ts.do(t, "POST", path, m, map[string]any{"user": map[string]any{"level": 3, "tags": []string{"vip"}},
		"order": map[string]any{"total": 100, "items": []map[string]any{{"goodsId": "x", "categoryId": "food", "price": 100, "qty": 1}}}})
	r.want(t, http.StatusOK, "")
	r.decode(t, &res)
	if res.Version == nil || *res.Version != 0 || res.Eligibility.Result == nil || !*res.Eligibility.Result ||
		res.Applies.Result == nil || *res.Applies.Result || res.Applies.Rule != body["applies"] {
		t.Fatalf("evaluation %s", r.Body)
	}

	r = ts.do(t, "POST", path, m, map[string]any{"eligibility": `user.attrs["city"] == "sh"`, "user": map[string]any{}})
	r.want(t, http.StatusOK, "")
	res = templates.RulesEvaluation{}
	r.decode(t, &res)
	if res.Version != nil || res.Eligibility.Result != nil || !strings.Contains(res.Eligibility.Error, "city") ||
		res.Applies.Rule != "" || res.Applies.Result != nil {
		t.Fatalf("evaluation of a rule given: %s", r.Body)
	}

	r = ts.do(t, "POST", path, m, map[string]any{"applies": "order.totl > 1", "user": map[string]any{}})
	r.want(t, http.StatusBadRequest, quan.EINVALID)
	if msg := ruleError(t, r, "applies"); !strings.HasPrefix(msg, "1:6:") {
		t.Errorf("applies: %q", msg)
	}
	ts.do(t, "POST", path, ts.merchant(t, 2), map[string]any{"user": map[string]any{}}).want(t, http.StatusNotFound, quan.ENOTFOUND)
	ts.do(t, "POST", fmt.Sprintf("/api/v1/templates/%d/rules/evaluate", tpl.ID+100), m, map[string]any{}).
		want(t, http.StatusNotFound, quan.ENOTFOUND)
}
