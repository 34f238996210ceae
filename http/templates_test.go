package http_test

import (
	"encoding/base64"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/quanhq/quan"
	qhttp "github.com/quanhq/quan/http"
)

func TestCreateTemplate(t *testing.T) {
	ts := newTestServer(t)
	tok := ts.merchant(t, 1001)
	kinds := map[string]map[string]any{
		"direct":    {"amount": 500},
		"threshold": {"amount": 1000, "threshold": 10000},
		"discount":  {"rate": 85, "cap": 2000, "threshold": 5000},
		"step":      {"amount": 1000, "step": 10000, "cap": 5000},
		"composite": {"amount": 1000, "threshold": 10000, "rate": 90, "cap": 3000},
	}
	for kind, rule := range kinds {
		t.Run(kind, func(t *testing.T) {
			body := validTemplate()
			body["kind"], body["rule"] = kind, rule
			r := ts.do(t, "POST", "/api/v1/templates", tok, body)
			r.want(t, http.StatusCreated, "")
			var got quan.Template
			r.decode(t, &got)
			if got.ID <= 0 || got.ShopNo != 1001 || got.Status != quan.TemplateDraft || string(got.Kind) != kind ||
				got.Stock != 1000 || got.TotalStock != 1000 || got.CreatedBy != "merchant:1001" {
				t.Fatalf("created %+v", got)
			}
			if loc := r.Header.Get("Location"); loc != fmt.Sprintf("/api/v1/templates/%d", got.ID) {
				t.Fatalf("Location %q", loc)
			}
			var again quan.Template
			ts.do(t, "GET", loc(got.ID), tok, nil).decode(t, &again)
			if again.Rule != got.Rule || !again.IssueEnd.Equal(got.IssueEnd) || again.Name != got.Name {
				t.Fatalf("read back %+v, want %+v", again, got)
			}
		})
	}
}

// TestTemplateStacking: stacking and priority are taken, returned and
// edited; a template that names none stacks with any coupon.
func TestTemplateStacking(t *testing.T) {
	ts := newTestServer(t)
	tok := ts.merchant(t, 1001)
	var plain quan.Template
	ts.do(t, "POST", "/api/v1/templates", tok, validTemplate()).decode(t, &plain)
	if plain.Stacking != quan.StackAny || plain.Priority != 0 {
		t.Fatalf("a template naming no stacking: %q priority %d, want any 0", plain.Stacking, plain.Priority)
	}
	body := validTemplate()
	body["stacking"], body["priority"] = "withPlatform", 12
	r := ts.do(t, "POST", "/api/v1/templates", tok, body)
	r.want(t, http.StatusCreated, "")
	var got quan.Template
	r.decode(t, &got)
	var again quan.Template
	ts.do(t, "GET", loc(got.ID), tok, nil).decode(t, &again)
	if again.Stacking != quan.StackWithPlatform || again.Priority != 12 {
		t.Fatalf("read back stacking %q priority %d, want withPlatform 12", again.Stacking, again.Priority)
	}
	r = ts.do(t, "PATCH", loc(got.ID), tok, map[string]any{"stacking": "exclusive", "priority": 3})
	r.want(t, http.StatusOK, "")
	r.decode(t, &again)
	if again.Stacking != quan.StackExclusive || again.Priority != 3 {
		t.Fatalf("edited stacking %q priority %d, want exclusive 3", again.Stacking, again.Priority)
	}
	var hist struct{ Items []quan.AuditEntry }
	ts.do(t, "GET", loc(got.ID)+"/history", tok, nil).decode(t, &hist)
	if n := len(hist.Items); n != 2 || len(hist.Items[1].Changes) != 2 || hist.Items[1].Changes[0].Field != "stacking" || hist.Items[1].Changes[1].Field != "priority" {
		t.Fatalf("history %+v: want the edit to list stacking and priority", hist.Items)
	}

	t.Run("ErrPlatformWithPlatform", func(t *testing.T) {
		body := validTemplate()
		body["source"], body["shopNo"], body["stacking"] = "platform", 1001, "withPlatform"
		r := ts.do(t, "POST", "/api/v1/templates", ts.token(t, quan.Identity{Role: quan.RoleAdmin, Subject: "ops"}), body)
		r.want(t, http.StatusBadRequest, quan.EINVALID)
		if !r.hasField("stacking") {
			t.Fatalf("errors %+v do not name stacking", r.Problem.Errors)
		}
	})
}

func loc(id int64) string { return fmt.Sprintf("/api/v1/templates/%d", id) }

