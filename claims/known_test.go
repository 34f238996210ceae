package claims_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/claims"
	"github.com/quanhq/quan/internal/testrig"
)

// countingTemplates counts the reads of a real template store.
type countingTemplates struct {
	quan.TemplateStore
	highest atomic.Int64 // HighestTemplateID
	others  atomic.Int64 // Template and Templates
}

func (c *countingTemplates) HighestTemplateID(ctx context.Context) (int64, error) {
	c.highest.Add(1)
	return c.TemplateStore.HighestTemplateID(ctx)
}

func (c *countingTemplates) Template(ctx context.Context, shop, id int64) (*quan.Template, error) {
	c.others.Add(1)
	return c.TemplateStore.Template(ctx, shop, id)
}

func (c *countingTemplates) Templates(ctx context.Context, f quan.TemplateFilter) ([]*quan.Template, int, error) {
	c.others.Add(1)
	return c.TemplateStore.Templates(ctx, f)
}

// countedRig is a claim rig whose claims read templates through a
// counter.
func countedRig(t *testing.T) (*testrig.ClaimRig, *countingTemplates) {
	t.Helper()
	r := testrig.NewClaimRig(t, 1000)
	counted := &countingTemplates{TemplateStore: r.Store}
	r.S.Templates = counted
	r.Serve(t)
	return r, counted
}

// newActive stores an active template as another process would: the
// claims are not told, and their cache does not hold it.
func newActive(t *testing.T, r *testrig.ClaimRig) int64 {
	t.Helper()
	tpl := *r.Tpl
	tpl.ID = 0
	if err := r.Store.CreateTemplate(t.Context(), &tpl, "merchant:1"); err != nil {
		t.Fatal(err)
	}
	return tpl.ID
}

// TestClaimUnknownIDsShareLookups floods the claims with made-up
// template ids from 64 goroutines at once: every claim is ErrNotFound,
// and the store is read at most once per LookupEvery, the made-up ids
// sharing each read, and never for a whole template.
func TestClaimUnknownIDsShareLookups(t *testing.T) {
	r, counted := countedRig(t)
	user := quan.Identity{Role: quan.RoleUser, UserID: 1}
	const goroutines, each = 64, 40
	var wg sync.WaitGroup
	var notFound atomic.Int64
	start := make(chan struct{})
	for g := range goroutines {
		wg.Go(func() {
			<-start
			for i := range each {
				_, err := r.S.Claim(t.Context(), user, int64(1_000_000+g*each+i), "")
				if quan.ErrorCode(err) == quan.ENOTFOUND {
					notFound.Add(1)
				} else {
					t.Errorf("claim of a made-up template id: %v, want not_found", err)
				}
			}
		})
	}
	began := time.Now()
	close(start)
	wg.Wait()
	took := time.Since(began)
	// Reads start DefaultLookupEvery apart at least, the first at once.
	reads, bound := counted.highest.Load(), int64(took/claims.DefaultLookupEvery)+1
	t.Logf("%d claims of made-up ids in %s: %d reads of the highest id (at most %d), %d other reads",
		goroutines*each, took.Round(time.Millisecond), reads, bound, counted.others.Load())
	if reads > bound || reads == 0 {
		t.Errorf("%d claims of made-up ids in %s read the highest id %d times, want 1 to %d", goroutines*each, took, reads, bound)
	}
	if n := counted.others.Load(); n != 0 {
		t.Errorf("the made-up ids read %d templates from the store, want none", n)
	}
	if notFound.Load() != goroutines*each || r.S.Counters.UnknownIDs.Load() != goroutines*each {
		t.Errorf("%d not found, %d unknown ids counted; want %d", notFound.Load(), r.S.Counters.UnknownIDs.Load(), goroutines*each)
	}
}

// TestClaimFindsTemplateCreatedElsewhere: a template another process
// created and activated, which neither told the claims nor primed their
// cache, is claimed at once, however recently the claims last read the
// highest id (a made-up id just before each).
func TestClaimFindsTemplateCreatedElsewhere(t *testing.T) {
	r, counted := countedRig(t)
	for i := range 20 {
		user := quan.Identity{Role: quan.RoleUser, UserID: int64(i + 1)}
		if _, err := r.S.Claim(t.Context(), user, 999_999, ""); quan.ErrorCode(err) != quan.ENOTFOUND {
			t.Fatalf("claim of a made-up id: %v, want not_found", err)
		}
		id := newActive(t, r)
		c, err := r.S.Claim(t.Context(), user, id, "")
		if err != nil {
			t.Fatalf("claim of template %d right after another process created it: %v", id, err)
		}
		if c.Status != quan.ClaimPending {
			t.Fatalf("claim %+v, want pending", c)
		}
	}
	if n := counted.highest.Load(); n < 20 {
		t.Errorf("the highest id was read %d times for 20 templates created elsewhere, want a read for each", n)
	}
}

// TestClaimTemplateCreatedKnownAtOnce: a template the claims were told of
// (TemplateCreated, as the templates service of their process tells
// them) is claimed without a read of the highest id.
func TestClaimTemplateCreatedKnownAtOnce(t *testing.T) {
	r, counted := countedRig(t)
	user := quan.Identity{Role: quan.RoleUser, UserID: 1}
	if _, err := r.S.Claim(t.Context(), user, r.Tpl.ID, ""); err != nil {
		t.Fatal(err)
	}
	before := counted.highest.Load()
	id := newActive(t, r)
	r.S.TemplateCreated(id)
	if _, err := r.S.Claim(t.Context(), user, id, ""); err != nil {
		t.Fatalf("claim of template %d the claims were told of: %v", id, err)
	}
	if n := counted.highest.Load() - before; n != 0 {
		t.Errorf("the claim of a template the claims were told of read the highest id %d times, want 0", n)
	}
}
