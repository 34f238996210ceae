package http_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// displayTemplate is validTemplate with every display field.
func displayTemplate(category string, goods ...string) map[string]any {
	body := validTemplate()
	body["logoUrl"] = "https://cdn.example.com/logo.png"
	body["category"] = category
	body["goods"] = goods
	body["instructions"] = "到店出示券码即可使用。\n不与其他优惠同享"
	body["metadata"] = map[string]string{"color": "#ff3300", "标签": "新客"}
	return body
}

// TestTemplateDisplayFields: a merchant writes a template's display
// fields, reads them back and edits them; bad ones are 400 naming the
// field.
func TestTemplateDisplayFields(t *testing.T) {
	ts := newTestServer(t)
	m := ts.merchant(t, 1)
	tpl := ts.create(t, m, displayTemplate("饮品", "奶茶", "咖啡"))
	if tpl.LogoURL != "https://cdn.example.com/logo.png" || tpl.Category != "饮品" || !slices.Equal(tpl.Goods, []string{"奶茶", "咖啡"}) ||
		!strings.HasPrefix(tpl.Instructions, "到店出示") || tpl.Metadata["标签"] != "新客" {
		t.Fatalf("created %+v", tpl.TemplateSpec)
	}
	var got quan.Template
	ts.do(t, "GET", loc(tpl.ID), m, nil).decode(t, &got)
	if got.Category != "饮品" || got.Metadata["color"] != "#ff3300" || len(got.Goods) != 2 {
		t.Fatalf("read back %+v", got.TemplateSpec)
	}
	ts.do(t, "PATCH", loc(tpl.ID), m, map[string]any{"category": "甜品", "goods": []string{"蛋糕"}}).decode(t, &got)
	if got.Category != "甜品" || !slices.Equal(got.Goods, []string{"蛋糕"}) || got.LogoURL == "" {
		t.Fatalf("edited %+v", got.TemplateSpec)
	}

	for _, c := range []struct {
		field string
		value any
		named string
	}{
		{"logoUrl", "ftp://cdn.example.com/logo.png", "logoUrl"},
		{"logoUrl", "javascript:alert(1)", "logoUrl"},
		{"logoUrl", "/logo.png", "logoUrl"},
		{"logoUrl", "https://x/" + strings.Repeat("a", quan.MaxLogoURLLen), "logoUrl"},
		{"category", strings.Repeat("类", quan.MaxCategoryLen+1), "category"},
		{"category", "a\u202eb", "category"},
		{"goods", []string{"tea", "tea"}, "goods[1]"},
		{"goods", []string{""}, "goods[0]"},
		{"goods", make([]string, quan.MaxGoods+1), "goods"},
		{"instructions", strings.Repeat("说", quan.MaxInstructionsLen+1), "instructions"},
		{"instructions", "bell\a", "instructions"},
		{"metadata", map[string]string{"": "x"}, "metadata"},
		{"metadata", map[string]string{"k": strings.Repeat("v", quan.MaxMetadataBytes)}, "metadata"},
	} {
		body := validTemplate()
		body[c.field] = c.value
		r := ts.do(t, "POST", "/api/v1/templates", m, body)
		if r.Status != http.StatusBadRequest || !r.hasField(c.named) {
			t.Errorf("%s %.40v: %d %+v, want 400 naming %s", c.field, c.value, r.Status, r.Problem, c.named)
		}
	}
	many := map[string]string{}
	for i := range quan.MaxMetadataKeys + 1 {
		many[fmt.Sprint("k", i)] = "v"
	}
	body := validTemplate()
	body["metadata"] = many
	if r := ts.do(t, "POST", "/api/v1/templates", m, body); r.Status != http.StatusBadRequest || !r.hasField("metadata") {
		t.Errorf("%d metadata keys: %d %+v, want 400 naming metadata", len(many), r.Status, r.Problem)
	}
}

// privateKeys are what a template's public view must never carry.
var privateKeys = []string{"stock", "totalStock", "budget", "eligibility", "applies", "createdBy", "codePrefix",
	"createdAt", "updatedAt", "remindChannels", "priority"}

func assertPublic(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range privateKeys {
		if _, ok := m[k]; ok {
			t.Errorf("the public view carries %q: %s", k, raw)
		}
	}
	if _, ok := m["inStock"].(bool); !ok {
		t.Errorf("the public view has no inStock boolean: %s", raw)
	}
	return m
}

