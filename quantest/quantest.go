// Package quantest holds the conformance suites every adapter of a quan
// port runs against a real engine, so that all adapters keep one contract:
// the one written in the port's doc comments, and nothing more.
//
// An adapter's test calls the suite with a factory that returns a fresh,
// empty store and registers its own cleanup with t.Cleanup:
//
//	func TestTemplateStore(t *testing.T) {
//		quantest.TestTemplateStore(t, func(t *testing.T) quan.TemplateStore {
//			db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "quan.db"), nil)
//			...
//			t.Cleanup(func() { db.Close() })
//			return sqlite.NewStore(db)
//		})
//	}
//
// Every subtest gets its own store, so the subtests run in parallel.
//
// TestTaskStore drives quan.TaskStore and quan.CouponStore together with
// the TemplateStore of the same store (TaskStores). Some suites drive a
// use case on an adapter's engines: TestClaims and TestReap run the claims
// on a store, a cache and a bus; TestLongestValues writes the longest
// valid text of claims and distributions. RunBulk measures a bulk
// distribution for an adapter's benchmark.
package quantest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// base is the instant test templates are built around: UTC, and to the
// microsecond, as templates.Service writes every time.
var base = time.Date(2030, 3, 14, 9, 26, 53, 589793000, time.UTC)

// newTemplate returns a valid draft threshold template of shop: goods
// scope, fixed validity, stock 100.
func newTemplate(t testing.TB, shop int64, name string) *quan.Template {
	t.Helper()
	tpl := &quan.Template{
		ShopNo: shop,
		TemplateSpec: quan.TemplateSpec{
			Name:        name,
			Description: "满 100 减 20, 仅限指定商品",
			Kind:        quan.KindThreshold,
			Rule:        quan.Rule{Amount: 2000, Threshold: 10000},
			Source:      quan.SourceShop,
			Scope:       quan.Scope{Kind: quan.ScopeGoods, IDs: []string{"g-1", "g-2", "商品-3"}},
			IssueStart:  base,
			IssueEnd:    base.Add(30 * 24 * time.Hour),
			Validity: quan.Validity{
				Kind:  quan.ValidFixed,
				Start: base.Add(time.Hour),
				End:   base.Add(20 * 24 * time.Hour),
			},
			PerUserLimit: 2,
			CodePrefix:   "Q",
			Stacking:     quan.StackAny,
		},
		Stock:      100,
		TotalStock: 100,
		Status:     quan.TemplateDraft,
		CreatedBy:  fmt.Sprintf("merchant:%d", shop),
		CreatedAt:  base,
		UpdatedAt:  base,
	}
	mustValid(t, tpl)
	return tpl
}

// withKind turns tpl into a valid template of kind k, varying the scope
// and validity too so that every column is exercised.
func withKind(t *testing.T, tpl *quan.Template, k quan.Kind) *quan.Template {
	t.Helper()
	tpl.Kind = k
	switch k {
	case quan.KindDirect:
		tpl.Rule = quan.Rule{Amount: 500}
	case quan.KindThreshold:
		tpl.Rule = quan.Rule{Amount: 2000, Threshold: 10000}
	case quan.KindDiscount:
		tpl.Rule = quan.Rule{Rate: 85, Cap: 5000, Threshold: 3000}
		tpl.Source = quan.SourcePlatform
		tpl.Scope = quan.Scope{Kind: quan.ScopeAll}
		tpl.Validity = quan.Validity{Kind: quan.ValidRelative, Hours: 72}
		tpl.RemindBefore = quan.Duration(24 * time.Hour)
		tpl.RemindChannels = []quan.NotifyType{quan.NotifyEmail, quan.NotifyPopup}
		tpl.RemindLead = quan.Duration(10 * time.Minute)
		tpl.Stacking, tpl.Priority = quan.StackExclusive, 1000
	case quan.KindStep:
		tpl.Rule = quan.Rule{Amount: 500, Step: 5000, Cap: 2000}
		tpl.Scope = quan.Scope{Kind: quan.ScopeCategories, IDs: []string{"c-10"}}
		tpl.Stacking, tpl.Priority = quan.StackWithPlatform, 7
	case quan.KindComposite:
		tpl.Rule = quan.Rule{Amount: 1000, Threshold: 10000, Rate: 90, Cap: 3000}
		tpl.Stacking, tpl.Priority = quan.StackWithShop, 3
	}
	mustValid(t, tpl)
	return tpl
}

