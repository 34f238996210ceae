package quantest

import (
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// RulesStores are the ports the rules suite needs of one store.
type RulesStores struct {
	Templates quan.TemplateStore
	Rules     quan.RulesStore
}

// TestRulesStore runs the conformance suite of quan.RulesStore. newStores
// returns fresh, empty stores for each subtest.
func TestRulesStore(t *testing.T, newStores func(t *testing.T) RulesStores) {
	t.Helper()
	run := func(name string, test func(*testing.T, RulesStores)) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, newStores(t))
		})
	}
	run("AddRulesVersion/NumbersVersionsAndStoresEveryField", testRulesVersions)
	run("AddRulesVersion/RecordsAuditEntry", testRulesAudit)
	run("AddRulesVersion/CheckErrorWritesNothing", testRulesCheckError)
	run("AddRulesVersion/ErrNotFoundForAnotherShop", testRulesOtherShop)
	run("AddRulesVersion/ConcurrentChangesGetDistinctVersions", testRulesConcurrent)
	run("RulesVersions/NoneForTemplateWithout", testRulesNone)
}

func addRules(t *testing.T, s RulesStores, shop, id int64, v quan.RulesVersion) quan.RulesVersion {
	t.Helper()
	if err := s.Rules.AddRulesVersion(t.Context(), shop, id, v.CreatedBy, &v, func(*quan.Template, *quan.RulesVersion) error { return nil }); err != nil {
		t.Fatalf("AddRulesVersion(template %d): %v", id, err)
	}
	return v
}

func rulesVersions(t *testing.T, s RulesStores, id int64) []quan.RulesVersion {
	t.Helper()
	vs, err := s.Rules.RulesVersions(t.Context(), id)
	if err != nil {
		t.Fatalf("RulesVersions(%d): %v", id, err)
	}
	return vs
}

func testRulesVersions(t *testing.T, s RulesStores) {
	tpl := newTemplate(t, 1, "rules")
	tpl.Eligibility = "user.level >= 1"
	create(t, s.Templates, tpl)
	other := create(t, s.Templates, newTemplate(t, 1, "other"))
	v1 := addRules(t, s, 1, tpl.ID, quan.RulesVersion{Eligibility: "user.level >= 2", Applies: "order.total >= 100",
		EffectiveAt: base.Add(time.Hour), CreatedBy: "merchant:1", CreatedAt: base.Add(time.Minute)})
	v2 := addRules(t, s, quan.AnyShop, tpl.ID, quan.RulesVersion{Eligibility: `"vip" in user.tags`, ApplyToIssued: true,
		EffectiveAt: base.Add(2 * time.Hour), CreatedBy: "admin:ops", CreatedAt: base.Add(2 * time.Minute)})
	addRules(t, s, 1, other.ID, quan.RulesVersion{Applies: "true", EffectiveAt: base, CreatedBy: "merchant:1", CreatedAt: base})
	if v1.Version != 1 || v2.Version != 2 || v1.TemplateID != tpl.ID || v2.TemplateID != tpl.ID {
		t.Fatalf("versions %d, %d of templates %d, %d: want 1, 2 of %d", v1.Version, v2.Version, v1.TemplateID, v2.TemplateID, tpl.ID)
	}
	got := rulesVersions(t, s, tpl.ID)
	want := []quan.RulesVersion{v1, v2}
	if len(got) != len(want) {
		t.Fatalf("RulesVersions: %d versions, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if !g.EffectiveAt.Equal(w.EffectiveAt) || !g.CreatedAt.Equal(w.CreatedAt) {
			t.Errorf("version %d: times %v, %v, want %v, %v", w.Version, g.EffectiveAt, g.CreatedAt, w.EffectiveAt, w.CreatedAt)
		}
		g.EffectiveAt, g.CreatedAt, w.EffectiveAt, w.CreatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("version %d:\n got %+v\nwant %+v", w.Version, g, w)
		}
	}
	if vs := rulesVersions(t, s, other.ID); len(vs) != 1 || vs[0].Version != 1 {
		t.Errorf("the other template's versions: %+v, want its own version 1", vs)
	}
	// The template itself (version 0) is untouched.
	if g := get(t, s.Templates, tpl.ID); g.Eligibility != tpl.Eligibility {
		t.Errorf("template's eligibility %q, want %q", g.Eligibility, tpl.Eligibility)
	}
}