// TestPublicTemplate: a shopper reads the public view of an active
// template, and nothing of a draft, a paused or an ended one; merchants
// and admins keep the whole template, merchants of their shop only.
func TestPublicTemplate(t *testing.T) {
	ts := newTestServer(t)
	m := ts.merchant(t, 1)
	u := ts.user(t, 7)
	body := displayTemplate("饮品", "奶茶")
	body["budget"] = 500000
	body["eligibility"] = "user.level >= 0"
	tpl := ts.create(t, m, body)
	ts.do(t, "GET", loc(tpl.ID), u, nil).want(t, http.StatusNotFound, quan.ENOTFOUND) // a draft
	ts.do(t, "POST", loc(tpl.ID)+"/activate", m, nil).want(t, http.StatusOK, "")

	r := ts.do(t, "GET", loc(tpl.ID), u, nil)
	r.want(t, http.StatusOK, "")
	view := assertPublic(t, r.Body)
	var pub quan.PublicTemplate
	r.decode(t, &pub)
	if pub.ID != tpl.ID || pub.Name != "满100减10" || pub.RuleText != (quan.BiText{ZH: "满100减10", EN: "¥10 off ¥100"}) ||
		pub.ScopeText.ZH != "全场通用" || pub.Category != "饮品" || pub.LogoURL == "" || pub.Instructions == "" ||
		!pub.InStock || pub.PerUserLimit != 1 || pub.Status != quan.TemplateActive || !pub.IssueEnd.Equal(tpl.IssueEnd) {
		t.Errorf("public view %s", r.Body)
	}
	if view["rule"] == nil || view["validity"] == nil {
		t.Errorf("public view without rule or validity: %s", r.Body)
	}

	// The merchant of the shop and an admin see it whole; another
	// merchant does not see it at all.
	var whole quan.Template
	ts.do(t, "GET", loc(tpl.ID), m, nil).decode(t, &whole)
	if whole.Stock != 1000 || whole.Budget != 500000 || whole.Eligibility == "" {
		t.Errorf("the merchant's view %+v", whole)
	}
	ts.do(t, "GET", loc(tpl.ID), ts.merchant(t, 2), nil).want(t, http.StatusNotFound, quan.ENOTFOUND)

	ts.do(t, "POST", loc(tpl.ID)+"/pause", m, nil).want(t, http.StatusOK, "")
	ts.do(t, "GET", loc(tpl.ID), u, nil).want(t, http.StatusNotFound, quan.ENOTFOUND)
	ts.do(t, "POST", loc(tpl.ID)+"/terminate", m, nil).want(t, http.StatusOK, "")
	ts.do(t, "GET", loc(tpl.ID), u, nil).want(t, http.StatusNotFound, quan.ENOTFOUND)
	ts.do(t, "GET", loc(tpl.ID+100), u, nil).want(t, http.StatusNotFound, quan.ENOTFOUND)
}

type searchPage struct {
	Items      []json.RawMessage
	Total      int
	NextCursor int64
}

func (p searchPage) ids(t *testing.T) []int64 {
	t.Helper()
	var out []int64
	for _, raw := range p.Items {
		var v struct{ ID int64 }
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v.ID)
	}
	return out
}

// pageAll follows nextCursor from path (which has a ? already) and
// returns every id, failing on a repeat.
func (ts *testServer) pageAll(t *testing.T, token, path string) []int64 {
	t.Helper()
	var all []int64
	cursor := int64(0)
	for pages := 0; ; pages++ {
		if pages > 200 {
			t.Fatalf("%s: paging does not end", path)
		}
		p := path
		if cursor > 0 {
			p += fmt.Sprintf("&cursor=%d", cursor)
		}
		var page searchPage
		r := ts.do(t, "GET", p, token, nil)
		r.want(t, http.StatusOK, "")
		r.decode(t, &page)
		for _, id := range page.ids(t) {
			if slices.Contains(all, id) {
				t.Fatalf("%s: template %d on two pages", path, id)
			}
			all = append(all, id)
		}
		if page.NextCursor == 0 {
			return all
		}
		cursor = page.NextCursor
	}
}

