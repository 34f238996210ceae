package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/templates"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// createDraft stores a draft threshold template of shop through the
// service, as the API would.
func createDraft(t *testing.T, tc *testConsole, shop int64, name string) *quan.Template {
	t.Helper()
	tpl, err := tc.tpls.Create(context.Background(), quan.Identity{Role: quan.RoleMerchant, ShopNo: shop}, templates.NewTemplate{
		TemplateSpec: quan.TemplateSpec{
			Name: name, Kind: quan.KindThreshold, Rule: quan.Rule{Amount: 1000, Threshold: 10000},
			Source: quan.SourceShop, Scope: quan.Scope{Kind: quan.ScopeAll},
			IssueStart: testNow.Add(-time.Hour), IssueEnd: testNow.Add(30 * 24 * time.Hour),
			Validity: quan.Validity{Kind: quan.ValidRelative, Hours: 72}, PerUserLimit: 1,
		},
		Stock: 500,
	})
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

// templateForm is a valid form of the new-template page, in Shanghai time.
func templateForm() url.Values {
	return url.Values{
		"name": {"满100减10"}, "description": {"双十一"}, "kind": {"threshold"}, "source": {"shop"},
		"rule.amount": {"10"}, "rule.threshold": {"100.00"}, "scope.type": {"all"},
		"issueStart": {"2026-11-01T10:00"}, "issueEnd": {"2026-11-30T10:00"},
		"validity.type": {"relative"}, "validity.hours": {"168"}, "perUserLimit": {"2"}, "stock": {"1000"},
		"example": {"120"},
	}
}

func TestCreateTemplate(t *testing.T) {
	tc := newConsole(t)
	b := tc.signedIn(t, "m1001")
	if status, _, body := b.get("/console/templates/new"); status != http.StatusOK {
		t.Fatalf("new template form: %d\n%s", status, body)
	}

	// Refused fields are shown next to their inputs, with what was typed.
	bad := templateForm()
	bad.Set("rule.amount", "12.345")
	bad.Set("name", "")
	bad.Set("perUserLimit", "0")
	status, _, body := b.post("/console/templates", bad)
	if status != http.StatusBadRequest {
		t.Fatalf("bad form: %d\n%s", status, body)
	}
	contains(t, body,
		`<span id="rule.amount-err"><span class="field-error" role="alert">&#34;12.345&#34; is not an amount in yuan with at most two decimals</span>`,
		`value="12.345"`, `value="100.00"`)
	bad.Set("rule.amount", "10")
	status, _, body = b.post("/console/templates", bad)
	if status != http.StatusBadRequest {
		t.Fatalf("bad form: %d\n%s", status, body)
	}
	contains(t, body, `<span id="name-err"><span class="field-error" role="alert">is required</span>`,
		`<span id="perUserLimit-err"><span class="field-error" role="alert">`)
	if _, n, _ := tc.tpls.List(context.Background(), quan.Identity{Role: quan.RoleAdmin}, quan.TemplateFilter{}); n != 0 {
		t.Fatalf("refused forms stored %d templates", n)
	}

	status, path, body := b.post("/console/templates", templateForm())
	if status != http.StatusOK || !strings.HasPrefix(path, "/console/templates/") {
		t.Fatalf("create: %d at %s\n%s", status, path, body)
	}
	contains(t, body, "模板已创建", "满 100.00 减 10.00 元", "草稿", "2026-11-01 10:00:00", "1000 / 1000")
	items, _, err := tc.tpls.List(context.Background(), quan.Identity{Role: quan.RoleAdmin}, quan.TemplateFilter{})
	if err != nil || len(items) != 1 {
		t.Fatalf("templates: %v %v", items, err)
	}
	got := items[0]
	// Yuan became fen exactly; Shanghai wall time became UTC.
	if got.ShopNo != 1001 || got.Rule.Amount != 1000 || got.Rule.Threshold != 10000 || got.PerUserLimit != 2 ||
		!got.IssueStart.Equal(time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)) || got.CreatedBy != "merchant:1001 (m1001)" {
		t.Fatalf("stored %+v", got)
	}
}

