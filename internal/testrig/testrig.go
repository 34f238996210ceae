// Package testrig holds what the tests of quan's use cases share: a
// settable clock, a fresh SQLite store, the identities they act as, a
// template to issue, and a claim service on real engines (ClaimRig). Only
// tests import it.
package testrig

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"iter"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/claims"
	"github.com/quanhq/quan/inmem"
	"github.com/quanhq/quan/internal/integration"
	"github.com/quanhq/quan/nats"
	"github.com/quanhq/quan/quantest"
	"github.com/quanhq/quan/redis"
	"github.com/quanhq/quan/sqlite"
	"github.com/quanhq/quan/templates"
)

// Clock is a settable clock, safe for concurrent use: tests move it past
// leases, backoffs, windows and quiet hours instead of sleeping.
type Clock struct{ t atomic.Int64 }

// NewClock returns a Clock at t.
func NewClock(t time.Time) *Clock {
	c := &Clock{}
	c.Set(t)
	return c
}

// Now returns the clock's time, in UTC.
func (c *Clock) Now() time.Time { return time.Unix(0, c.t.Load()).UTC() }

// Set sets the clock to t.
func (c *Clock) Set(t time.Time) { c.t.Store(t.UnixNano()) }

// Add moves the clock on by d.
func (c *Clock) Add(d time.Duration) { c.Set(c.Now().Add(d)) }

// At returns the clock as a use case's Now.
func (c *Clock) At() func() time.Time { return c.Now }

// Store returns a fresh SQLite store in a folder of tb's own, closed when
// tb ends.
func Store(tb testing.TB) *sqlite.Store {
	tb.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(tb.TempDir(), "quan.db"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return sqlite.NewStore(db)
}

// Identities the tests act as.
var (
	Admin     = quan.Identity{Subject: "root", Role: quan.RoleAdmin}
	Merchant1 = quan.Identity{Subject: "merchant:1", Role: quan.RoleMerchant, ShopNo: 1}
)

// DirectSpec is a direct template of shop 1 issuing from start for 30
// days, its coupons valid 48 hours.
func DirectSpec(start time.Time) templates.NewTemplate {
	return templates.NewTemplate{Stock: 100, TemplateSpec: quan.TemplateSpec{
		Name: "立减5元", Kind: quan.KindDirect, Rule: quan.Rule{Amount: 500}, Source: quan.SourceShop,
		Scope: quan.Scope{Kind: quan.ScopeAll}, IssueStart: start, IssueEnd: start.Add(30 * 24 * time.Hour),
		Validity: quan.Validity{Kind: quan.ValidRelative, Hours: 48}, PerUserLimit: 1,
	}}
}

// ClaimAt is inside the issue window of ClaimRig's template, which opens
// at IssueStart.
var (
	IssueStart = time.Date(2030, 3, 14, 9, 0, 0, 0, time.UTC)
	ClaimAt    = IssueStart.Add(2 * time.Hour)
)

// ClaimRig is a claim service on SQLite, the in-process cache and an
// embedded NATS server, with an active template of the given stock, one
// coupon per user. Its consumers run once Serve is called.
type ClaimRig struct {
	S     *claims.Service
	Store *sqlite.Store
	Cache quan.Cache
	Bus   *nats.Bus // unwrapped, to publish batches as a peer process would
	Tpl   *quan.Template
}

func NewClaimRig(t *testing.T, stock int64) *ClaimRig {
	t.Helper()
	return NewClaimRigWith(t, stock, func(*quan.Template) {})
}

// NewClaimRigWith is newClaimRig with a template that change changes
// before it is stored.
func NewClaimRigWith(t *testing.T, stock int64, change func(*quan.Template)) *ClaimRig {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "quan.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	srv, err := nats.StartEmbedded(t.Context(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	bus, err := srv.Bus(t.Context(), nats.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bus.Close() })
	store := sqlite.NewStore(db)
	tpl := &quan.Template{
		ShopNo: 1,
		TemplateSpec: quan.TemplateSpec{
			Name: "flash", Kind: quan.KindDirect, Rule: quan.Rule{Amount: 500}, Source: quan.SourceShop,
			Scope:      quan.Scope{Kind: quan.ScopeAll},
			IssueStart: IssueStart, IssueEnd: IssueStart.Add(48 * time.Hour),
			Validity:     quan.Validity{Kind: quan.ValidFixed, Start: IssueStart, End: IssueStart.Add(24 * time.Hour)},
			PerUserLimit: 1,
		},
		Stock: stock, TotalStock: stock, Status: quan.TemplateActive,
		CreatedBy: "merchant:1", CreatedAt: IssueStart, UpdatedAt: IssueStart,
	}
	change(tpl)
	if err := tpl.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := store.CreateTemplate(t.Context(), tpl, "merchant:1"); err != nil {
		t.Fatal(err)
	}
	cache := inmem.NewCache()
	return &ClaimRig{
		S: &claims.Service{Templates: store, Coupons: store, Claims: store, Cache: cache, Bus: bus,
			Now: func() time.Time { return ClaimAt }, MaxDeliver: 2, Backoff: []time.Duration{10 * time.Millisecond}},
		Store: store, Cache: cache, Bus: bus, Tpl: tpl,
	}
}

// Serve runs the claim consumers until the test ends.
func (r *ClaimRig) Serve(t *testing.T) {
	quantest.ServeClaims(t, r.S)
}

// Reserve reserves a coupon for each user in the cache, as Claim does, and
// returns their pending claims.
func (r *ClaimRig) Reserve(t *testing.T, users ...int64) []*quan.Claim {
	t.Helper()
	none := func(func(quan.Holding, error) bool) {}
	if _, err := r.Cache.Load(t.Context(), quan.StateOf(r.Tpl), iter.Seq2[quan.Holding, error](none)); err != nil {
		t.Fatal(err)
	}
	var cs []*quan.Claim
	for _, u := range users {
		c := &quan.Claim{ID: quan.NewClaimID(r.Tpl.ID, u), TemplateID: r.Tpl.ID, UserID: u, Status: quan.ClaimPending, At: ClaimAt}
		refusals, err := r.Cache.Reserve(t.Context(), r.Tpl.ID, c.ID, []int64{u}, ClaimAt)
		if err != nil || refusals[0] != "" {
			t.Fatalf("reserve for user %d: %v %v", u, refusals, err)
		}
		cs = append(cs, c)
	}
	return cs
}

// PublishBatch publishes cs in one message, as Claim hands a batch off.
func (r *ClaimRig) PublishBatch(t *testing.T, cs []*quan.Claim) {
	t.Helper()
	data, err := quan.EncodeClaims(cs)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Bus.Publish(t.Context(), quan.Message{Subject: quan.ClaimBatchSubject, ID: "claims:" + cs[0].ID, Data: data}); err != nil {
		t.Fatal(err)
	}
}

// WaitFor polls until cond holds, failing the test after 20 seconds.
func WaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 20s, still waiting for %s", what)
		}
	}
}

