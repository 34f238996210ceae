package http_test

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/facts"
)

const attributesImportPath = "/api/v1/attributes/import"

func attributesPath(user int64) string { return fmt.Sprintf("/api/v1/users/%d/attributes", user) }

func (ts *testServer) facts(t *testing.T, token string, user int64) quan.UserFacts {
	t.Helper()
	r := ts.do(t, "GET", attributesPath(user), token, nil)
	r.want(t, http.StatusOK, "")
	var f quan.UserFacts
	r.decode(t, &f)
	return f
}

// TestAttributesPutGet: an admin replaces a user's facts and reads them;
// the user reads its own; a merchant may neither; each bad fact is a 400
// naming its field.
func TestAttributesPutGet(t *testing.T) {
	ts := newTestServer(t)
	admin := ts.token(t, quan.Identity{Role: quan.RoleAdmin, Subject: "upstream"})
	user := ts.token(t, quan.Identity{Role: quan.RoleUser, UserID: 7})
	merchant := ts.merchant(t, 1001)
	body := map[string]any{"level": 2, "tags": []string{"vip", "new", "vip"}, "registeredAt": "2024-01-02T10:00:00+08:00",
		"region": "上海", "orders": 3, "attrs": map[string]string{"channel": "app"}}

	r := ts.do(t, "PUT", attributesPath(7), admin, body)
	r.want(t, http.StatusOK, "")
	var put quan.UserFacts
	r.decode(t, &put)
	want := quan.UserFacts{UserID: 7, Level: 2, Tags: []string{"vip", "new"}, RegisteredAt: time.Date(2024, 1, 2, 2, 0, 0, 0, time.UTC),
		Region: "上海", Orders: 3, Attrs: map[string]string{"channel": "app"}}
	for _, tok := range []string{"", admin, user} {
		got := put
		if tok != "" {
			got = ts.facts(t, tok, 7)
		}
		if got.UserID != want.UserID || got.Level != want.Level || !slices.Equal(got.Tags, want.Tags) || !got.RegisteredAt.Equal(want.RegisteredAt) ||
			got.Region != want.Region || got.Orders != want.Orders || got.Attrs["channel"] != "app" || len(got.Attrs) != 1 {
			t.Errorf("facts %+v, want %+v", got, want)
		}
	}
	// Nothing on file: zero facts, tags [].
	if r := ts.do(t, "GET", attributesPath(8), admin, nil); !strings.Contains(string(r.Body), `"tags":[]`) || !strings.Contains(string(r.Body), `"userId":8`) {
		t.Errorf("facts of a user with none on file: %s", r.Body)
	}

	ts.do(t, "PUT", attributesPath(7), merchant, body).want(t, http.StatusForbidden, "forbidden")
	ts.do(t, "PUT", attributesPath(7), user, body).want(t, http.StatusForbidden, "forbidden")
	ts.do(t, "GET", attributesPath(7), merchant, nil).want(t, http.StatusForbidden, "forbidden")
	ts.do(t, "GET", attributesPath(8), user, nil).want(t, http.StatusForbidden, "forbidden")
	ts.do(t, "GET", attributesPath(7), "", nil).want(t, http.StatusUnauthorized, "unauthorized")
	ts.do(t, "GET", "/api/v1/users/x/attributes", admin, nil).want(t, http.StatusNotFound, "not_found")

	for _, tc := range []struct {
		name   string
		body   map[string]any
		fields []string
	}{
		{"Negative", map[string]any{"level": -1, "orders": -2}, []string{"level", "orders"}},
		{"TagsTooLong", map[string]any{"tags": []string{"ok", strings.Repeat("t", 65), ""}}, []string{"tags[1]", "tags[2]"}},
		{"TooManyTags", map[string]any{"tags": manyTags(51)}, []string{"tags"}},
		{"AttrValue", map[string]any{"attrs": map[string]string{"vip": strings.Repeat("v", 65)}}, []string{"attrs.vip"}},
		{"Region", map[string]any{"region": strings.Repeat("r", 65)}, []string{"region"}},
		{"OtherUser", map[string]any{"userId": 8}, []string{"userId"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.do(t, "PUT", attributesPath(7), admin, tc.body)
			r.want(t, http.StatusBadRequest, "invalid")
			for _, f := range tc.fields {
				if !r.hasField(f) {
					t.Errorf("no field %q in %s", f, r.Body)
				}
			}
		})
	}
	ts.do(t, "PUT", attributesPath(7), admin, map[string]any{"levle": 1}).want(t, http.StatusBadRequest, "invalid")
	if f := ts.facts(t, admin, 7); f.Level != 2 {
		t.Errorf("a refused put changed the facts: %+v", f)
	}
}

