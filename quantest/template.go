package quantest

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// TestTemplateStore runs the conformance suite of quan.TemplateStore.
// newStore returns a fresh, empty store for each subtest and registers its
// cleanup with t.Cleanup. The suite asserts only what the doc comments of
// quan.TemplateStore and quan.TemplateFilter promise.
func TestTemplateStore(t *testing.T, newStore func(t *testing.T) quan.TemplateStore) {
	t.Helper()
	run := func(name string, test func(*testing.T, quan.TemplateStore)) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, newStore(t))
		})
	}

	run("CreateTemplate/SetsIDAndStoresEveryField", testCreateStoresEveryField)
	run("CreateTemplate/RecordsAuditEntry", testCreateRecordsAudit)

	run("Template/ErrNotFoundForMissingID", testTemplateMissing)
	run("Template/ErrNotFoundForAnotherShop", testTemplateOtherShop)
	run("Template/AnyShopSeesEveryShop", testTemplateAnyShop)

	run("Templates/FiltersByShop", testTemplatesByShop)
	run("Templates/FiltersByStatus", testTemplatesByStatus)
	run("Templates/FiltersByKind", testTemplatesByKind)
	run("Templates/NameContainsIgnoresASCIICase", testTemplatesNameCase)
	run("Templates/NameContainsTakesWildcardsLiterally", testTemplatesNameWildcards)
	run("Templates/CombinesFilters", testTemplatesCombined)
	run("Templates/FiltersByCategoryAndGoods", testTemplatesByCategoryGoods)
	run("Templates/FiltersByIDs", testTemplatesByIDs)
	run("Templates/PagesByCursorWithoutGapsOrRepeats", testTemplatesCursor)
	run("Templates/NewestFirst", testTemplatesNewestFirst)
	run("Templates/PagesWithTotalOfAllMatches", testTemplatesPaging)
	run("Templates/ZeroLimitMeansDefaultPageSize", testTemplatesDefaultLimit)
	run("Templates/EmptyWithoutError", testTemplatesEmpty)

	run("HighestTemplateID/ZeroWhenEmptyThenTheLastCreated", testHighestTemplateID)

	run("PromoCodeTemplate/OnlyWhileActive", testPromoCodeLife)
	run("PromoCodeTemplate/HeldByOneActiveOrPausedTemplate", testPromoCodeHeldOnce)
	run("PromoCodeTemplate/ActivationRaceHasOneWinner", testPromoCodeActivationRace)

	run("UpdateTemplate/SavesAndReturnsChanges", testUpdateSaves)
	run("UpdateTemplate/FnErrorWritesNothing", testUpdateFnError)
	run("UpdateTemplate/ErrNotFoundForMissingID", testUpdateMissing)
	run("UpdateTemplate/ErrNotFoundForAnotherShop", testUpdateOtherShop)
	run("UpdateTemplate/AuditListsChangedFields", testUpdateAudit)
	run("UpdateTemplate/AuditListsStackingAndPriority", testUpdateAuditStacking)

	run("TemplateHistory/OldestFirst", testHistoryOrder)
	run("TemplateHistory/ErrNotFound", testHistoryNotFound)

	run("AdjustStock/IncreasesAndDecreases", testAdjustStock)
	run("AdjustStock/ErrOutOfStockChangesNothing", testAdjustOutOfStock)
	run("AdjustStock/ErrNotFoundForMissingID", testAdjustMissing)
	run("AdjustStock/WritesNoAuditEntry", testAdjustNoAudit)

	run("Stampede/ExactlyStockTakesSucceed", testStampede)
	run("Stampede/MixedAdjustmentsAndIncreasesAddUp", testStampedeMixed)
	run("ConcurrentUpdates/NoLostUpdate", testConcurrentUpdates)

	run("Ping", func(t *testing.T, s quan.TemplateStore) {
		if err := s.Ping(t.Context()); err != nil {
			t.Fatalf("Ping: %v", err)
		}
	})
}

