package quan_test

import (
	"errors"
	"testing"

	"github.com/quanhq/quan"
)

// TestCodeServiceList: a merchant lists the batches of its own template,
// newest first; another shop's template is not found.
func TestCodeServiceList(t *testing.T) {
	f := newRemindFixture(t)
	tpl := f.template(t, remindSpec(remindT0), true)
	codes := &quan.CodeService{Codes: f.st, Templates: f.st, Now: f.clock.at(), Chunk: 2}
	var made []*quan.CodeBatch
	for _, n := range []int64{3, 1} {
		b, err := codes.Create(t.Context(), merchant1, tpl.ID, n)
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, b)
	}
	codes.Wait()
	got, err := codes.List(t.Context(), merchant1, tpl.ID)
	if err != nil || len(got) != 2 || got[0].ID != made[1].ID || got[1].ID != made[0].ID {
		t.Fatalf("List: %+v, %v; want batches %d then %d", got, err, made[1].ID, made[0].ID)
	}
	if got[1].Generated != 3 || got[1].Status != quan.CodeBatchReady {
		t.Fatalf("List: the first batch is %+v, want ready with 3 codes", got[1])
	}
	other := quan.Identity{Subject: "merchant:2", Role: quan.RoleMerchant, ShopNo: 2}
	if _, err := codes.List(t.Context(), other, tpl.ID); !errors.Is(err, quan.ErrNotFound) {
		t.Fatalf("List of another shop's template: %v, want ErrNotFound", err)
	}
	user := quan.Identity{Role: quan.RoleUser, UserID: 7}
	if _, err := codes.List(t.Context(), user, tpl.ID); quan.ErrorCode(err) != quan.EFORBIDDEN {
		t.Fatalf("List as a user: %v, want forbidden", err)
	}
}
