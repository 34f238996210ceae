package quantest

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// CodeStores are the ports of one store that redemption codes use.
type CodeStores struct {
	TaskStores
	Codes quan.CodeStore
}

// TestCodeStore runs the conformance suite of quan.CodeStore.
func TestCodeStore(t *testing.T, newStores func(t *testing.T) CodeStores) {
	t.Helper()
	run := func(name string, test func(*testing.T, CodeStores)) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, newStores(t))
		})
	}
	run("CodeBatch/GeneratesInChunks", testCodeBatch)
	run("CodeBatches/OfTemplateNewestFirst", testCodeBatches)
	run("RedeemCode/OnceWithTheRules", testRedeemCode)
	run("RedeemCode/RaceOneWinner", testRedeemRace)
	run("RedeemCode/PeriodLimits", testRedeemPeriods)
}

func codeBatchOf(t *testing.T, s CodeStores, tpl *quan.Template, n int64) *quan.CodeBatch {
	t.Helper()
	b := &quan.CodeBatch{TemplateID: tpl.ID, ShopNo: tpl.ShopNo, Count: n, Status: quan.CodeBatchGenerating,
		CreatedBy: "merchant:1", CreatedAt: base, UpdatedAt: base}
	if err := s.Codes.CreateCodeBatch(t.Context(), b); err != nil || b.ID <= 0 {
		t.Fatalf("CreateCodeBatch: %v (id %d)", err, b.ID)
	}
	return b
}