func mustValid(t testing.TB, tpl *quan.Template) {
	t.Helper()
	if err := tpl.Validate(); err != nil {
		t.Fatalf("the suite built an invalid template: %v", err)
	}
}

// create stores tpl, by its creator, and returns it with its ID set.
func create(t testing.TB, s quan.TemplateStore, tpl *quan.Template) *quan.Template {
	t.Helper()
	if err := s.CreateTemplate(t.Context(), tpl, tpl.CreatedBy); err != nil {
		t.Fatalf("CreateTemplate(%q): %v", tpl.Name, err)
	}
	return tpl
}

// get returns template id, seen by AnyShop, failing the test if it cannot.
func get(t *testing.T, s quan.TemplateStore, id int64) *quan.Template {
	t.Helper()
	tpl, err := s.Template(t.Context(), quan.AnyShop, id)
	if err != nil {
		t.Fatalf("Template(%d): %v", id, err)
	}
	return tpl
}

// history returns the audit entries of template id, seen by AnyShop.
func history(t *testing.T, s quan.TemplateStore, id int64) []*quan.AuditEntry {
	t.Helper()
	es, err := s.TemplateHistory(t.Context(), quan.AnyShop, id)
	if err != nil {
		t.Fatalf("TemplateHistory(%d): %v", id, err)
	}
	return es
}

// assertTemplate compares got with want field by field: times with
// time.Time.Equal, scope ids as lists (nil and empty alike), the rest
// exactly.
func assertTemplate(t *testing.T, got, want *quan.Template) {
	t.Helper()
	if got == nil {
		t.Fatalf("got no template, want %d %q", want.ID, want.Name)
	}
	times := []struct {
		field     string
		got, want time.Time
	}{
		{"IssueStart", got.IssueStart, want.IssueStart},
		{"IssueEnd", got.IssueEnd, want.IssueEnd},
		{"Validity.Start", got.Validity.Start, want.Validity.Start},
		{"Validity.End", got.Validity.End, want.Validity.End},
		{"CreatedAt", got.CreatedAt, want.CreatedAt},
		{"UpdatedAt", got.UpdatedAt, want.UpdatedAt},
	}
	for _, tm := range times {
		if !tm.got.Equal(tm.want) {
			t.Errorf("template %d: %s = %v, want %v", want.ID, tm.field, tm.got, tm.want)
		}
	}
	if !slices.Equal(got.Scope.IDs, want.Scope.IDs) {
		t.Errorf("template %d: Scope.IDs = %q, want %q", want.ID, got.Scope.IDs, want.Scope.IDs)
	}
	g, w := *got, *want
	for _, tpl := range []*quan.Template{&g, &w} {
		tpl.IssueStart, tpl.IssueEnd = time.Time{}, time.Time{}
		tpl.Validity.Start, tpl.Validity.End = time.Time{}, time.Time{}
		tpl.CreatedAt, tpl.UpdatedAt = time.Time{}, time.Time{}
		tpl.Scope.IDs = nil
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("template %d differs:\n got %+v\nwant %+v", want.ID, g, w)
	}
}

// assertChanges compares audit changes by meaning, not by bytes: an engine
// may store JSON in its own layout (MySQL reorders object keys and adds
// spaces).
func assertChanges(t *testing.T, got, want []quan.FieldChange) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d changes %v, want %d %v", len(got), fieldNames(got), len(want), fieldNames(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Field != w.Field {
			t.Errorf("change %d: field %q, want %q", i, g.Field, w.Field)
			continue
		}
		if !sameJSON(t, g.Before, w.Before) {
			t.Errorf("change of %s: before %s, want %s", w.Field, g.Before, w.Before)
		}
		if !sameJSON(t, g.After, w.After) {
			t.Errorf("change of %s: after %s, want %s", w.Field, g.After, w.After)
		}
	}
}

func fieldNames(cs []quan.FieldChange) []string {
	var names []string
	for _, c := range cs {
		names = append(names, c.Field)
	}
	return names
}

func sameJSON(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Errorf("invalid JSON %q: %v", a, err)
		return false
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Errorf("invalid JSON %q: %v", b, err)
		return false
	}
	return reflect.DeepEqual(x, y)
}

// ids returns the IDs of ts, in order.
func ids(ts []*quan.Template) []int64 {
	out := make([]int64, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}