// TestCompositeStackingForm: an operator sets a composite rule, a
// stacking policy and a priority in the form; they are stored, shown
// again in the edit form, and a bad one is shown by its input.
func TestCompositeStackingForm(t *testing.T) {
	tc := newConsole(t)
	b := tc.signedIn(t, "m1001")
	if status, _, body := b.get("/console/templates/new"); status != http.StatusOK {
		t.Fatalf("new template form: %d\n%s", status, body)
	} else {
		contains(t, body, `<option value="composite">满减折扣</option>`, `<select id="stacking" name="stacking"`,
			`<option value="any" selected>可与任何券叠加</option>`, `<input id="priority" name="priority" value="0"`)
	}
	form := templateForm()
	form.Set("kind", "composite")
	form.Set("rule.rate", "90")
	form.Set("rule.cap", "20")
	form.Set("stacking", "withPlatform")
	form.Set("priority", "1001")
	status, _, body := b.post("/console/templates", form)
	if status != http.StatusBadRequest {
		t.Fatalf("priority 1001: %d\n%s", status, body)
	}
	contains(t, body, `<span id="priority-err"><span class="field-error" role="alert">must be between 0 and 1000</span>`)
	form.Set("priority", "7")
	status, path, body := b.post("/console/templates", form)
	if status != http.StatusOK || !strings.HasPrefix(path, "/console/templates/") {
		t.Fatalf("create: %d at %s\n%s", status, path, body)
	}
	contains(t, body, "满 100.00 减 10.00 元再 9 折，最多优惠 20.00 元")
	items, _, err := tc.tpls.List(context.Background(), quan.Identity{Role: quan.RoleAdmin}, quan.TemplateFilter{})
	if err != nil || len(items) != 1 {
		t.Fatalf("templates: %v %v", items, err)
	}
	got := items[0]
	if got.Kind != quan.KindComposite || got.Rule != (quan.Rule{Amount: 1000, Threshold: 10_000, Rate: 90, Cap: 2000}) ||
		got.Stacking != quan.StackWithPlatform || got.Priority != 7 {
		t.Fatalf("stored %+v", got)
	}
	page, _, _ := strings.Cut(path, "?")
	_, _, body = b.get(page + "/edit")
	contains(t, body, `<option value="withPlatform" selected>`, `<input id="priority" name="priority" value="7"`, `<option value="composite" selected>`)
}