func newCodes(t *testing.T, n int) []string {
	t.Helper()
	cs, err := quan.NewCodes(n, "")
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func testCodeBatch(t *testing.T, s CodeStores) {
	tpl := activeTemplate(t, s.TaskStores, "codes", 10, 1)
	b := codeBatchOf(t, s, tpl, 5)
	first := newCodes(t, 3)
	got, err := s.Codes.AddCodes(t.Context(), b.ID, first, base.Add(time.Minute))
	if err != nil || got.Generated != 3 || got.Status != quan.CodeBatchGenerating {
		t.Fatalf("AddCodes 3 of 5: %+v, %v", got, err)
	}
	gen, err := s.Codes.GeneratingCodeBatches(t.Context())
	if err != nil || len(gen) != 1 || gen[0].ID != b.ID || gen[0].Generated != 3 {
		t.Fatalf("GeneratingCodeBatches: %+v, %v", gen, err)
	}
	// A code that exists already is a conflict, and nothing is stored.
	if _, err := s.Codes.AddCodes(t.Context(), b.ID, []string{newCodes(t, 1)[0], first[0]}, base); !errors.Is(err, quan.ErrConflict) {
		t.Fatalf("AddCodes of a code that exists: %v, want a conflict", err)
	}
	rest := newCodes(t, 2)
	got, err = s.Codes.AddCodes(t.Context(), b.ID, rest, base.Add(2*time.Minute))
	if err != nil || got.Generated != 5 || got.Status != quan.CodeBatchReady || !got.UpdatedAt.Equal(base.Add(2*time.Minute)) {
		t.Fatalf("AddCodes to the count: %+v, %v", got, err)
	}
	if _, err := s.Codes.AddCodes(t.Context(), b.ID, newCodes(t, 1), base); !errors.Is(err, quan.ErrInvalid) {
		t.Fatalf("AddCodes beyond the count: %v, want invalid", err)
	}
	if gen, _ := s.Codes.GeneratingCodeBatches(t.Context()); len(gen) != 0 {
		t.Fatalf("a ready batch still generating: %+v", gen)
	}
	var codes []string
	for c, err := range s.Codes.Codes(t.Context(), b.ID) {
		if err != nil {
			t.Fatal(err)
		}
		if c.BatchID != b.ID || c.TemplateID != tpl.ID || c.UserID != 0 {
			t.Errorf("code %+v", c)
		}
		codes = append(codes, c.Code)
	}
	want := slices.Sorted(slices.Values(append(first, rest...)))
	if !slices.Equal(codes, want) {
		t.Fatalf("Codes = %v, want %v in order", codes, want)
	}
	if _, err := s.Codes.CodeBatch(t.Context(), 2, b.ID); !errors.Is(err, quan.ErrNotFound) {
		t.Fatalf("another shop's batch: %v, want ErrNotFound", err)
	}
	if got, err := s.Codes.CodeBatch(t.Context(), 1, b.ID); err != nil || got.Count != 5 || got.CreatedBy != "merchant:1" || !got.CreatedAt.Equal(base) {
		t.Fatalf("CodeBatch: %+v, %v", got, err)
	}
}

func testCodeBatches(t *testing.T, s CodeStores) {
	tpl := activeTemplate(t, s.TaskStores, "batches", 10, 1)
	other := activeTemplate(t, s.TaskStores, "other", 10, 1)
	if got, err := s.Codes.CodeBatches(t.Context(), 1, tpl.ID); err != nil || len(got) != 0 {
		t.Fatalf("CodeBatches of a template without any: %+v, %v", got, err)
	}
	first := codeBatchOf(t, s, tpl, 3)
	codeBatchOf(t, s, other, 2)
	second := codeBatchOf(t, s, tpl, 4)
	if _, err := s.Codes.AddCodes(t.Context(), first.ID, newCodes(t, 3), base.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	for _, shop := range []int64{1, quan.AnyShop} {
		got, err := s.Codes.CodeBatches(t.Context(), shop, tpl.ID)
		if err != nil || len(got) != 2 || got[0].ID != second.ID || got[1].ID != first.ID {
			t.Fatalf("CodeBatches(shop %d): %+v, %v; want batches %d, %d", shop, got, err, second.ID, first.ID)
		}
		if b := got[1]; b.Generated != 3 || b.Status != quan.CodeBatchReady || b.TemplateID != tpl.ID || b.Count != 3 {
			t.Fatalf("CodeBatches: the ready batch is %+v", b)
		}
	}
	if got, err := s.Codes.CodeBatches(t.Context(), 2, tpl.ID); err != nil || len(got) != 0 {
		t.Fatalf("CodeBatches of another shop's template: %+v, %v; want none", got, err)
	}
}

func testRedeemCode(t *testing.T, s CodeStores) {
	tpl := activeTemplate(t, s.TaskStores, "redeem", 2, 1)
	b := codeBatchOf(t, s, tpl, 5)
	codes := newCodes(t, 5)
	if _, err := s.Codes.AddCodes(t.Context(), b.ID, codes, base); err != nil {
		t.Fatal(err)
	}
	now := claimAt
	redeem := func(code string, user int64, want string) *quan.Coupon {
		t.Helper()
		c, err := s.Codes.RedeemCode(t.Context(), code, user, now)
		if want == "" && err != nil || want != "" && quan.ErrorCode(err) != want {
			t.Fatalf("redeem %s by user %d: %v, want %q", code, user, err, want)
		}
		return c
	}
	c := redeem(codes[0], 1, "")
	if c.Source != quan.FromCode || c.UserID != 1 || c.Seq != 1 || c.TemplateID != tpl.ID || c.ID <= 0 {
		t.Fatalf("coupon of a code: %+v", c)
	}
	if want := s.Coupons.CodeKey().Code(c.ID, tpl.CodePrefix); c.Code != want {
		t.Fatalf("the coupon has code %q, want %q, its own", c.Code, want)
	}
	if again := redeem(codes[0], 1, ""); again.ID != c.ID || again.Code != c.Code {
		t.Fatalf("the same code by the same user again: coupon %d (code %s), want %d (%s)", again.ID, again.Code, c.ID, c.Code)
	}
	redeem(codes[0], 2, quan.ECODEUSED)
	redeem(codes[1], 1, quan.ELIMIT)
	redeem(codes[1], 2, "")
	redeem(codes[2], 3, quan.ESOLDOUT)
	redeem("2222222222222222", 3, quan.ENOTFOUND)
	if left := get(t, s.Templates, tpl.ID).Stock; left != 0 {
		t.Fatalf("stock %d after two redeems of 2", left)
	}
	if _, err := s.Templates.UpdateTemplate(t.Context(), 1, tpl.ID, "test", "pause", (*quan.Template).Pause); err != nil {
		t.Fatal(err)
	}
	redeem(codes[3], 4, quan.EPAUSED)
	// Code tells a code as it stands.
	if rc, err := s.Codes.Code(t.Context(), codes[0]); err != nil || rc.Code != codes[0] || rc.BatchID != b.ID ||
		rc.TemplateID != tpl.ID || rc.UserID != 1 || rc.CouponID != c.ID || !rc.RedeemedAt.Equal(now) {
		t.Errorf("Code(redeemed) = %+v, %v", rc, err)
	}
	if rc, err := s.Codes.Code(t.Context(), codes[4]); err != nil || rc.TemplateID != tpl.ID || rc.UserID != 0 || !rc.RedeemedAt.IsZero() {
		t.Errorf("Code(unused) = %+v, %v", rc, err)
	}
	if _, err := s.Codes.Code(t.Context(), "2222222222222222"); !errors.Is(err, quan.ErrNotFound) {
		t.Errorf("Code(unknown) = %v, want ErrNotFound", err)
	}
	for rc, err := range s.Codes.Codes(t.Context(), b.ID) {
		if err != nil {
			t.Fatal(err)
		}
		if rc.Code == codes[0] && (rc.UserID != 1 || rc.CouponID != c.ID || !rc.RedeemedAt.Equal(now)) {
			t.Errorf("redeemed code %+v", rc)
		}
	}
}

func testRedeemRace(t *testing.T, s CodeStores) {
	tpl := activeTemplate(t, s.TaskStores, "race", 100, 1)
	b := codeBatchOf(t, s, tpl, 1)
	code := newCodes(t, 1)[0]
	if _, err := s.Codes.AddCodes(t.Context(), b.ID, []string{code}, base); err != nil {
		t.Fatal(err)
	}
	var won atomic.Int64
	var wg sync.WaitGroup
	for u := range int64(10) {
		wg.Go(func() {
			_, err := s.Codes.RedeemCode(t.Context(), code, 1+u, claimAt)
			switch {
			case err == nil:
				won.Add(1)
			case quan.ErrorCode(err) != quan.ECODEUSED:
				t.Errorf("redeem: %v", err)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 || stats(t, s.TaskStores, tpl.ID, 0).Coupons != 1 {
		t.Fatalf("%d of 10 users redeemed one code", won.Load())
	}
}

// testRedeemPeriods: a redeem is refused over the daily or the weekly
// limit, counted by the Shanghai day and week the user received each
// coupon of the template (by a code or otherwise), and the code refused
// stays unused.
func testRedeemPeriods(t *testing.T, s CodeStores) {
	tpl := periodTemplate(t, s.Templates, "code periods")
	b := codeBatchOf(t, s, tpl, 5)
	codes := newCodes(t, 5)
	if _, err := s.Codes.AddCodes(t.Context(), b.ID, codes, base); err != nil {
		t.Fatal(err)
	}
	monday := quan.ShanghaiWeekStart(quan.ShanghaiWeek(base) + 1)
	redeem := func(code string, user int64, at time.Duration, want string) {
		t.Helper()
		_, err := s.Codes.RedeemCode(t.Context(), code, user, monday.Add(at))
		if want == "" && err != nil || want != "" && quan.ErrorCode(err) != want {
			t.Fatalf("redeem %s by user %d at monday+%s: %v, want %q", code, user, at, err, want)
		}
	}
	redeem(codes[0], 1, time.Hour, "")
	redeem(codes[1], 1, 2*time.Hour, quan.EDAILYLIMIT)
	redeem(codes[1], 2, 2*time.Hour, "") // another user, the same code: it was not used up
	redeem(codes[2], 1, 25*time.Hour, "")
	redeem(codes[3], 1, 49*time.Hour, quan.EWEEKLYLIMIT)
	redeem(codes[3], 1, 7*24*time.Hour, "") // next Monday, 00:00 in Shanghai
	if got := stats(t, s.TaskStores, tpl.ID, 0).Coupons; got != 4 {
		t.Fatalf("%d coupons issued, want 4", got)
	}
}