func testCreateStoresEveryField(t *testing.T, s quan.TemplateStore) {
	want := []*quan.Template{
		newTemplate(t, 1, "满 100 减 20"),
		withKind(t, newTemplate(t, 1, "8.5 折"), quan.KindDiscount),
		withKind(t, newTemplate(t, 2, "每满 50 减 5"), quan.KindStep),
		withKind(t, newTemplate(t, 2, "立减 5 元"), quan.KindDirect),
		withKind(t, newTemplate(t, 2, "满 100 减 10 再 9 折"), quan.KindComposite),
	}
	want[1].Status = quan.TemplateActive
	want[1].Stock, want[1].TotalStock = 7, 12
	want[1].UpdatedAt = base.Add(90 * time.Minute)
	want[4].Eligibility = `user.level >= 2 && "vip" in user.tags`
	want[4].Applies = `order.total >= 10000 && order.channel == "app"`
	want[4].LogoURL = "https://cdn.example.com/logo/满减.png?v=2"
	want[4].Category = "饮品"
	want[4].Goods = []string{"奶茶", "coffee \"latte\"", `c\d`}
	want[4].Instructions = "到店出示券码。\n\t不与其他优惠同享"
	want[4].Metadata = map[string]string{"color": "#ff0000", "标签": "新客"}
	seen := map[int64]bool{}
	for _, tpl := range want {
		create(t, s, tpl)
		if tpl.ID <= 0 {
			t.Fatalf("CreateTemplate(%q) set ID %d, want a positive id", tpl.Name, tpl.ID)
		}
		if seen[tpl.ID] {
			t.Fatalf("CreateTemplate(%q) set ID %d, which another template has", tpl.Name, tpl.ID)
		}
		seen[tpl.ID] = true
	}
	for _, w := range want {
		got, err := s.Template(t.Context(), w.ShopNo, w.ID)
		if err != nil {
			t.Fatalf("Template(%d, %d): %v", w.ShopNo, w.ID, err)
		}
		assertTemplate(t, got, w)
	}
}