// TestTemplateSearch: merchants search their shop's templates, shoppers
// the active ones of every shop, by name, category and goods, page by
// cursor.
func TestTemplateSearch(t *testing.T) {
	ts := newTestServer(t)
	m1, m2 := ts.merchant(t, 1), ts.merchant(t, 2)
	u := ts.user(t, 7)
	activate := func(tok string, tpl quan.Template) quan.Template {
		ts.do(t, "POST", loc(tpl.ID)+"/activate", tok, nil).want(t, http.StatusOK, "")
		return tpl
	}
	tea := activate(m1, ts.create(t, m1, displayTemplate("饮品", "tea", "奶茶")))
	teaDraft := ts.create(t, m1, displayTemplate("饮品", "tea"))
	pot := activate(m1, ts.create(t, m1, displayTemplate("器具", "teapot")))
	tea2 := activate(m2, ts.create(t, m2, displayTemplate("饮品", "tea")))

	for _, c := range []struct {
		token, query string
		want         []int64
	}{
		{m1, "category=%E9%A5%AE%E5%93%81", []int64{teaDraft.ID, tea.ID}}, // 饮品
		{m1, "goods=tea", []int64{teaDraft.ID, tea.ID}},
		{m1, "goods=teapot", []int64{pot.ID}},
		{m1, "goods=te", nil},
		{m2, "goods=tea", []int64{tea2.ID}},
		{u, "goods=tea", []int64{tea2.ID, tea.ID}}, // active ones of every shop
		{u, "goods=tea&shopNo=2", []int64{tea2.ID}},
		{u, "category=%E5%99%A8%E5%85%B7", []int64{pot.ID}}, // 器具
		{u, "name=100", []int64{tea2.ID, pot.ID, tea.ID}},
	} {
		var page searchPage
		r := ts.do(t, "GET", "/api/v1/templates?"+c.query, c.token, nil)
		r.want(t, http.StatusOK, "")
		r.decode(t, &page)
		if got := page.ids(t); !slices.Equal(got, c.want) {
			t.Errorf("?%s: %v, want %v", c.query, got, c.want)
		}
		if c.token == u {
			for _, raw := range page.Items {
				assertPublic(t, raw)
			}
		}
	}
	ts.do(t, "GET", "/api/v1/templates?status=draft", u, nil).want(t, http.StatusBadRequest, quan.EINVALID)
	if r := ts.do(t, "GET", "/api/v1/templates?cursor=x", m1, nil); r.Status != http.StatusBadRequest || !r.hasField("cursor") {
		t.Errorf("cursor=x: %d %+v, want 400 naming cursor", r.Status, r.Problem)
	}

	// Paged by cursor, 2 a page, a merchant's listing has every template
	// of the shop once, newest first.
	if got, want := ts.pageAll(t, m1, "/api/v1/templates?limit=2"), []int64{pot.ID, teaDraft.ID, tea.ID}; !slices.Equal(got, want) {
		t.Errorf("paged by cursor: %v, want %v", got, want)
	}
}

// TestWalletItemsCarryTheDisplay: each coupon of a wallet, listed or
// read alone, carries the display of its template.
func TestWalletItemsCarryTheDisplay(t *testing.T) {
	ts := newTestServer(t)
	m := ts.merchant(t, 1)
	u := ts.user(t, 7)
	body := displayTemplate("饮品", "奶茶")
	body["kind"], body["rule"] = "discount", map[string]any{"rate": 85, "cap": 2000}
	body["scope"] = map[string]any{"type": "goods", "ids": []string{"g1", "g2"}}
	disc := ts.create(t, m, body)
	ts.do(t, "POST", loc(disc.ID)+"/activate", m, nil).want(t, http.StatusOK, "")
	thr := ts.activeTemplate(t, m, 100, 1)
	for _, id := range []int64{disc.ID, thr.ID} {
		ts.distribute(t, m, id, "users.csv", []byte("userId\n7\n"), nil)
	}
	type item struct {
		quan.Coupon
		Template *quan.TemplateDisplay
	}
	var page struct{ Items []item }
	ts.do(t, "GET", "/api/v1/me/coupons", u, nil).decode(t, &page)
	if len(page.Items) != 2 {
		t.Fatalf("wallet %+v", page.Items)
	}
	want := map[int64]quan.BiText{
		disc.ID: {ZH: "8.5折，最高减20元", EN: "15% off, up to ¥20 off"},
		thr.ID:  {ZH: "满100减10", EN: "¥10 off ¥100"},
	}
	for _, it := range page.Items {
		d := it.Template
		if d == nil || d.ID != it.TemplateID || d.Name != "满100减10" || d.ShopNo != 1 || d.RuleText != want[it.TemplateID] || d.Validity.Kind != quan.ValidRelative {
			t.Errorf("coupon %d of template %d: display %+v", it.ID, it.TemplateID, d)
			continue
		}
		if it.TemplateID == disc.ID && (d.Category != "饮品" || d.LogoURL == "" || d.Instructions == "" ||
			d.ScopeText != (quan.BiText{ZH: "限指定商品（2种）", EN: "2 selected items"}) || d.Rule.Rate != 85) {
			t.Errorf("display of the discount: %+v", d)
		}
	}
	var one item
	ts.do(t, "GET", fmt.Sprintf("/api/v1/me/coupons/%d", page.Items[0].ID), u, nil).decode(t, &one)
	if one.Template == nil || one.Template.ID != page.Items[0].TemplateID {
		t.Errorf("a coupon read alone: %+v", one)
	}
}