func TestPreview(t *testing.T) {
	tc := newConsole(t)
	b := tc.signedIn(t, "m1001")
	b.get("/console/templates/new")
	for _, c := range []struct {
		set  url.Values
		want string
	}{
		{url.Values{"example": {"120"}}, "优惠 10.00 元，实付 110.00 元"},
		{url.Values{"example": {"99.99"}}, "未达到使用门槛"},
		{url.Values{"kind": {"discount"}, "rule.rate": {"85"}, "rule.threshold": {""}, "rule.cap": {"5"}, "example": {"100"}}, "优惠 5.00 元，实付 95.00 元"},
		{url.Values{"kind": {"discount"}, "rule.rate": {"85"}, "rule.threshold": {""}, "rule.cap": {""}, "example": {"20.01"}}, "优惠 3.00 元，实付 17.01 元"},
		{url.Values{"kind": {"composite"}, "rule.threshold": {"100"}, "rule.amount": {"10"}, "rule.rate": {"90"}, "rule.cap": {""}, "example": {"123.45"}}, "优惠 21.34 元，实付 102.11 元"},
		{url.Values{"example": {"abc"}}, `"abc" is not an amount`},
	} {
		form := templateForm()
		for k, v := range c.set {
			form[k] = v
		}
		req, _ := http.NewRequest(http.MethodPost, tc.URL+"/console/templates/preview", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-CSRF-Token", b.csrf)
		resp, err := b.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var p struct{ Text, Error string }
		json.NewDecoder(resp.Body).Decode(&p)
		resp.Body.Close()
		if got := p.Text + p.Error; !strings.Contains(got, c.want) {
			t.Errorf("preview of %v: %q, want %q", c.set, got, c.want)
		}
	}
}

func TestTemplateLifecycle(t *testing.T) {
	tc := newConsole(t)
	b := tc.signedIn(t, "m1001")
	tpl := createDraft(t, tc, 1001, "lifecycle")
	page := "/console/templates/" + itoa(tpl.ID)

	// Reminders set through the API survive an edit in the console, whose
	// form does not show them.
	merchant := quan.Identity{Role: quan.RoleMerchant, ShopNo: 1001}
	if _, err := tc.tpls.Edit(context.Background(), merchant, tpl.ID, func(e *templates.Edit) error {
		e.RemindBefore, e.RemindChannels = quan.Duration(24*time.Hour), []quan.NotifyType{quan.NotifyInbox}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	form := templateForm()
	form.Set("name", "renamed")
	form.Set("stock", "700")
	if status, _, body := b.post(page+"/edit", form); status != http.StatusOK || !strings.Contains(body, "renamed") {
		t.Fatalf("edit: %d\n%s", status, body)
	}
	if got, _ := tc.tpls.Get(context.Background(), merchant, tpl.ID); got.RemindBefore != quan.Duration(24*time.Hour) || len(got.RemindChannels) != 1 {
		t.Fatalf("the edit dropped the reminders: %v %v", got.RemindBefore, got.RemindChannels)
	}
	for _, step := range []struct{ action, status string }{{"activate", "进行中"}, {"pause", "已暂停"}, {"resume", "进行中"}} {
		status, _, body := b.post(page+"/"+step.action, nil)
		if status != http.StatusOK || !strings.Contains(body, "状态已更新为："+step.status) {
			t.Fatalf("%s: %d\n%s", step.action, status, body)
		}
	}
	// An active template is not a draft: its edit form says so.
	if status, _, _ := b.get(page + "/edit"); status != http.StatusConflict {
		t.Fatalf("edit form of an active template: %d", status)
	}
	status, _, body := b.post(page+"/stock", url.Values{"n": {"300"}})
	if status != http.StatusOK || !strings.Contains(body, "已增加库存 300") || !strings.Contains(body, "1000 / 1000") {
		t.Fatalf("add stock: %d\n%s", status, body)
	}
	status, _, body = b.post(page+"/stock", url.Values{"n": {"-3"}})
	if status != http.StatusOK || !strings.Contains(body, `&#34;-3&#34; is not a positive whole number`) {
		t.Fatalf("add negative stock: %d\n%s", status, body)
	}
	// The audit trail names every change.
	contains(t, body, "变更记录", "创建", "编辑", "启用", "暂停", "恢复", "增加库存")
	// Resume is not allowed from active: the error is on the page.
	status, _, body = b.post(page+"/resume", nil)
	if status != http.StatusOK || !strings.Contains(body, `class="error"`) {
		t.Fatalf("resume an active template: %d\n%s", status, body)
	}
	if status, _, body = b.post(page+"/terminate", nil); status != http.StatusOK || !strings.Contains(body, "已结束") {
		t.Fatalf("terminate: %d\n%s", status, body)
	}
}

func TestShopIsolation(t *testing.T) {
	tc := newConsole(t)
	mine := createDraft(t, tc, 1001, "mine")
	theirs := createDraft(t, tc, 1002, "theirs")
	b := tc.signedIn(t, "m1001")
	_, _, body := b.get("/console/templates")
	contains(t, body, "mine")
	if strings.Contains(body, "theirs") {
		t.Fatal("the list shows another shop's template")
	}
	for _, path := range []string{"", "/edit"} {
		if status, _, _ := b.get("/console/templates/" + itoa(theirs.ID) + path); status != http.StatusNotFound {
			t.Fatalf("another shop's template%s: %d, want 404", path, status)
		}
	}
	if status, _, _ := b.post("/console/templates/"+itoa(theirs.ID)+"/activate", nil); status != http.StatusNotFound {
		t.Fatalf("activate another shop's template: %d, want 404", status)
	}
	if status, _, _ := b.get("/console/templates/" + itoa(mine.ID)); status != http.StatusOK {
		t.Fatalf("own template: %d", status)
	}
	// An admin sees both, with their shops.
	_, _, body = tc.signedIn(t, "root").get("/console/templates")
	contains(t, body, "mine", "theirs", "<td>1002</td>")
}

func TestListFiltersAndPages(t *testing.T) {
	tc := newConsole(t)
	for i := range 120 {
		createDraft(t, tc, 1001, fmt.Sprintf("coupon-%03d", i))
	}
	b := tc.signedIn(t, "m1001")
	_, _, body := b.get("/console/templates")
	contains(t, body, "第 1 / 3 页，共 120 条", `rel="next"`)
	_, _, body = b.get("/console/templates?q=coupon-11&page=1")
	contains(t, body, "共 10 条", "coupon-119")
	if strings.Contains(body, "coupon-009") {
		t.Fatal("search shows a template not matching")
	}
	_, _, body = b.get("/console/templates?status=active")
	contains(t, body, "没有记录")
}

func TestEnglish(t *testing.T) {
	tc := newConsole(t)
	b := tc.signedIn(t, "m1001")
	createDraft(t, tc, 1001, "en")
	status, path, body := b.get("/console/lang?to=en&next=/console/templates")
	if status != http.StatusOK || path != "/console/templates" {
		t.Fatalf("switch: %d at %s", status, path)
	}
	contains(t, body, `lang="en"`, "Templates", "Sign out", "10.00 yuan off from 100.00", "Draft")
	// Times follow the browser's zone.
	u, _ := url.Parse(tc.URL + "/console/")
	b.http.Jar.SetCookies(u, []*http.Cookie{{Name: "quan_tz", Value: "America/New_York", Path: "/console"}})
	_, _, body = b.get("/console/templates")
	contains(t, body, "America/New_York", "2026-11-01 02:00:00")
}

func TestListEscapes(t *testing.T) {
	tc := newConsole(t)
	createDraft(t, tc, 1001, `<script>alert("x")</script>&`)
	_, _, body := tc.signedIn(t, "m1001").get("/console/templates")
	contains(t, body, `&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&amp;`)
	if strings.Contains(body, `<script>alert`) {
		t.Fatal("a template's name is not escaped in the list")
	}
}

// TestRulesForm: the template form has an eligibility and an applies
// rule; a rule that does not compile is shown by its input with its
// position; the rules and their versions are shown on the template page.
func TestRulesForm(t *testing.T) {
	tc := newConsole(t)
	b := tc.signedIn(t, "m1001")
	_, _, body := b.get("/console/templates/new")
	contains(t, body, `<textarea id="eligibility" name="eligibility"`, `<textarea id="applies" name="applies"`)
	form := templateForm()
	form.Set("eligibility", "user.levl >= 2")
	form.Set("applies", "order.total >= 10000")
	status, _, body := b.post("/console/templates", form)
	if status != http.StatusBadRequest {
		t.Fatalf("a bad rule: %d\n%s", status, body)
	}
	contains(t, body, `<span id="eligibility-err"><span class="field-error" role="alert">1:5: undefined field &#39;levl&#39;</span>`,
		`>order.total &gt;= 10000</textarea>`)
	form.Set("eligibility", `user.level >= 2 && "vip" in user.tags`)
	status, path, body := b.post("/console/templates", form)
	if status != http.StatusOK || !strings.HasPrefix(path, "/console/templates/") {
		t.Fatalf("create: %d at %s\n%s", status, path, body)
	}
	contains(t, body, `<section class="card" id="rules">`, "规则版本", `<code class="pre">user.level &gt;= 2 &amp;&amp; &#34;vip&#34; in user.tags</code>`,
		`<code class="pre">order.total &gt;= 10000</code>`, "0 (当前)")

	// A version: shown with its effective time, the current one marked.
	page, _, _ := strings.Cut(path, "?")
	id, _ := strconv.ParseInt(strings.TrimPrefix(page, "/console/templates/"), 10, 64)
	merchant := quan.Identity{Role: quan.RoleMerchant, ShopNo: 1001}
	if _, err := tc.tpls.Activate(context.Background(), merchant, id); err != nil {
		t.Fatal(err)
	}
	applies := "order.total >= 20000"
	if _, err := tc.tpls.ChangeRules(context.Background(), merchant, id, templates.RulesChange{Applies: &applies}); err != nil {
		t.Fatal(err)
	}
	_, _, body = b.get(page)
	contains(t, body, `<code class="pre">order.total &gt;= 20000</code>`, "1 (当前)", "调整规则")
	_, _, body = b.get("/console/lang?to=en&next=" + page)
	contains(t, body, "Rules versions", "1 (current)", "Rules changed")
}