func testCreateRecordsAudit(t *testing.T, s quan.TemplateStore) {
	tpl := newTemplate(t, 1, "audited")
	if err := s.CreateTemplate(t.Context(), tpl, "admin:ops"); err != nil {
		t.Fatal(err)
	}
	es, err := s.TemplateHistory(t.Context(), 1, tpl.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 {
		t.Fatalf("got %d audit entries after create, want 1", len(es))
	}
	e := es[0]
	if e.TemplateID != tpl.ID || e.ShopNo != 1 || e.Actor != "admin:ops" || e.Action != quan.ActionCreate {
		t.Errorf("audit entry = template %d, shop %d, actor %q, action %q; want %d, 1, %q, %q",
			e.TemplateID, e.ShopNo, e.Actor, e.Action, tpl.ID, "admin:ops", quan.ActionCreate)
	}
	if len(e.Changes) == 0 {
		t.Fatal("the create entry lists no changes")
	}
	assertChanges(t, e.Changes, quan.DiffTemplates(nil, get(t, s, tpl.ID)))
}

func testTemplateMissing(t *testing.T, s quan.TemplateStore) {
	create(t, s, newTemplate(t, 1, "present"))
	for _, shop := range []int64{1, quan.AnyShop} {
		_, err := s.Template(t.Context(), shop, 999_999)
		if !errors.Is(err, quan.ErrNotFound) {
			t.Errorf("Template(%d, 999999) error = %v, want ErrNotFound", shop, err)
		}
	}
}

func testTemplateOtherShop(t *testing.T, s quan.TemplateStore) {
	tpl := create(t, s, newTemplate(t, 1, "shop 1's"))
	got, err := s.Template(t.Context(), 2, tpl.ID)
	if !errors.Is(err, quan.ErrNotFound) {
		t.Fatalf("shop 2 reading shop 1's template: got %v, %v; want ErrNotFound", got, err)
	}
}

func testTemplateAnyShop(t *testing.T, s quan.TemplateStore) {
	a := create(t, s, newTemplate(t, 1, "shop 1's"))
	b := create(t, s, newTemplate(t, 2, "shop 2's"))
	for _, w := range []*quan.Template{a, b} {
		got, err := s.Template(t.Context(), quan.AnyShop, w.ID)
		if err != nil {
			t.Fatalf("Template(AnyShop, %d): %v", w.ID, err)
		}
		assertTemplate(t, got, w)
	}
}

// list calls Templates and fails the test on error.
func list(t *testing.T, s quan.TemplateStore, f quan.TemplateFilter) ([]*quan.Template, int) {
	t.Helper()
	ts, total, err := s.Templates(t.Context(), f)
	if err != nil {
		t.Fatalf("Templates(%+v): %v", f, err)
	}
	return ts, total
}

// assertList checks that f matches exactly want, newest first, in one page.
func assertList(t *testing.T, s quan.TemplateStore, f quan.TemplateFilter, want ...*quan.Template) {
	t.Helper()
	ts, total := list(t, s, f)
	wantIDs := ids(want)
	slices.Sort(wantIDs)
	slices.Reverse(wantIDs)
	if got := ids(ts); !slices.Equal(got, wantIDs) || total != len(want) {
		t.Errorf("Templates(%+v) = ids %v, total %d; want %v, %d", f, got, total, wantIDs, len(want))
	}
}

func testTemplatesByShop(t *testing.T, s quan.TemplateStore) {
	var shop1, shop2 []*quan.Template
	for range 3 {
		shop1 = append(shop1, create(t, s, newTemplate(t, 1, "one")))
		if len(shop2) < 2 {
			shop2 = append(shop2, create(t, s, newTemplate(t, 2, "two")))
		}
	}
	assertList(t, s, quan.TemplateFilter{ShopNo: 1}, shop1...)
	assertList(t, s, quan.TemplateFilter{ShopNo: 2}, shop2...)
	assertList(t, s, quan.TemplateFilter{ShopNo: 3})
	assertList(t, s, quan.TemplateFilter{ShopNo: quan.AnyShop}, append(shop1, shop2...)...)
	ts, _ := list(t, s, quan.TemplateFilter{ShopNo: 2})
	for _, tpl := range ts {
		if tpl.ShopNo != 2 {
			t.Errorf("shop 2's list holds template %d of shop %d", tpl.ID, tpl.ShopNo)
		}
	}
}

func testTemplatesByStatus(t *testing.T, s quan.TemplateStore) {
	byStatus := map[quan.TemplateStatus][]*quan.Template{}
	for _, st := range []quan.TemplateStatus{
		quan.TemplateDraft, quan.TemplateActive, quan.TemplateDraft,
		quan.TemplatePaused, quan.TemplateEnded, quan.TemplateActive,
	} {
		tpl := newTemplate(t, 1, string(st))
		tpl.Status = st
		byStatus[st] = append(byStatus[st], create(t, s, tpl))
	}
	other := newTemplate(t, 2, "other shop")
	other.Status = quan.TemplateActive
	create(t, s, other)

	for st, want := range byStatus {
		assertList(t, s, quan.TemplateFilter{ShopNo: 1, Status: st}, want...)
	}
	assertList(t, s, quan.TemplateFilter{Status: quan.TemplateActive},
		append(byStatus[quan.TemplateActive], other)...)
}

func testTemplatesByKind(t *testing.T, s quan.TemplateStore) {
	byKind := map[quan.Kind][]*quan.Template{}
	for _, k := range []quan.Kind{
		quan.KindDirect, quan.KindThreshold, quan.KindDiscount, quan.KindStep, quan.KindDiscount,
	} {
		byKind[k] = append(byKind[k], create(t, s, withKind(t, newTemplate(t, 1, string(k)), k)))
	}
	create(t, s, withKind(t, newTemplate(t, 2, "other shop"), quan.KindStep))

	for k, want := range byKind {
		assertList(t, s, quan.TemplateFilter{ShopNo: 1, Kind: k}, want...)
	}
}

func testTemplatesNameCase(t *testing.T, s quan.TemplateStore) {
	mk := func(shop int64, name string) *quan.Template { return create(t, s, newTemplate(t, shop, name)) }
	spring := mk(1, "Spring SALE")
	lower := mk(1, "spring sale 满减")
	mixed := mk(1, "大促 Sale")
	mk(1, "Summer")
	mk(2, "Spring sale, other shop")

	for _, q := range []string{"sale", "SALE", "sAlE"} {
		assertList(t, s, quan.TemplateFilter{ShopNo: 1, NameContains: q}, spring, lower, mixed)
	}
	assertList(t, s, quan.TemplateFilter{ShopNo: 1, NameContains: "满减"}, lower)
	assertList(t, s, quan.TemplateFilter{ShopNo: 1, NameContains: "ring s"}, spring, lower)
	assertList(t, s, quan.TemplateFilter{ShopNo: 1, NameContains: "winter"})
}

func testTemplatesNameWildcards(t *testing.T, s quan.TemplateStore) {
	mk := func(name string) *quan.Template { return create(t, s, newTemplate(t, 1, name)) }
	percent := mk("100% off")
	mk("100 off")
	mk("1000 off")
	underscore := mk("a_b")
	mk("axb")
	backslash := mk(`c\d`)
	mk("cd")
	quote := mk(`it's "new"`)

	for q, want := range map[string]*quan.Template{
		"%":         percent,
		"100%":      percent,
		"_":         underscore,
		"a_b":       underscore,
		`\`:         backslash,
		`c\d`:       backslash,
		`'s "new"`:  quote,
		`%' OR '1'`: nil,
	} {
		if want == nil {
			assertList(t, s, quan.TemplateFilter{ShopNo: 1, NameContains: q})
			continue
		}
		assertList(t, s, quan.TemplateFilter{ShopNo: 1, NameContains: q}, want)
	}
}

func testTemplatesCombined(t *testing.T, s quan.TemplateStore) {
	mk := func(shop int64, name string, st quan.TemplateStatus, k quan.Kind) *quan.Template {
		tpl := withKind(t, newTemplate(t, shop, name), k)
		tpl.Status = st
		return create(t, s, tpl)
	}
	want := mk(1, "Spring A", quan.TemplateActive, quan.KindThreshold)
	mk(1, "Spring B", quan.TemplateActive, quan.KindDiscount)
	mk(1, "Spring C", quan.TemplateDraft, quan.KindThreshold)
	mk(1, "Autumn", quan.TemplateActive, quan.KindThreshold)
	other := mk(2, "Spring D", quan.TemplateActive, quan.KindThreshold)

	f := quan.TemplateFilter{ShopNo: 1, Status: quan.TemplateActive, Kind: quan.KindThreshold, NameContains: "SPRING"}
	assertList(t, s, f, want)
	f.ShopNo = quan.AnyShop
	assertList(t, s, f, want, other)
}

func testTemplatesNewestFirst(t *testing.T, s quan.TemplateStore) {
	var created []*quan.Template
	for _, k := range []quan.Kind{quan.KindDirect, quan.KindThreshold, quan.KindDiscount, quan.KindStep, quan.KindDirect} {
		created = append(created, create(t, s, withKind(t, newTemplate(t, 1, "t "+string(k)), k)))
	}
	ts, total := list(t, s, quan.TemplateFilter{ShopNo: 1})
	if total != len(created) || len(ts) != len(created) {
		t.Fatalf("got %d templates, total %d; want %d", len(ts), total, len(created))
	}
	for i, got := range ts {
		if i > 0 && got.ID >= ts[i-1].ID {
			t.Errorf("template %d listed after %d: want newest (highest id) first", got.ID, ts[i-1].ID)
		}
		// A listed template is a whole template.
		assertTemplate(t, got, created[len(created)-1-i])
	}
}

func testTemplatesPaging(t *testing.T, s quan.TemplateStore) {
	var all []int64
	for range 7 {
		all = append(all, create(t, s, newTemplate(t, 1, "paged")).ID)
		create(t, s, newTemplate(t, 2, "other shop"))
	}
	slices.Reverse(all)

	var paged []int64
	for _, c := range []struct{ offset, n int }{{0, 3}, {3, 3}, {6, 1}, {7, 0}, {100, 0}} {
		ts, total := list(t, s, quan.TemplateFilter{ShopNo: 1, Offset: c.offset, Limit: 3})
		if len(ts) != c.n || total != len(all) {
			t.Errorf("Offset %d, Limit 3: got %d templates, total %d; want %d, %d",
				c.offset, len(ts), total, c.n, len(all))
		}
		paged = append(paged, ids(ts)...)
	}
	if !slices.Equal(paged, all) {
		t.Errorf("pages hold ids %v, want %v", paged, all)
	}
}

func testTemplatesDefaultLimit(t *testing.T, s quan.TemplateStore) {
	n := quan.DefaultPageSize + 5
	for range n {
		create(t, s, newTemplate(t, 1, "many"))
	}
	ts, total := list(t, s, quan.TemplateFilter{ShopNo: 1})
	if len(ts) != quan.DefaultPageSize || total != n {
		t.Errorf("Limit 0: got %d templates, total %d; want %d, %d", len(ts), total, quan.DefaultPageSize, n)
	}
}

func testTemplatesEmpty(t *testing.T, s quan.TemplateStore) {
	for _, f := range []quan.TemplateFilter{
		{ShopNo: 1},
		{ShopNo: quan.AnyShop},
		{ShopNo: 1, Status: quan.TemplateActive, Kind: quan.KindStep, NameContains: "x"},
	} {
		ts, total, err := s.Templates(t.Context(), f)
		if err != nil || len(ts) != 0 || total != 0 {
			t.Errorf("Templates(%+v) on an empty store = %d templates, total %d, error %v; want none, 0, nil",
				f, len(ts), total, err)
		}
	}
	create(t, s, newTemplate(t, 1, "present"))
	assertList(t, s, quan.TemplateFilter{ShopNo: 1, NameContains: "absent"})
}

func testHighestTemplateID(t *testing.T, s quan.TemplateStore) {
	highest := func() int64 {
		t.Helper()
		id, err := s.HighestTemplateID(t.Context())
		if err != nil {
			t.Fatalf("HighestTemplateID: %v", err)
		}
		return id
	}
	if id := highest(); id != 0 {
		t.Fatalf("HighestTemplateID of an empty store = %d, want 0", id)
	}
	for shop := range int64(3) {
		tpl := create(t, s, newTemplate(t, shop+1, "highest"))
		if id := highest(); id != tpl.ID {
			t.Fatalf("HighestTemplateID = %d after template %d of shop %d was created, want %d", id, tpl.ID, shop+1, tpl.ID)
		}
	}
}

// update calls UpdateTemplate and fails the test on error.
func update(t *testing.T, s quan.TemplateStore, shop, id int64, actor, action string, fn func(*quan.Template) error) *quan.Template {
	t.Helper()
	tpl, err := s.UpdateTemplate(t.Context(), shop, id, actor, action, fn)
	if err != nil {
		t.Fatalf("UpdateTemplate(%d, %d, %s): %v", shop, id, action, err)
	}
	return tpl
}

func testUpdateSaves(t *testing.T, s quan.TemplateStore) {
	tpl := create(t, s, newTemplate(t, 1, "before"))
	now := base.Add(2 * time.Hour)
	want := *get(t, s, tpl.ID)
	want.Name = "after"
	want.Description = ""
	want.Scope.IDs = []string{"g-9"}
	want.Stock, want.TotalStock = 150, 150
	want.Status = quan.TemplateActive
	want.Stacking, want.Priority = quan.StackWithShop, 42
	want.UpdatedAt = now

	for _, shop := range []int64{1, quan.AnyShop} {
		got := update(t, s, shop, tpl.ID, "merchant:1", quan.ActionUpdate, func(t *quan.Template) error {
			t.Name, t.Description = "after", ""
			t.Stacking, t.Priority = quan.StackWithShop, 42
			t.Scope.IDs = []string{"g-9"}
			t.Stock, t.TotalStock = 150, 150
			t.Status = quan.TemplateActive
			t.UpdatedAt = now
			return nil
		})
		assertTemplate(t, got, &want)
		assertTemplate(t, get(t, s, tpl.ID), &want)
	}
}

var errRefused = errors.New("quantest: refused by fn")

func testUpdateFnError(t *testing.T, s quan.TemplateStore) {
	tpl := create(t, s, newTemplate(t, 1, "unchanged"))
	want := get(t, s, tpl.ID)
	called := false
	got, err := s.UpdateTemplate(t.Context(), 1, tpl.ID, "merchant:1", quan.ActionUpdate, func(t *quan.Template) error {
		called = true
		t.Name = "changed"
		t.Stock = 1
		return errRefused
	})
	if !called {
		t.Fatal("fn was not called")
	}
	if !errors.Is(err, errRefused) {
		t.Fatalf("UpdateTemplate error = %v, want fn's error", err)
	}
	if got != nil {
		t.Errorf("UpdateTemplate returned template %+v with fn's error, want nil", got)
	}
	assertTemplate(t, get(t, s, tpl.ID), want)
	if es := history(t, s, tpl.ID); len(es) != 1 {
		t.Errorf("got %d audit entries after a failed update, want 1 (the create)", len(es))
	}

	// A domain error comes back as itself too.
	_, err = s.UpdateTemplate(t.Context(), 1, tpl.ID, "merchant:1", quan.ActionResume, (*quan.Template).Resume)
	if !errors.Is(err, quan.ErrTransition) {
		t.Errorf("UpdateTemplate with Resume on a draft: error %v, want ErrTransition", err)
	}
}

func testUpdateMissing(t *testing.T, s quan.TemplateStore) {
	create(t, s, newTemplate(t, 1, "present"))
	for _, shop := range []int64{1, quan.AnyShop} {
		_, err := s.UpdateTemplate(t.Context(), shop, 999_999, "merchant:1", quan.ActionUpdate, func(*quan.Template) error {
			t.Error("fn called for a missing template")
			return nil
		})
		if !errors.Is(err, quan.ErrNotFound) {
			t.Errorf("UpdateTemplate(%d, 999999) error = %v, want ErrNotFound", shop, err)
		}
	}
}

func testUpdateOtherShop(t *testing.T, s quan.TemplateStore) {
	tpl := create(t, s, newTemplate(t, 1, "shop 1's"))
	want := get(t, s, tpl.ID)
	_, err := s.UpdateTemplate(t.Context(), 2, tpl.ID, "merchant:2", quan.ActionTerminate, func(t2 *quan.Template) error {
		t.Error("fn called for another shop's template")
		return t2.Terminate()
	})
	if !errors.Is(err, quan.ErrNotFound) {
		t.Fatalf("shop 2 updating shop 1's template: error %v, want ErrNotFound", err)
	}
	assertTemplate(t, get(t, s, tpl.ID), want)
	if es := history(t, s, tpl.ID); len(es) != 1 {
		t.Errorf("got %d audit entries, want 1 (the create)", len(es))
	}
}

func testUpdateAudit(t *testing.T, s quan.TemplateStore) {
	tpl := create(t, s, newTemplate(t, 1, "audited"))
	before := get(t, s, tpl.ID)
	after := update(t, s, 1, tpl.ID, "admin:ops", quan.ActionActivate, func(t *quan.Template) error {
		if err := t.Activate(base); err != nil {
			return err
		}
		t.Name = "audited, active"
		t.UpdatedAt = base.Add(time.Minute)
		return nil
	})

	es := history(t, s, tpl.ID)
	if len(es) != 2 {
		t.Fatalf("got %d audit entries, want 2", len(es))
	}
	e := es[1]
	if e.TemplateID != tpl.ID || e.ShopNo != 1 || e.Actor != "admin:ops" || e.Action != quan.ActionActivate {
		t.Errorf("audit entry = template %d, shop %d, actor %q, action %q; want %d, 1, %q, %q",
			e.TemplateID, e.ShopNo, e.Actor, e.Action, tpl.ID, "admin:ops", quan.ActionActivate)
	}
	// UpdatedAt is no change of its own: every change moves it.
	if got, want := strings.Join(fieldNames(e.Changes), ","), "name,status"; got != want {
		t.Errorf("audit entry lists fields %s, want %s", got, want)
	}
	assertChanges(t, e.Changes, quan.DiffTemplates(before, after))
}

// testUpdateAuditStacking: a change of stacking or priority is in the
// audit trail, with the values before and after.
func testUpdateAuditStacking(t *testing.T, s quan.TemplateStore) {
	tpl := create(t, s, newTemplate(t, 1, "stacking"))
	before := get(t, s, tpl.ID)
	after := update(t, s, 1, tpl.ID, "merchant:1", quan.ActionUpdate, func(t *quan.Template) error {
		t.Stacking, t.Priority = quan.StackExclusive, 5
		t.UpdatedAt = base.Add(time.Minute)
		return nil
	})
	es := history(t, s, tpl.ID)
	if len(es) != 2 {
		t.Fatalf("got %d audit entries, want 2", len(es))
	}
	if got, want := strings.Join(fieldNames(es[1].Changes), ","), "stacking,priority"; got != want {
		t.Errorf("audit entry lists fields %s, want %s", got, want)
	}
	assertChanges(t, es[1].Changes, []quan.FieldChange{
		{Field: "stacking", Before: []byte(`"any"`), After: []byte(`"exclusive"`)},
		{Field: "priority", Before: []byte(`0`), After: []byte(`5`)},
	})
	assertChanges(t, es[1].Changes, quan.DiffTemplates(before, after))
}

func testHistoryOrder(t *testing.T, s quan.TemplateStore) {
	tpl := create(t, s, newTemplate(t, 1, "history"))
	create(t, s, newTemplate(t, 1, "another, with its own history"))
	steps := []struct {
		action string
		fn     func(*quan.Template) error
	}{
		{quan.ActionActivate, func(t *quan.Template) error { return t.Activate(base) }},
		{quan.ActionPause, (*quan.Template).Pause},
		{quan.ActionStock, func(t *quan.Template) error { return t.IncreaseStock(5) }},
		{quan.ActionResume, (*quan.Template).Resume},
		{quan.ActionTerminate, (*quan.Template).Terminate},
	}
	for _, st := range steps {
		update(t, s, 1, tpl.ID, "merchant:1", st.action, st.fn)
	}

	for _, shop := range []int64{1, quan.AnyShop} {
		es, err := s.TemplateHistory(t.Context(), shop, tpl.ID)
		if err != nil {
			t.Fatalf("TemplateHistory(%d, %d): %v", shop, tpl.ID, err)
		}
		var got []string
		for _, e := range es {
			got = append(got, e.Action)
			if e.TemplateID != tpl.ID {
				t.Errorf("history of %d holds an entry of template %d", tpl.ID, e.TemplateID)
			}
		}
		want := []string{quan.ActionCreate}
		for _, st := range steps {
			want = append(want, st.action)
		}
		if !slices.Equal(got, want) {
			t.Errorf("TemplateHistory(%d) actions = %v, want %v", shop, got, want)
		}
	}
}

func testHistoryNotFound(t *testing.T, s quan.TemplateStore) {
	tpl := create(t, s, newTemplate(t, 1, "shop 1's"))
	for _, c := range []struct{ shop, id int64 }{{2, tpl.ID}, {1, 999_999}, {quan.AnyShop, 999_999}} {
		es, err := s.TemplateHistory(t.Context(), c.shop, c.id)
		if !errors.Is(err, quan.ErrNotFound) {
			t.Errorf("TemplateHistory(%d, %d) = %d entries, error %v; want ErrNotFound", c.shop, c.id, len(es), err)
		}
	}
}

func testTemplatesByCategoryGoods(t *testing.T, s quan.TemplateStore) {
	mk := func(shop int64, category string, goods ...string) *quan.Template {
		tpl := newTemplate(t, shop, "display")
		tpl.Category, tpl.Goods = category, goods
		return create(t, s, tpl)
	}
	tea := mk(1, "饮品", "tea", "奶茶")
	teapot := mk(1, "器具", "teapot")
	green := mk(2, "饮品", "green tea", `50%_off`)
	none := mk(1, "")
	_ = none
	assertList(t, s, quan.TemplateFilter{Category: "饮品"}, tea, green)
	assertList(t, s, quan.TemplateFilter{ShopNo: 1, Category: "饮品"}, tea)
	assertList(t, s, quan.TemplateFilter{Category: "饮"})
	// Goods match whole entries: "tea" is neither "teapot" nor "green tea".
	assertList(t, s, quan.TemplateFilter{Goods: "tea"}, tea)
	assertList(t, s, quan.TemplateFilter{Goods: "奶茶"}, tea)
	assertList(t, s, quan.TemplateFilter{Goods: "teapot"}, teapot)
	assertList(t, s, quan.TemplateFilter{Goods: `50%_off`}, green)
	assertList(t, s, quan.TemplateFilter{Goods: `%`})
	assertList(t, s, quan.TemplateFilter{Goods: `"`})
	assertList(t, s, quan.TemplateFilter{Category: "饮品", Goods: "green tea"}, green)
	assertList(t, s, quan.TemplateFilter{Category: "器具", Goods: "green tea"})
}

func testTemplatesByIDs(t *testing.T, s quan.TemplateStore) {
	var all []*quan.Template
	for range 4 {
		all = append(all, create(t, s, newTemplate(t, 1, "by id")))
	}
	assertList(t, s, quan.TemplateFilter{IDs: []int64{all[0].ID, all[2].ID, all[3].ID + 100}}, all[0], all[2])
	assertList(t, s, quan.TemplateFilter{ShopNo: 2, IDs: []int64{all[0].ID}})
}

func testTemplatesCursor(t *testing.T, s quan.TemplateStore) {
	var want []int64
	for i := range 23 {
		tpl := newTemplate(t, 1+int64(i%2), "paged")
		create(t, s, tpl)
		want = append(want, tpl.ID)
	}
	slices.Reverse(want)
	var got []int64
	f := quan.TemplateFilter{Limit: 5}
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatalf("paging did not end: %v", got)
		}
		ts, total := list(t, s, f)
		got = append(got, ids(ts)...)
		if total <= len(ts) {
			break
		}
		f.Before = ts[len(ts)-1].ID
		// A template created while paging is newer than every cursor: it
		// is not on a later page.
		create(t, s, newTemplate(t, 1, "created meanwhile"))
	}
	if !slices.Equal(got, want) {
		t.Errorf("pages by cursor = %v, want %v", got, want)
	}
	// Without the count: the same page, and -1 for the total.
	f = quan.TemplateFilter{Before: want[4], Limit: 5}
	counted, _ := list(t, s, f)
	f.SkipTotal = true
	if ts, total := list(t, s, f); !slices.Equal(ids(ts), ids(counted)) || total != -1 {
		t.Errorf("SkipTotal: %v, total %d; want %v, -1", ids(ts), total, ids(counted))
	}
}