// AssertStock checks that the cache and the store both hold stock.
func (r *ClaimRig) AssertStock(t *testing.T, stock int64) {
	t.Helper()
	st, err := r.Cache.State(t.Context(), r.Tpl.ID)
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := r.Store.Template(t.Context(), quan.AnyShop, r.Tpl.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.Stock != stock || tpl.Stock != stock {
		t.Errorf("stock %d in the cache, %d in the store; want %d", st.Stock, tpl.Stock, stock)
	}
}

// NewLedgerRig is NewClaimRig on a Redis cache, which keeps a claim
// ledger, and a clock that later moves past the reaper's wait (safe while
// the rig's consumers read it). It skips without QUAN_TEST_REDIS (CI sets
// it).
func NewLedgerRig(t *testing.T, stock int64) (r *ClaimRig, c *redis.Cache, later func()) {
	t.Helper()
	url := integration.Need(t, integration.Redis)[0]
	var b [6]byte
	rand.Read(b[:])
	c, err := redis.Open(t.Context(), url, "quantest:"+hex.EncodeToString(b[:])+":")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Drop(t.Context())
		c.Close()
	})
	r = NewClaimRig(t, stock)
	r.Cache, r.S.Cache, r.S.Ledger, r.S.Reserver = c, c, c, c
	var shift atomic.Int64
	r.S.Now = func() time.Time { return ClaimAt.Add(time.Duration(shift.Load())) }
	return r, c, func() { shift.Store(int64(claims.DefaultReapAfter + time.Second)) }
}

// LoadCache loads the rig's template into its cache.
func (r *ClaimRig) LoadCache(t *testing.T) {
	t.Helper()
	tpl, err := r.Store.Template(t.Context(), quan.AnyShop, r.Tpl.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Cache.Load(t.Context(), quan.StateOf(tpl), r.Store.Holdings(t.Context(), r.Tpl.ID, time.Time{})); err != nil && !errors.Is(err, quan.ErrCacheCold) {
		t.Fatal(err)
	}
}

// Template creates in (as Merchant1) in st on the clock now, activated if
// activate says so, and returns it.
func Template(t *testing.T, st *sqlite.Store, now quan.Clock, in templates.NewTemplate, activate bool) *quan.Template {
	t.Helper()
	s := &templates.Service{Store: st, Now: now}
	tpl, err := s.Create(t.Context(), Merchant1, in)
	if err != nil {
		t.Fatalf("create template: %v", err)
	}
	if activate {
		if tpl, err = s.Activate(t.Context(), Merchant1, tpl.ID); err != nil {
			t.Fatalf("activate template %d: %v", tpl.ID, err)
		}
	}
	return tpl
}