type centreItem struct {
	ID           int64
	ShopNo       int64
	Category     string
	ClaimableNow bool
	Held         int64
	IssueStart   time.Time
	InStock      bool
}

type centrePage struct {
	Items      []centreItem
	NextCursor int64
}

func (ts *testServer) centre(t *testing.T, token, query string) []int64 {
	t.Helper()
	var p centrePage
	r := ts.do(t, "GET", "/api/v1/me/claimable?"+query, token, nil)
	r.want(t, http.StatusOK, "")
	r.decode(t, &p)
	var ids []int64
	for _, it := range p.Items {
		ids = append(ids, it.ID)
	}
	return ids
}

// TestClaimCentre: the claim centre lists what the shopper may claim now
// or soon, and hides what the claim would refuse: ineligible, over the
// total, daily or weekly limit, sold out, over the shop's daily cap, not
// active, ended.
func TestClaimCentre(t *testing.T) {
	// The claims honour the shops' caps, as cmd/quan wires them.
	ts := newClaimServer(t, func(ts *testServer) { ts.claims.Shops = ts.api.Shops })
	m1, m2 := ts.merchant(t, 1), ts.merchant(t, 2)
	admin := ts.token(t, quan.Identity{Role: quan.RoleAdmin, Subject: "ops"})
	u7, u8, u9 := ts.user(t, 7), ts.user(t, 8), ts.user(t, 9)
	mk := func(tok string, change func(map[string]any)) int64 {
		body := displayTemplate("饮品", "tea")
		body["perUserLimit"] = 2
		if change != nil {
			change(body)
		}
		tpl := ts.create(t, tok, body)
		ts.do(t, "POST", loc(tpl.ID)+"/activate", tok, nil).want(t, http.StatusOK, "")
		return tpl.ID
	}
	open := mk(m1, nil)
	members := mk(m1, func(b map[string]any) { b["eligibility"] = "user.level >= 2" })
	daily := mk(m1, func(b map[string]any) { b["perUserDaily"] = 1 })
	weekly := mk(m1, func(b map[string]any) { b["perUserWeekly"] = 1 })
	one := mk(m1, func(b map[string]any) { b["perUserLimit"] = 1 })
	soldOut := mk(m1, func(b map[string]any) { b["stock"] = 1 })
	soon := mk(m1, func(b map[string]any) { b["issueStart"] = testNow.Add(2 * time.Hour).Format(time.RFC3339) })
	paused := mk(m1, nil)
	ts.do(t, "POST", loc(paused)+"/pause", m1, nil).want(t, http.StatusOK, "")
	ts.create(t, m1, displayTemplate("饮品", "tea")) // a draft
	capped := mk(m2, func(b map[string]any) { b["category"] = "器具" })
	ts.do(t, "PUT", shopSettingsPath(2), m2, map[string]any{"dailyClaimCap": 1}).want(t, http.StatusOK, "")
	ts.do(t, "PUT", attributesPath(9), admin, map[string]any{"level": 3}).want(t, http.StatusOK, "")

	all := []int64{capped, soon, soldOut, one, weekly, daily, members, open}
	if got := ts.centre(t, u9, ""); !slices.Equal(got, all) {
		t.Fatalf("before any claim, the member's centre: %v, want %v", got, all)
	}
	// User 7 is no member: the members' template is hidden from the
	// start, as its claim would be refused.
	if got, want := ts.centre(t, u7, ""), []int64{capped, soon, soldOut, one, weekly, daily, open}; !slices.Equal(got, want) {
		t.Fatalf("the non-member's centre: %v, want %v", got, want)
	}
	r := ts.claim(t, u7, members)
	r.want(t, http.StatusConflict, quan.ENOTELIGIBLE)

	for _, id := range []int64{daily, weekly, one, open} {
		if c := ts.claimed(t, u7, id); c.Status != quan.ClaimIssued {
			t.Fatalf("claim of %d: %+v", id, c)
		}
	}
	if c := ts.claimed(t, u8, soldOut); c.Status != quan.ClaimIssued {
		t.Fatalf("claim of the last coupon: %+v", c)
	}
	if c := ts.claimed(t, u8, capped); c.Status != quan.ClaimIssued {
		t.Fatalf("claim of shop 2: %+v", c)
	}
	// Now user 7 holds the one of `one`, received today's of `daily` and
	// this week's of `weekly`; `soldOut` has no stock; shop 2 took its
	// claim of the day. `open` (one of two held) stays, with Held 1.
	var p centrePage
	ts.do(t, "GET", "/api/v1/me/claimable", u7, nil).decode(t, &p)
	var got []int64
	for _, it := range p.Items {
		got = append(got, it.ID)
		switch it.ID {
		case open:
			if !it.ClaimableNow || it.Held != 1 || !it.InStock {
				t.Errorf("open: %+v", it)
			}
		case soon:
			if it.ClaimableNow || !it.IssueStart.Equal(testNow.Add(2*time.Hour)) {
				t.Errorf("soon: %+v, want not claimable now, opening in 2 h", it)
			}
		}
	}
	if want := []int64{soon, open}; !slices.Equal(got, want) {
		t.Errorf("after the claims, user 7's centre: %v, want %v", got, want)
	}
	// Its claims would be refused: the list says no more than the claim.
	for id, code := range map[int64]string{one: "limit_reached", daily: quan.EDAILYLIMIT, weekly: quan.EWEEKLYLIMIT, soldOut: "sold_out", capped: quan.ESHOPDAILYCAP} {
		if r := ts.claim(t, u7, id); r.Status != http.StatusConflict || r.Problem.Code != code {
			t.Errorf("claim of hidden template %d: %d %q, want 409 %q", id, r.Status, r.Problem.Code, code)
		}
	}
	// The next day, a Monday in Shanghai (testNow is a Sunday), the
	// daily and weekly limits and the shop's cap are lifted.
	ts.setNow(testNow.Add(24 * time.Hour))
	u7 = ts.user(t, 7)
	if got, want := ts.centre(t, u7, ""), []int64{capped, soon, weekly, daily, open}; !slices.Equal(got, want) {
		t.Errorf("the next day: %v, want %v", got, want)
	}

	// Filters: a shop, a category.
	m1 = ts.merchant(t, 1)
	if got := ts.centre(t, u7, "shop=2"); !slices.Equal(got, []int64{capped}) {
		t.Errorf("shop=2: %v", got)
	}
	if got := ts.centre(t, u7, "category=%E5%99%A8%E5%85%B7"); !slices.Equal(got, []int64{capped}) {
		t.Errorf("category=器具: %v", got)
	}
	// Only a shopper has one; its parameters are checked.
	ts.do(t, "GET", "/api/v1/me/claimable", m1, nil).want(t, http.StatusForbidden, quan.EFORBIDDEN)
	for q, field := range map[string]string{"offset=1": "offset", "limit=101": "limit", "limit=0": "limit", "cursor=x": "cursor", "cursor=-1": "cursor", "shop=0": "shop"} {
		if r := ts.do(t, "GET", "/api/v1/me/claimable?"+q, u7, nil); r.Status != http.StatusBadRequest || !r.hasField(field) {
			t.Errorf("?%s: %d %+v, want 400 naming %s", q, r.Status, r.Problem, field)
		}
	}
}