// TestCreateTemplateValidation sends one broken field at a time and checks
// the problem names it.
func TestCreateTemplateValidation(t *testing.T) {
	ts := newTestServer(t)
	tok := ts.merchant(t, 1001)
	end := testNow.Add(30 * 24 * time.Hour)
	tests := []struct {
		name  string
		patch map[string]any
		field string
	}{
		{"NameMissing", map[string]any{"name": "  "}, "name"},
		{"NameTooLong", map[string]any{"name": strings.Repeat("券", 65)}, "name"},
		{"DescriptionTooLong", map[string]any{"description": strings.Repeat("x", 513)}, "description"},
		{"NameControl", map[string]any{"name": "满100\a减10"}, "name"},
		{"NameNUL", map[string]any{"name": "a\x00b"}, "name"},
		{"NameNewline", map[string]any{"name": "满100\n减10"}, "name"},
		{"NameTab", map[string]any{"name": "满100\t减10"}, "name"},
		{"NameDEL", map[string]any{"name": "a\x7fb"}, "name"},
		{"NameBidiOverride", map[string]any{"name": "01\u202Egnp.exe"}, "name"},
		{"NameBidiIsolate", map[string]any{"name": "\u2066x\u2069"}, "name"},
		{"DescriptionEscape", map[string]any{"description": "sale\x1b[2J"}, "description"},
		{"DescriptionCarriageReturn", map[string]any{"description": "line\r\nline"}, "description"},
		{"DescriptionBidiEmbedding", map[string]any{"description": "\u202Bsale"}, "description"},
		{"KindMissing", map[string]any{"kind": ""}, "kind"},
		{"KindUnknown", map[string]any{"kind": "bogus"}, "kind"},
		{"DirectNoAmount", map[string]any{"kind": "direct", "rule": map[string]any{}}, "rule.amount"},
		{"DirectWithThreshold", map[string]any{"kind": "direct", "rule": map[string]any{"amount": 5, "threshold": 10}}, "rule.threshold"},
		{"ThresholdNoThreshold", map[string]any{"rule": map[string]any{"amount": 1000}}, "rule.threshold"},
		{"ThresholdAmountAbove", map[string]any{"rule": map[string]any{"amount": 2000, "threshold": 1000}}, "rule.amount"},
		{"AmountNegative", map[string]any{"rule": map[string]any{"amount": -1, "threshold": 1000}}, "rule.amount"},
		{"AmountTooLarge", map[string]any{"kind": "direct", "rule": map[string]any{"amount": quan.MaxAmount + 1}}, "rule.amount"},
		{"DiscountRateZero", map[string]any{"kind": "discount", "rule": map[string]any{"rate": 0}}, "rule.rate"},
		{"DiscountRate100", map[string]any{"kind": "discount", "rule": map[string]any{"rate": 100}}, "rule.rate"},
		{"DiscountWithAmount", map[string]any{"kind": "discount", "rule": map[string]any{"rate": 80, "amount": 5}}, "rule.amount"},
		{"StepNoCap", map[string]any{"kind": "step", "rule": map[string]any{"amount": 10, "step": 100}}, "rule.cap"},
		{"StepNoStep", map[string]any{"kind": "step", "rule": map[string]any{"amount": 10, "cap": 100}}, "rule.step"},
		{"StepCapBelowAmount", map[string]any{"kind": "step", "rule": map[string]any{"amount": 50, "step": 100, "cap": 10}}, "rule.cap"},
		{"CompositeNoThreshold", map[string]any{"kind": "composite", "rule": map[string]any{"amount": 10, "rate": 90}}, "rule.threshold"},
		{"CompositeNoAmount", map[string]any{"kind": "composite", "rule": map[string]any{"threshold": 100, "rate": 90}}, "rule.amount"},
		{"CompositeAmountAboveThreshold", map[string]any{"kind": "composite", "rule": map[string]any{"amount": 200, "threshold": 100, "rate": 90}}, "rule.amount"},
		{"CompositeNoRate", map[string]any{"kind": "composite", "rule": map[string]any{"amount": 10, "threshold": 100}}, "rule.rate"},
		{"CompositeRate100", map[string]any{"kind": "composite", "rule": map[string]any{"amount": 10, "threshold": 100, "rate": 100}}, "rule.rate"},
		{"CompositeCapBelowAmount", map[string]any{"kind": "composite", "rule": map[string]any{"amount": 50, "threshold": 100, "rate": 90, "cap": 10}}, "rule.cap"},
		{"CompositeWithStep", map[string]any{"kind": "composite", "rule": map[string]any{"amount": 10, "threshold": 100, "rate": 90, "step": 5}}, "rule.step"},
		{"StackingUnknown", map[string]any{"stacking": "sometimes"}, "stacking"},
		{"PriorityNegative", map[string]any{"priority": -1}, "priority"},
		{"PriorityTooHigh", map[string]any{"priority": quan.MaxPriority + 1}, "priority"},
		{"SourceMissing", map[string]any{"source": ""}, "source"},
		{"SourceUnknown", map[string]any{"source": "bank"}, "source"},
		{"ScopeMissing", map[string]any{"scope": map[string]any{}}, "scope.type"},
		{"ScopeUnknown", map[string]any{"scope": map[string]any{"type": "brands"}}, "scope.type"},
		{"ScopeAllWithIDs", map[string]any{"scope": map[string]any{"type": "all", "ids": []string{"a"}}}, "scope.ids"},
		{"ScopeGoodsEmpty", map[string]any{"scope": map[string]any{"type": "goods"}}, "scope.ids"},
		{"ScopeDuplicateID", map[string]any{"scope": map[string]any{"type": "categories", "ids": []string{"c1", "c1"}}}, "scope.ids[1]"},
		{"ScopeBlankID", map[string]any{"scope": map[string]any{"type": "goods", "ids": []string{" "}}}, "scope.ids[0]"},
		{"IssueStartMissing", map[string]any{"issueStart": nil}, "issueStart"},
		{"IssueEndMissing", map[string]any{"issueEnd": nil}, "issueEnd"},
		{"IssueEndBeforeStart", map[string]any{"issueEnd": testNow.Add(-2 * time.Hour).Format(time.RFC3339)}, "issueEnd"},
		{"ValidityMissing", map[string]any{"validity": map[string]any{}}, "validity.type"},
		{"ValidityUnknown", map[string]any{"validity": map[string]any{"type": "forever"}}, "validity.type"},
		{"RelativeNoHours", map[string]any{"validity": map[string]any{"type": "relative"}}, "validity.hours"},
		{"RelativeWithWindow", map[string]any{"validity": map[string]any{"type": "relative", "hours": 1, "start": testNow.Format(time.RFC3339)}}, "validity"},
		{"FixedNoStart", map[string]any{"validity": map[string]any{"type": "fixed", "end": end.Format(time.RFC3339)}}, "validity.start"},
		{"FixedEndBeforeStart", map[string]any{"validity": map[string]any{"type": "fixed", "start": testNow.Format(time.RFC3339), "end": testNow.Add(-time.Hour).Format(time.RFC3339)}}, "validity.end"},
		{"FixedPastTemplateEnd", map[string]any{"validity": map[string]any{"type": "fixed", "start": testNow.Format(time.RFC3339), "end": end.Add(time.Hour).Format(time.RFC3339)}}, "validity.end"},
		{"FixedWithHours", map[string]any{"validity": map[string]any{"type": "fixed", "start": testNow.Format(time.RFC3339), "end": end.Format(time.RFC3339), "hours": 3}}, "validity.hours"},
		{"PerUserLimitZero", map[string]any{"perUserLimit": 0}, "perUserLimit"},
		{"PerUserLimitTooHigh", map[string]any{"perUserLimit": 101}, "perUserLimit"},
		{"StockZero", map[string]any{"stock": 0}, "stock"},
		{"StockTooHigh", map[string]any{"stock": quan.MaxStock + 1}, "stock"},
		{"ShopOfAnother", map[string]any{"shopNo": 2002}, "shopNo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := validTemplate()
			maps.Copy(body, tt.patch)
			for k, v := range tt.patch {
				if v == nil {
					delete(body, k)
				}
			}
			r := ts.do(t, "POST", "/api/v1/templates", tok, body)
			r.want(t, http.StatusBadRequest, quan.EINVALID)
			if !r.hasField(tt.field) {
				t.Fatalf("errors %+v do not name %q", r.Problem.Errors, tt.field)
			}
		})
	}

	t.Run("EveryProblemAtOnce", func(t *testing.T) {
		r := ts.do(t, "POST", "/api/v1/templates", tok, map[string]any{})
		r.want(t, http.StatusBadRequest, quan.EINVALID)
		for _, f := range []string{"name", "kind", "source", "scope.type", "issueStart", "issueEnd", "validity.type", "perUserLimit", "stock"} {
			if !r.hasField(f) {
				t.Errorf("errors %+v do not name %q", r.Problem.Errors, f)
			}
		}
	})
	t.Run("NothingStored", func(t *testing.T) {
		var page struct{ Total int }
		ts.do(t, "GET", "/api/v1/templates", tok, nil).decode(t, &page)
		if page.Total != 0 {
			t.Fatalf("invalid creates stored %d templates", page.Total)
		}
	})
}