func manyTags(n int) []string {
	tags := make([]string, n)
	for i := range tags {
		tags[i] = fmt.Sprint("t", i)
	}
	return tags
}

// TestAttributesImport: an admin imports a CSV; the good rows replace the
// users' facts, the bad ones come back with their line, user id, reason,
// column and cause, counted by reason; the hot path's cache sees the
// import at once; a merchant may not import; a header naming a fact
// twice imports nothing.
func TestAttributesImport(t *testing.T) {
	ts := newTestServer(t)
	admin := ts.token(t, quan.Identity{Role: quan.RoleAdmin, Subject: "ops"})
	// User 1's facts are in the hot path's cache before the import.
	ts.do(t, "PUT", attributesPath(1), admin, map[string]any{"level": 9, "tags": []string{"old"}}).want(t, http.StatusOK, "")
	if f, err := ts.api.Facts.Facts(t.Context(), 1); err != nil || f.Level != 9 {
		t.Fatalf("Facts(1) = %+v, %v", f, err)
	}
	file := []byte("userId,Level,tags,registeredAt,region,orders,vip,城市\n" +
		"1,2,vip|new,2024-01-02,上海,3,gold,杭州\n" + // line 2
		"2,,a,b,,,,\n" + // line 3: unquoted, b is the registeredAt
		"x,1,,,,,,\n" + // line 4: invalid_id
		"3,high,,,,,,\n" + // line 5: level
		"4,,,2024-13-01,,,,\n" + // line 6: registeredAt
		"5,,,,,-1,,\n" + // line 7: orders
		"1,5,,,,,,\n" + // line 8: duplicate_in_file
		"6,,,,,," + strings.Repeat("g", 65) + ",\n" + // line 9: attribute vip too long
		"7,1,\"a,b\",2024-01-02 10:30,,0,,\n") // line 10
	ts.postForm(t, attributesImportPath, ts.merchant(t, 1001), nil, "facts.csv", file).want(t, http.StatusForbidden, "forbidden")

	wantFailures := []importFailure{
		{3, "2", facts.ImportInvalidAttribute, "registeredAt"},
		{4, "x", quan.ImportInvalidID, ""},
		{5, "3", facts.ImportInvalidAttribute, "Level"},
		{6, "4", facts.ImportInvalidAttribute, "registeredAt"},
		{7, "5", facts.ImportInvalidAttribute, "orders"},
		{8, "1", quan.ImportDuplicateInFile, ""},
		{9, "6", facts.ImportInvalidAttribute, "vip"},
	}
	for range 2 { // the same file again: the same answer and facts
		r := ts.postForm(t, attributesImportPath, admin, nil, "facts.csv", file)
		r.want(t, http.StatusOK, "")
		var res quan.ImportReport
		r.decode(t, &res)
		wantBy := map[string]int64{quan.ImportInvalidID: 1, facts.ImportInvalidAttribute: 5, quan.ImportDuplicateInFile: 1}
		checkImport(t, &res, 9, 2, wantBy, wantFailures)
	}
	cst := time.FixedZone("", 8*3600)
	f := ts.facts(t, admin, 1)
	if f.Level != 2 || !slices.Equal(f.Tags, []string{"vip", "new"}) || !f.RegisteredAt.Equal(time.Date(2024, 1, 2, 0, 0, 0, 0, cst)) ||
		f.Region != "上海" || f.Orders != 3 || f.Attrs["vip"] != "gold" || f.Attrs["城市"] != "杭州" || len(f.Attrs) != 2 {
		t.Errorf("user 1: %+v", f)
	}
	if f := ts.facts(t, admin, 7); !slices.Equal(f.Tags, []string{"a", "b"}) || !f.RegisteredAt.Equal(time.Date(2024, 1, 2, 10, 30, 0, 0, cst)) {
		t.Errorf("user 7: %+v", f)
	}
	for _, u := range []int64{2, 3, 4, 5, 6} {
		if f := ts.facts(t, admin, u); f.Level != 0 || len(f.Tags) != 0 || f.Attrs != nil {
			t.Errorf("user %d of a failed row has %+v", u, f)
		}
	}
	if f, err := ts.api.Facts.Facts(t.Context(), 1); err != nil || f.Level != 2 {
		t.Errorf("Facts(1) after the import = %+v, %v; want the imported level 2", f, err)
	}

	// A header that names the level twice imports nothing.
	r := ts.postForm(t, attributesImportPath, admin, nil, "facts.csv", []byte("userId,level,会员等级\n1,3,4\n"))
	r.want(t, http.StatusBadRequest, "invalid")
	if !r.hasField("file") || !strings.Contains(string(r.Body), "name the same fact") {
		t.Errorf("answer %s", r.Body)
	}
	if f := ts.facts(t, admin, 1); f.Level != 2 {
		t.Errorf("a refused file changed user 1: %+v", f)
	}
	ts.postForm(t, attributesImportPath, admin, nil, "", nil).want(t, http.StatusBadRequest, "invalid")
}