func testRulesAudit(t *testing.T, s RulesStores) {
	tpl := newTemplate(t, 1, "audited rules")
	tpl.Applies = "order.total >= 100"
	create(t, s.Templates, tpl)
	v := addRules(t, s, 1, tpl.ID, quan.RulesVersion{Eligibility: "user.level >= 2", Applies: "order.total >= 100",
		EffectiveAt: base.Add(time.Hour), ApplyToIssued: true, CreatedBy: "merchant:1", CreatedAt: base.Add(time.Minute)})
	es := history(t, s.Templates, tpl.ID)
	if len(es) != 2 {
		t.Fatalf("got %d audit entries, want create and rules", len(es))
	}
	e := es[1]
	if e.Action != quan.ActionRules || e.Actor != "merchant:1" || !e.At.Equal(v.CreatedAt) {
		t.Errorf("audit entry %s by %s at %v, want %s by merchant:1 at %v", e.Action, e.Actor, e.At, quan.ActionRules, v.CreatedAt)
	}
	assertChanges(t, e.Changes, quan.RulesChanges(tpl, nil, &v))
	assertChanges(t, e.Changes, []quan.FieldChange{
		{Field: "rulesVersion", Before: []byte(`0`), After: []byte(`1`)},
		{Field: "eligibility", Before: []byte(`""`), After: []byte(`"user.level >= 2"`)},
		{Field: "effectiveAt", Before: []byte(`null`), After: []byte(`"` + base.Add(time.Hour).Format(time.RFC3339Nano) + `"`)},
		{Field: "applyToIssued", Before: []byte(`false`), After: []byte(`true`)},
	})
}

func testRulesCheckError(t *testing.T, s RulesStores) {
	tpl := create(t, s.Templates, newTemplate(t, 1, "refused"))
	first := addRules(t, s, 1, tpl.ID, quan.RulesVersion{Eligibility: "true", EffectiveAt: base, CreatedBy: "merchant:1", CreatedAt: base})
	boom := errors.New("refused")
	var gotT *quan.Template
	var gotLatest *quan.RulesVersion
	v := quan.RulesVersion{Eligibility: "false", EffectiveAt: base, CreatedBy: "merchant:1", CreatedAt: base}
	err := s.Rules.AddRulesVersion(t.Context(), 1, tpl.ID, "merchant:1", &v, func(t *quan.Template, latest *quan.RulesVersion) error {
		gotT, gotLatest = t, latest
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("AddRulesVersion with a failing check: %v, want its error", err)
	}
	if gotT == nil || gotT.ID != tpl.ID || gotLatest == nil || gotLatest.Version != first.Version || gotLatest.Eligibility != "true" {
		t.Errorf("check got template %+v and latest %+v, want template %d and version 1", gotT, gotLatest, tpl.ID)
	}
	if vs := rulesVersions(t, s, tpl.ID); len(vs) != 1 {
		t.Errorf("%d versions after a refused change, want 1", len(vs))
	}
	if es := history(t, s.Templates, tpl.ID); len(es) != 2 {
		t.Errorf("%d audit entries after a refused change, want 2", len(es))
	}
}

func testRulesOtherShop(t *testing.T, s RulesStores) {
	tpl := create(t, s.Templates, newTemplate(t, 1, "shop 1's"))
	v := quan.RulesVersion{Eligibility: "true", EffectiveAt: base, CreatedBy: "merchant:2", CreatedAt: base}
	called := false
	err := s.Rules.AddRulesVersion(t.Context(), 2, tpl.ID, "merchant:2", &v, func(*quan.Template, *quan.RulesVersion) error {
		called = true
		return nil
	})
	if !errors.Is(err, quan.ErrNotFound) || called {
		t.Fatalf("AddRulesVersion by another shop: %v (check called: %v), want ErrNotFound without a check", err, called)
	}
	if err := s.Rules.AddRulesVersion(t.Context(), 1, tpl.ID+100, "merchant:1", &v, func(*quan.Template, *quan.RulesVersion) error { return nil }); !errors.Is(err, quan.ErrNotFound) {
		t.Errorf("AddRulesVersion of a missing template: %v, want ErrNotFound", err)
	}
	if vs := rulesVersions(t, s, tpl.ID); len(vs) != 0 {
		t.Errorf("%d versions, want none", len(vs))
	}
}

func testRulesConcurrent(t *testing.T, s RulesStores) {
	tpl := create(t, s.Templates, newTemplate(t, 1, "busy"))
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := quan.RulesVersion{Eligibility: "true", EffectiveAt: base, CreatedBy: "merchant:1", CreatedAt: base}
			errs <- s.Rules.AddRulesVersion(t.Context(), 1, tpl.ID, "merchant:1", &v, func(*quan.Template, *quan.RulesVersion) error { return nil })
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	vs := rulesVersions(t, s, tpl.ID)
	if len(vs) != n {
		t.Fatalf("%d versions, want %d", len(vs), n)
	}
	for i, v := range vs {
		if v.Version != int64(i+1) {
			t.Errorf("version %d at %d, want 1 … %d in order", v.Version, i, n)
		}
	}
}

func testRulesNone(t *testing.T, s RulesStores) {
	tpl := create(t, s.Templates, newTemplate(t, 1, "plain"))
	if vs := rulesVersions(t, s, tpl.ID); len(vs) != 0 {
		t.Errorf("%d versions of a template without any, want none", len(vs))
	}
	if vs := rulesVersions(t, s, tpl.ID+100); len(vs) != 0 {
		t.Errorf("%d versions of a missing template, want none", len(vs))
	}
}