func TestBadRequestBodies(t *testing.T) {
	ts := newTestServer(t)
	tok := ts.merchant(t, 1001)
	tests := []struct {
		name, body, field string
	}{
		{"NotJSON", "{name:", ""},
		{"Empty", "", ""},
		{"UnknownField", `{"nmae":"x"}`, "nmae"},
		{"WrongType", `{"stock":"many"}`, "stock"},
		{"TwoValues", `{} {}`, ""},
		{"BadTime", `{"issueStart":"tomorrow"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ts.do(t, "POST", "/api/v1/templates", tok, tt.body)
			r.want(t, http.StatusBadRequest, quan.EINVALID)
			if r.Problem.Detail == "" {
				t.Fatal("no detail")
			}
			if tt.field != "" && !r.hasField(tt.field) {
				t.Fatalf("errors %+v do not name %q", r.Problem.Errors, tt.field)
			}
		})
	}
	t.Run("TooLarge", func(t *testing.T) {
		r := ts.do(t, "POST", "/api/v1/templates", tok, `{"name":"`+strings.Repeat("x", 2<<20)+`"}`)
		r.want(t, http.StatusRequestEntityTooLarge, "request_too_large")
	})
}

func TestIdentity(t *testing.T) {
	ts := newTestServer(t)
	mine := ts.merchant(t, 1001)
	tpl := ts.create(t, mine, validTemplate())
	other := ts.merchant(t, 2002)
	user := ts.token(t, quan.Identity{Role: quan.RoleUser, UserID: 42})
	admin := ts.token(t, quan.Identity{Role: quan.RoleAdmin, Subject: "ops"})

	expired := func() string {
		saved := ts.clock()
		ts.setNow(saved.Add(-2 * time.Hour))
		defer func() { ts.setNow(saved) }()
		return ts.merchant(t, 1001) // valid for one hour, two hours ago
	}()
	// tampered claims shop 1001 with the signature of shop 2002's token.
	parts := strings.Split(other, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	forged := strings.Replace(string(payload), `"shop":2002`, `"shop":1001`, 1)
	if forged == string(payload) {
		t.Fatalf("payload %s has no shop claim", payload)
	}
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(forged)) + "." + parts[2]
	unsigned := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."

	// A shopper reads templates too, their public view (TestPublicTemplate):
	// GET /templates and GET /templates/{id} are not here.
	routes := []struct{ method, path string }{
		{"POST", "/api/v1/templates"},
		{"PATCH", loc(tpl.ID)},
		{"POST", loc(tpl.ID) + "/activate"},
		{"POST", loc(tpl.ID) + "/pause"},
		{"POST", loc(tpl.ID) + "/resume"},
		{"POST", loc(tpl.ID) + "/terminate"},
		{"POST", loc(tpl.ID) + "/stock"},
		{"GET", loc(tpl.ID) + "/history"},
	}
	for _, rt := range routes {
		name := rt.method + " " + strings.ReplaceAll(rt.path, "/", "_")
		body := any(nil)
		if rt.method != "GET" {
			body = "{}"
		}
		t.Run(name, func(t *testing.T) {
			for _, c := range []struct {
				who, token string
				status     int
				code       string
			}{
				{"NoToken", "", 401, quan.EUNAUTHORIZED},
				{"Expired", expired, 401, quan.EUNAUTHORIZED},
				{"Tampered", tampered, 401, quan.EUNAUTHORIZED},
				{"AlgNone", unsigned, 401, quan.EUNAUTHORIZED},
				{"Garbage", "not-a-token", 401, quan.EUNAUTHORIZED},
				{"User", user, 403, quan.EFORBIDDEN},
			} {
				r := ts.do(t, rt.method, rt.path, c.token, body)
				if r.Status != c.status || r.Problem.Code != c.code {
					t.Errorf("%s: got %d %q, want %d %q", c.who, r.Status, r.Problem.Code, c.status, c.code)
				}
				if c.status == 401 && r.Header.Get("WWW-Authenticate") == "" {
					t.Errorf("%s: 401 without WWW-Authenticate", c.who)
				}
			}
			if strings.Contains(rt.path, "/templates/") {
				r := ts.do(t, rt.method, rt.path, other, body)
				r.want(t, http.StatusNotFound, quan.ENOTFOUND)
				if strings.Contains(string(r.Body), tpl.Name) {
					t.Fatal("404 reveals the template")
				}
			}
		})
	}
	t.Run("SecretOfAnotherServer", func(t *testing.T) {
		foreign, err := qhttp.NewTokens([]byte("another-secret-another-secret-another"), nil)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := foreign.Mint(quan.Identity{Role: quan.RoleMerchant, ShopNo: 1001}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		r := ts.do(t, "GET", loc(tpl.ID), tok, nil)
		r.want(t, 401, quan.EUNAUTHORIZED)
	})
	t.Run("AdminSeesEveryShop", func(t *testing.T) {
		ts.do(t, "GET", loc(tpl.ID), admin, nil).want(t, 200, "")
		var page struct{ Total int }
		ts.do(t, "GET", "/api/v1/templates?shopNo=1001", admin, nil).decode(t, &page)
		if page.Total != 1 {
			t.Fatalf("admin sees %d templates of shop 1001", page.Total)
		}
	})
	t.Run("OtherShopListsNothing", func(t *testing.T) {
		var page struct{ Total int }
		ts.do(t, "GET", "/api/v1/templates", other, nil).decode(t, &page)
		if page.Total != 0 {
			t.Fatalf("shop 2002 sees %d templates of shop 1001", page.Total)
		}
	})
	t.Run("PlatformSourceNeedsAdmin", func(t *testing.T) {
		body := validTemplate()
		body["source"] = "platform"
		ts.do(t, "POST", "/api/v1/templates", mine, body).want(t, 403, quan.EFORBIDDEN)
		body["shopNo"] = 1001
		got := ts.create(t, admin, body)
		if got.Source != quan.SourcePlatform || got.ShopNo != 1001 || got.CreatedBy != "admin:ops" {
			t.Fatalf("admin created %+v", got)
		}
	})
	t.Run("AdminNeedsShopNo", func(t *testing.T) {
		r := ts.do(t, "POST", "/api/v1/templates", admin, validTemplate())
		r.want(t, 400, quan.EINVALID)
		if !r.hasField("shopNo") {
			t.Fatalf("errors %+v", r.Problem.Errors)
		}
	})
}

func TestTransitions(t *testing.T) {
	ts := newTestServer(t)
	tok := ts.merchant(t, 1001)
	// reach returns a template of the given status.
	reach := func(t *testing.T, status quan.TemplateStatus) int64 {
		t.Helper()
		id := ts.create(t, tok, validTemplate()).ID
		steps := map[quan.TemplateStatus][]string{
			quan.TemplateDraft:  nil,
			quan.TemplateActive: {"activate"},
			quan.TemplatePaused: {"activate", "pause"},
			quan.TemplateEnded:  {"activate", "terminate"},
		}[status]
		for _, s := range steps {
			ts.do(t, "POST", loc(id)+"/"+s, tok, nil).want(t, 200, "")
		}
		return id
	}
	tests := []struct {
		from   quan.TemplateStatus
		action string
		to     quan.TemplateStatus // "" means refused with illegal_transition
	}{
		{quan.TemplateDraft, "activate", quan.TemplateActive},
		{quan.TemplateDraft, "pause", ""},
		{quan.TemplateDraft, "resume", ""},
		{quan.TemplateDraft, "terminate", quan.TemplateEnded},
		{quan.TemplateActive, "activate", ""},
		{quan.TemplateActive, "pause", quan.TemplatePaused},
		{quan.TemplateActive, "resume", ""},
		{quan.TemplateActive, "terminate", quan.TemplateEnded},
		{quan.TemplatePaused, "activate", ""},
		{quan.TemplatePaused, "pause", ""},
		{quan.TemplatePaused, "resume", quan.TemplateActive},
		{quan.TemplatePaused, "terminate", quan.TemplateEnded},
		{quan.TemplateEnded, "activate", ""},
		{quan.TemplateEnded, "pause", ""},
		{quan.TemplateEnded, "resume", ""},
		{quan.TemplateEnded, "terminate", ""},
	}
	for _, tt := range tests {
		name := fmt.Sprintf("%s_%s", tt.from, tt.action)
		t.Run(name, func(t *testing.T) {
			id := reach(t, tt.from)
			r := ts.do(t, "POST", loc(id)+"/"+tt.action, tok, nil)
			var got quan.Template
			if tt.to == "" {
				r.want(t, http.StatusConflict, quan.ETRANSITION)
				ts.do(t, "GET", loc(id), tok, nil).decode(t, &got)
				if got.Status != tt.from {
					t.Fatalf("refused change moved status to %s", got.Status)
				}
				return
			}
			r.want(t, 200, "")
			r.decode(t, &got)
			if got.Status != tt.to {
				t.Fatalf("status %s, want %s", got.Status, tt.to)
			}
		})
	}
	t.Run("ActivateAfterWindowClosed", func(t *testing.T) {
		id := reach(t, quan.TemplateDraft)
		ts.setNow(testNow.Add(31 * 24 * time.Hour))
		defer func() { ts.setNow(testNow) }()
		r := ts.do(t, "POST", loc(id)+"/activate", ts.merchant(t, 1001), nil)
		r.want(t, 400, quan.EINVALID)
		if !r.hasField("issueEnd") {
			t.Fatalf("errors %+v", r.Problem.Errors)
		}
	})
	t.Run("UnknownTemplate", func(t *testing.T) {
		ts.do(t, "POST", loc(999999)+"/activate", tok, nil).want(t, 404, quan.ENOTFOUND)
		ts.do(t, "POST", "/api/v1/templates/abc/activate", tok, nil).want(t, 404, quan.ENOTFOUND)
	})
}

func TestEditTemplate(t *testing.T) {
	ts := newTestServer(t)
	tok := ts.merchant(t, 1001)
	tpl := ts.create(t, tok, validTemplate())

	t.Run("DraftMerges", func(t *testing.T) {
		r := ts.do(t, "PATCH", loc(tpl.ID), tok, `{"name":"满200减30","rule":{"amount":3000,"threshold":20000},"stock":50}`)
		r.want(t, 200, "")
		var got quan.Template
		r.decode(t, &got)
		if got.Name != "满200减30" || got.Rule.Amount != 3000 || got.Rule.Threshold != 20000 || got.Stock != 50 || got.TotalStock != 50 ||
			got.Description != tpl.Description || got.PerUserLimit != tpl.PerUserLimit {
			t.Fatalf("edited %+v", got)
		}
	})
	t.Run("InvalidEditChangesNothing", func(t *testing.T) {
		r := ts.do(t, "PATCH", loc(tpl.ID), tok, `{"name":"","perUserLimit":0}`)
		r.want(t, 400, quan.EINVALID)
		if !r.hasField("name") || !r.hasField("perUserLimit") {
			t.Fatalf("errors %+v", r.Problem.Errors)
		}
		var got quan.Template
		ts.do(t, "GET", loc(tpl.ID), tok, nil).decode(t, &got)
		if got.Name != "满200减30" {
			t.Fatalf("invalid edit stored: %+v", got)
		}
	})
	t.Run("InvisibleCharacters", func(t *testing.T) {
		for field, value := range map[string]string{"name": "满200\u202E减30", "description": "a\x00b"} {
			r := ts.do(t, "PATCH", loc(tpl.ID), tok, map[string]any{field: value})
			r.want(t, 400, quan.EINVALID)
			if !r.hasField(field) {
				t.Fatalf("errors %+v do not name %q", r.Problem.Errors, field)
			}
		}
		var got quan.Template
		ts.do(t, "GET", loc(tpl.ID), tok, nil).decode(t, &got)
		if got.Name != "满200减30" || got.Description != tpl.Description {
			t.Fatalf("invalid edit stored: %+v", got)
		}
	})
	t.Run("MultiLineDescription", func(t *testing.T) {
		const desc = "满200减30\n\t- 全场通用\n\t- 不与其他券同享"
		r := ts.do(t, "PATCH", loc(tpl.ID), tok, map[string]any{"description": desc})
		r.want(t, 200, "")
		var got quan.Template
		ts.do(t, "GET", loc(tpl.ID), tok, nil).decode(t, &got)
		if got.Description != desc {
			t.Fatalf("description %q, want %q", got.Description, desc)
		}
	})
	t.Run("UnknownField", func(t *testing.T) {
		r := ts.do(t, "PATCH", loc(tpl.ID), tok, `{"status":"active"}`)
		r.want(t, 400, quan.EINVALID)
	})
	t.Run("NotDraft", func(t *testing.T) {
		ts.do(t, "POST", loc(tpl.ID)+"/activate", tok, nil).want(t, 200, "")
		ts.do(t, "PATCH", loc(tpl.ID), tok, `{"name":"late"}`).want(t, 409, quan.ENOTDRAFT)
	})
}

func TestIncreaseStock(t *testing.T) {
	ts := newTestServer(t)
	tok := ts.merchant(t, 1001)
	tpl := ts.create(t, tok, validTemplate())
	ts.do(t, "POST", loc(tpl.ID)+"/activate", tok, nil).want(t, 200, "")

	r := ts.do(t, "POST", loc(tpl.ID)+"/stock", tok, map[string]any{"amount": 500})
	r.want(t, 200, "")
	var got quan.Template
	r.decode(t, &got)
	if got.Stock != 1500 || got.TotalStock != 1500 {
		t.Fatalf("after +500: stock %d total %d", got.Stock, got.TotalStock)
	}
	for _, amount := range []int64{0, -5} {
		r := ts.do(t, "POST", loc(tpl.ID)+"/stock", tok, map[string]any{"amount": amount})
		r.want(t, 400, quan.EINVALID)
		if !r.hasField("amount") {
			t.Fatalf("errors %+v", r.Problem.Errors)
		}
	}
	ts.do(t, "POST", loc(tpl.ID)+"/stock", tok, map[string]any{"amount": quan.MaxStock}).want(t, 409, quan.ESTOCKLIMIT)
	ts.do(t, "POST", loc(tpl.ID)+"/terminate", tok, nil).want(t, 200, "")
	ts.do(t, "POST", loc(tpl.ID)+"/stock", tok, map[string]any{"amount": 1}).want(t, 409, quan.ETRANSITION)
	ts.do(t, "GET", loc(tpl.ID), tok, nil).decode(t, &got)
	if got.Stock != 1500 {
		t.Fatalf("refused increases changed the stock to %d", got.Stock)
	}
}

func TestListTemplates(t *testing.T) {
	ts := newTestServer(t)
	tok := ts.merchant(t, 1001)
	var ids []int64
	for i := range 25 {
		body := validTemplate()
		body["name"] = fmt.Sprintf("coupon %02d", i)
		if i%5 == 0 {
			body["kind"], body["rule"] = "direct", map[string]any{"amount": 100}
			body["name"] = fmt.Sprintf("Spring 100%%_off %02d", i)
		}
		ids = append(ids, ts.create(t, tok, body).ID)
	}
	for _, id := range ids[:3] {
		ts.do(t, "POST", loc(id)+"/activate", tok, nil).want(t, 200, "")
	}
	ts.create(t, ts.merchant(t, 2002), validTemplate()) // another shop's

	type page struct {
		Items         []quan.Template
		Total         int
		Offset, Limit int
	}
	list := func(t *testing.T, query string) page {
		t.Helper()
		var p page
		r := ts.do(t, "GET", "/api/v1/templates"+query, tok, nil)
		r.want(t, 200, "")
		r.decode(t, &p)
		return p
	}
	t.Run("FirstPageNewestFirst", func(t *testing.T) {
		p := list(t, "")
		if p.Total != 25 || len(p.Items) != 20 || p.Limit != 20 || p.Items[0].ID != ids[24] || p.Items[19].ID != ids[5] {
			t.Fatalf("page: total %d, %d items, limit %d", p.Total, len(p.Items), p.Limit)
		}
	})
	t.Run("LastPage", func(t *testing.T) {
		p := list(t, "?limit=10&offset=20")
		if p.Total != 25 || len(p.Items) != 5 || p.Items[4].ID != ids[0] {
			t.Fatalf("page: total %d, %d items", p.Total, len(p.Items))
		}
	})
	t.Run("PastTheEnd", func(t *testing.T) {
		p := list(t, "?offset=100")
		if p.Total != 25 || len(p.Items) != 0 || p.Items == nil {
			t.Fatalf("page: total %d, items %v", p.Total, p.Items)
		}
	})
	t.Run("ByStatus", func(t *testing.T) {
		if p := list(t, "?status=active"); p.Total != 3 {
			t.Fatalf("active: %d", p.Total)
		}
	})
	t.Run("ByKind", func(t *testing.T) {
		if p := list(t, "?kind=direct"); p.Total != 5 {
			t.Fatalf("direct: %d", p.Total)
		}
	})
	t.Run("ByName", func(t *testing.T) {
		if p := list(t, "?name=SPRING"); p.Total != 5 {
			t.Fatalf("name spring: %d", p.Total)
		}
		if p := list(t, "?name=100%25_"); p.Total != 5 {
			t.Fatalf("name with wildcards: %d", p.Total)
		}
		if p := list(t, "?name=%25off"); p.Total != 0 {
			t.Fatalf("%% must be literal: %d", p.Total)
		}
		if p := list(t, "?name=0_"); p.Total != 0 {
			t.Fatalf("_ must be literal: %d", p.Total)
		}
	})
	t.Run("Combined", func(t *testing.T) {
		if p := list(t, "?status=active&kind=direct"); p.Total != 1 {
			t.Fatalf("active direct: %d", p.Total)
		}
		if p := list(t, "?status=draft&kind=threshold&name=coupon"); p.Total != 18 {
			t.Fatalf("draft threshold coupon: %d", p.Total)
		}
	})
	t.Run("BadParameters", func(t *testing.T) {
		r := ts.do(t, "GET", "/api/v1/templates?status=gone&kind=free&limit=1000&offset=-1", tok, nil)
		r.want(t, 400, quan.EINVALID)
		for _, f := range []string{"status", "kind", "limit", "offset"} {
			if !r.hasField(f) {
				t.Errorf("errors %+v do not name %s", r.Problem.Errors, f)
			}
		}
		ts.do(t, "GET", "/api/v1/templates?limit=ten", tok, nil).want(t, 400, quan.EINVALID)
	})
}

func TestHistory(t *testing.T) {
	ts := newTestServer(t)
	tok := ts.merchant(t, 1001)
	tpl := ts.create(t, tok, validTemplate())
	ts.do(t, "PATCH", loc(tpl.ID), tok, `{"name":"renamed"}`).want(t, 200, "")
	ts.setNow(testNow.Add(time.Minute))
	defer func() { ts.setNow(testNow) }()
	ts.do(t, "POST", loc(tpl.ID)+"/activate", tok, nil).want(t, 200, "")
	ts.do(t, "POST", loc(tpl.ID)+"/stock", tok, `{"amount":7}`).want(t, 200, "")
	ts.do(t, "POST", loc(tpl.ID)+"/pause", tok, nil).want(t, 200, "")
	ts.do(t, "POST", loc(tpl.ID)+"/pause", tok, nil).want(t, 409, quan.ETRANSITION) // refused: not recorded

	var h struct{ Items []quan.AuditEntry }
	ts.do(t, "GET", loc(tpl.ID)+"/history", tok, nil).decode(t, &h)
	var actions []string
	for _, e := range h.Items {
		actions = append(actions, e.Action)
		if e.Actor != "merchant:1001" || e.TemplateID != tpl.ID || e.At.IsZero() {
			t.Errorf("entry %+v", e)
		}
	}
	if got := strings.Join(actions, ","); got != "create,update,activate,increase_stock,pause" {
		t.Fatalf("actions %s", got)
	}
	change := func(e quan.AuditEntry, field string) (string, string) {
		for _, c := range e.Changes {
			if c.Field == field {
				return string(c.Before), string(c.After)
			}
		}
		t.Fatalf("%s entry has no change of %s: %+v", e.Action, field, e.Changes)
		return "", ""
	}
	if b, a := change(h.Items[1], "name"); b != `"满100减10"` || a != `"renamed"` {
		t.Fatalf("name change %s → %s", b, a)
	}
	if b, a := change(h.Items[2], "status"); b != `"draft"` || a != `"active"` {
		t.Fatalf("status change %s → %s", b, a)
	}
	if b, a := change(h.Items[3], "stock"); b != "1000" || a != "1007" {
		t.Fatalf("stock change %s → %s", b, a)
	}
	if !h.Items[2].At.Equal(testNow.Add(time.Minute)) {
		t.Fatalf("activate at %s", h.Items[2].At)
	}
	for _, c := range h.Items[1].Changes {
		if c.Field == "status" || c.Field == "updatedAt" {
			t.Fatalf("update entry lists unchanged field %s", c.Field)
		}
	}
}

func TestOpsEndpoints(t *testing.T) {
	ts := newTestServer(t)
	ts.do(t, "GET", "/healthz", "", nil).want(t, 200, "")
	ts.do(t, "GET", "/readyz", "", nil).want(t, 200, "")
	ts.do(t, "GET", "/api/v1/nothing", "", nil).want(t, 404, quan.ENOTFOUND)
	r := ts.do(t, "DELETE", "/api/v1/templates", ts.merchant(t, 1), nil)
	r.want(t, 405, "method_not_allowed")
	if !strings.Contains(r.Header.Get("Allow"), "POST") {
		t.Fatalf("Allow %q", r.Header.Get("Allow"))
	}
}
