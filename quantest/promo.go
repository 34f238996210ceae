package quantest

import (
	"errors"
	"sync"
	"testing"

	"github.com/quanhq/quan"
)

// The promo codes (口令券) of quan.TemplateStore: who holds one, and the
// store keeping a code to one active or paused template.

func promoTemplate(t *testing.T, shop int64, name, code string) *quan.Template {
	t.Helper()
	tpl := newTemplate(t, shop, name)
	tpl.PromoCode = code
	return tpl
}

// setStatus moves template id to status through UpdateTemplate.
func setStatus(t *testing.T, s quan.TemplateStore, id int64, status quan.TemplateStatus) (*quan.Template, error) {
	t.Helper()
	return s.UpdateTemplate(t.Context(), quan.AnyShop, id, "admin:ops", "status", func(tpl *quan.Template) error {
		tpl.Status = status
		return nil
	})
}

// wantPromo wants PromoCodeTemplate(code) to be id, or ErrNotFound for 0.
func wantPromo(t *testing.T, s quan.TemplateStore, code string, id int64, when string) {
	t.Helper()
	got, err := s.PromoCodeTemplate(t.Context(), code)
	switch {
	case id == 0 && !errors.Is(err, quan.ErrNotFound):
		t.Fatalf("%s: PromoCodeTemplate(%q) = %d, %v; want ErrNotFound", when, code, got, err)
	case id != 0 && (err != nil || got != id):
		t.Fatalf("%s: PromoCodeTemplate(%q) = %d, %v; want %d", when, code, got, err, id)
	}
}

// wantHeld wants err to be the PromoCodeHeld conflict of code.
func wantHeld(t *testing.T, err error, code, what string) {
	t.Helper()
	var e *quan.Error
	if !errors.As(err, &e) || e.Code != quan.ECONFLICT || len(e.Fields) != 1 || e.Fields[0].Field != "promoCode" {
		t.Fatalf("%s: %v; want a conflict on promoCode naming %s", what, err, code)
	}
	if !errors.Is(err, quan.ErrConflict) {
		t.Fatalf("%s: %v is not ErrConflict", what, err)
	}
}

func testPromoCodeLife(t *testing.T, s quan.TemplateStore) {
	tpl := create(t, s, promoTemplate(t, 1, "双十一", "DOUBLE11"))
	if got := get(t, s, tpl.ID); got.PromoCode != "DOUBLE11" {
		t.Fatalf("stored promo code %q, want DOUBLE11", got.PromoCode)
	}
	create(t, s, newTemplate(t, 1, "no code")) // '' is no code: never found
	wantPromo(t, s, "", 0, "no template has a code")
	wantPromo(t, s, "DOUBLE11", 0, "a draft")
	for _, step := range []struct {
		status quan.TemplateStatus
		want   int64
	}{{quan.TemplateActive, tpl.ID}, {quan.TemplatePaused, 0}, {quan.TemplateActive, tpl.ID}, {quan.TemplateEnded, 0}} {
		if _, err := setStatus(t, s, tpl.ID, step.status); err != nil {
			t.Fatalf("make template %d %s: %v", tpl.ID, step.status, err)
		}
		wantPromo(t, s, "DOUBLE11", step.want, string(step.status))
	}
	wantPromo(t, s, "DOUBLE12", 0, "a code nobody has")
}

func testPromoCodeHeldOnce(t *testing.T, s quan.TemplateStore) {
	first := create(t, s, promoTemplate(t, 1, "first", "DOUBLE11"))
	second := create(t, s, promoTemplate(t, 2, "second", "DOUBLE11")) // drafts hold no code
	if _, err := setStatus(t, s, first.ID, quan.TemplateActive); err != nil {
		t.Fatal(err)
	}
	_, err := setStatus(t, s, second.ID, quan.TemplateActive)
	wantHeld(t, err, "DOUBLE11", "activate a second template of the code")
	if got := get(t, s, second.ID); got.Status != quan.TemplateDraft {
		t.Fatalf("the refused template is %s, want draft: nothing written", got.Status)
	}
	if es, err := s.TemplateHistory(t.Context(), 2, second.ID); err != nil || len(es) != 1 {
		t.Fatalf("history of the refused template = %d entries, %v; want the create alone", len(es), err)
	}
	active := promoTemplate(t, 3, "stored active", "DOUBLE11")
	active.Status = quan.TemplateActive
	wantHeld(t, s.CreateTemplate(t.Context(), active, "admin:ops"), "DOUBLE11", "create an active template of the code")

	// Paused, the first still holds it; ended, it frees it.
	if _, err := setStatus(t, s, first.ID, quan.TemplatePaused); err != nil {
		t.Fatal(err)
	}
	_, err = setStatus(t, s, second.ID, quan.TemplateActive)
	wantHeld(t, err, "DOUBLE11", "activate while the holder is paused")
	if _, err := setStatus(t, s, first.ID, quan.TemplateEnded); err != nil {
		t.Fatal(err)
	}
	if _, err := setStatus(t, s, second.ID, quan.TemplateActive); err != nil {
		t.Fatalf("activate once the holder ended: %v", err)
	}
	wantPromo(t, s, "DOUBLE11", second.ID, "the second holder")
	// Other codes, and templates with none, never collide.
	for i, code := range []string{"DOUBLE12", "", ""} {
		tpl := create(t, s, promoTemplate(t, 1, "other", code))
		if _, err := setStatus(t, s, tpl.ID, quan.TemplateActive); err != nil {
			t.Fatalf("activate template %d with code %q: %v", i, code, err)
		}
	}
}

// testPromoCodeActivationRace activates templates of one code at once:
// exactly one holds it, every other is refused PromoCodeHeld.
func testPromoCodeActivationRace(t *testing.T, s quan.TemplateStore) {
	const n = 8
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = create(t, s, promoTemplate(t, int64(i+1), "racer", "RACE-1")).ID
	}
	start := make(chan struct{})
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			<-start
			_, errs[i] = setStatus(t, s, id, quan.TemplateActive)
		})
	}
	close(start)
	wg.Wait()
	var winner int64
	for i, err := range errs {
		if err == nil {
			if winner != 0 {
				t.Fatalf("templates %d and %d both activated with code RACE-1", winner, ids[i])
			}
			winner = ids[i]
			continue
		}
		wantHeld(t, err, "RACE-1", "a losing activation")
	}
	if winner == 0 {
		t.Fatalf("no activation won: %v", errs)
	}
	wantPromo(t, s, "RACE-1", winner, "after the race")
}