// TestClaimCentrePages: 150 active templates, of two shops and two
// categories, page through completely: each once, newest first, with
// and without filters.
func TestClaimCentrePages(t *testing.T) {
	ts := newTestServer(t)
	m1, m2 := ts.merchant(t, 1), ts.merchant(t, 2)
	u := ts.user(t, 7)
	var all, shop2, drinks []int64
	for i := range 150 {
		tok, shop := m1, int64(1)
		if i%3 == 0 {
			tok, shop = m2, 2
		}
		cat := "器具"
		if i%2 == 0 {
			cat = "饮品"
		}
		tpl := ts.create(t, tok, displayTemplate(cat, "tea"))
		ts.do(t, "POST", loc(tpl.ID)+"/activate", tok, nil).want(t, http.StatusOK, "")
		all = append([]int64{tpl.ID}, all...)
		if shop == 2 {
			shop2 = append([]int64{tpl.ID}, shop2...)
		}
		if cat == "饮品" {
			drinks = append([]int64{tpl.ID}, drinks...)
		}
		if i%10 == 0 {
			ts.create(t, tok, displayTemplate(cat, "tea")) // drafts between them
		}
	}
	for _, c := range []struct {
		query string
		want  []int64
	}{
		{"limit=20", all},
		{"limit=7", all},
		{"limit=100", all},
		{"limit=9&shop=2", shop2},
		{"limit=11&category=%E9%A5%AE%E5%93%81", drinks},
	} {
		if got := ts.pageAll(t, u, "/api/v1/me/claimable?"+c.query); !slices.Equal(got, c.want) {
			t.Errorf("?%s: %d templates %v, want %d", c.query, len(got), got, len(c.want))
		}
	}
}