// TestAttributesImportXLSX: a workbook's numbers and Excel dates read as
// typed, and its Chinese headers are the facts.
func TestAttributesImportXLSX(t *testing.T) {
	ts := newTestServer(t)
	admin := ts.token(t, quan.Identity{Role: quan.RoleAdmin, Subject: "ops"})
	f := excelize.NewFile()
	defer f.Close()
	for i, row := range [][]any{
		{"用户ID", "会员等级", "标签", "注册时间", "订单数", "source"},
		{int64(11), 3, "vip,新客", time.Date(2024, 5, 6, 0, 0, 0, 0, time.UTC), 12, "ad"},
		{"12", "1", "", "2023-01-01 08:00:00", "", ""},
	} {
		cell, _ := excelize.CoordinatesToCellName(1, i+1)
		if err := f.SetSheetRow("Sheet1", cell, &row); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := f.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	r := ts.postForm(t, attributesImportPath, admin, nil, "facts.xlsx", buf.Bytes())
	r.want(t, http.StatusOK, "")
	var res quan.ImportReport
	r.decode(t, &res)
	if res.Imported != 2 || res.Failed != 0 {
		t.Errorf("answer %+v", res)
	}
	cst := time.FixedZone("", 8*3600)
	if got := ts.facts(t, admin, 11); got.Level != 3 || got.Orders != 12 || !slices.Equal(got.Tags, []string{"vip", "新客"}) ||
		!got.RegisteredAt.Equal(time.Date(2024, 5, 6, 0, 0, 0, 0, cst)) || got.Attrs["source"] != "ad" {
		t.Errorf("user 11: %+v", got)
	}
	if got := ts.facts(t, admin, 12); got.Level != 1 || !got.RegisteredAt.Equal(time.Date(2023, 1, 1, 8, 0, 0, 0, cst)) || got.Attrs != nil {
		t.Errorf("user 12: %+v", got)
	}
}
