package codes_test

import (
	"errors"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/codes"
	"github.com/quanhq/quan/internal/testrig"
)

var codesT0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// TestCodeServiceList: a merchant lists the batches of its own template,
// newest first; another shop's template is not found.
func TestCodeServiceList(t *testing.T) {
	st, clock := testrig.Store(t), testrig.NewClock(codesT0)
	tpl := testrig.Template(t, st, clock.At(), testrig.DirectSpec(codesT0), true)
	svc := &codes.Service{Codes: st, Templates: st, Now: clock.At(), Chunk: 2}
	var made []*quan.CodeBatch
	for _, n := range []int64{3, 1} {
		b, err := svc.Create(t.Context(), testrig.Merchant1, tpl.ID, n)
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, b)
	}
	svc.Wait()
	got, err := svc.List(t.Context(), testrig.Merchant1, tpl.ID)
	if err != nil || len(got) != 2 || got[0].ID != made[1].ID || got[1].ID != made[0].ID {
		t.Fatalf("List: %+v, %v; want batches %d then %d", got, err, made[1].ID, made[0].ID)
	}
	if got[1].Generated != 3 || got[1].Status != quan.CodeBatchReady {
		t.Fatalf("List: the first batch is %+v, want ready with 3 codes", got[1])
	}
	other := quan.Identity{Subject: "merchant:2", Role: quan.RoleMerchant, ShopNo: 2}
	if _, err := svc.List(t.Context(), other, tpl.ID); !errors.Is(err, quan.ErrNotFound) {
		t.Fatalf("List of another shop's template: %v, want ErrNotFound", err)
	}
	user := quan.Identity{Role: quan.RoleUser, UserID: 7}
	if _, err := svc.List(t.Context(), user, tpl.ID); quan.ErrorCode(err) != quan.EFORBIDDEN {
		t.Fatalf("List as a user: %v, want forbidden", err)
	}
}

// TestCodeServiceClose: Close stops a generation under way, which keeps
// the codes it stored; Resume (in the next process) finishes the batch,
// and a Generate after Close starts nothing.
func TestCodeServiceClose(t *testing.T) {
	st, clock := testrig.Store(t), testrig.NewClock(codesT0)
	tpl := testrig.Template(t, st, clock.At(), testrig.DirectSpec(codesT0), true)
	svc := &codes.Service{Codes: st, Templates: st, Now: clock.At(), Chunk: 1}
	b, err := svc.Create(t.Context(), testrig.Merchant1, tpl.ID, 100_000)
	if err != nil {
		t.Fatal(err)
	}
	svc.Close()
	svc.Close()
	got, err := svc.Get(t.Context(), testrig.Merchant1, b.ID)
	if err != nil || got.Status != quan.CodeBatchGenerating || got.Generated >= got.Count {
		t.Fatalf("after Close: %+v, %v; want a batch still generating", got, err)
	}
	svc.Generate(got)
	svc.Wait()
	if again, _ := svc.Get(t.Context(), testrig.Merchant1, b.ID); again.Generated != got.Generated {
		t.Fatalf("a Generate after Close made codes: %d, then %d", got.Generated, again.Generated)
	}

	next := &codes.Service{Codes: st, Templates: st, Now: clock.At(), Chunk: 50_000}
	if err := next.Resume(t.Context()); err != nil {
		t.Fatal(err)
	}
	next.Wait()
	if done, err := next.Get(t.Context(), testrig.Merchant1, b.ID); err != nil || done.Status != quan.CodeBatchReady || done.Generated != done.Count {
		t.Fatalf("after Resume: %+v, %v; want ready with every code", done, err)
	}
}
