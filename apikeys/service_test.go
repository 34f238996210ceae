package apikeys_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/apikeys"
	"github.com/quanhq/quan/sqlite"
)

var admin = quan.Identity{Subject: "ops", Role: quan.RoleAdmin}

// clock is a settable time.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newService(t *testing.T, st *sqlite.Store, c *clock) *apikeys.Service {
	return &apikeys.Service{Keys: st, Secrets: st, Now: c.now}
}

func openStore(t *testing.T) *sqlite.Store {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "quan.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return sqlite.NewStore(db)
}

func TestCreateAuthenticate(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := openStore(t)
	c := &clock{time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := newService(t, st, c)
	k, secret, err := s.Create(ctx, admin, apikeys.NewKey{Name: "pos", ShopNo: 1001, Scopes: []quan.KeyScope{quan.ScopeRedeem, quan.ScopeCouponsRead}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, "qk_") || len(secret) != 46 || k.Hint != secret[:7] {
		t.Errorf("key %q hint %q", secret, k.Hint)
	}
	if strings.Contains(string(k.Hash), secret) || len(k.Hash) != 32 {
		t.Errorf("the store keeps %x", k.Hash)
	}
	id, err := s.Authenticate(ctx, secret)
	if err != nil {
		t.Fatal(err)
	}
	if id.Role != quan.RoleService || id.KeyID != k.ID || id.ShopNo != 1001 || !id.HasScope(quan.ScopeRedeem) || id.HasScope(quan.ScopeSettlement) {
		t.Errorf("identity %+v", id)
	}
	ks, err := s.List(ctx, admin)
	if err != nil || len(ks) != 1 || !ks[0].LastUsedAt.Equal(c.t) {
		t.Errorf("List = %+v, %v: want the key, used at %v", ks, err, c.t)
	}
	// A second process on the same store (its own Service) knows the key:
	// the secret is the store's.
	other := newService(t, st, c)
	if _, err := other.Authenticate(ctx, secret); err != nil {
		t.Errorf("another process: %v", err)
	}
	for _, bad := range []string{"qk_nothing", secret + "x", "qk_" + strings.Repeat("a", 200), "eyJhbGciOi"} {
		if _, err := s.Authenticate(ctx, bad); quan.ErrorCode(err) != quan.EUNAUTHORIZED {
			t.Errorf("key %q: %v, want unauthorized", bad, err)
		}
	}
}

// TestRevokeReachesOtherProcesses: a key revoked through one process is
// refused by it at once, and by another one once its cache period is
// over, not before (the clock moves, nothing sleeps).
func TestRevokeReachesOtherProcesses(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := openStore(t)
	c := &clock{time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	one, two := newService(t, st, c), newService(t, st, c)
	k, secret, err := one.Create(ctx, admin, apikeys.NewKey{Name: "orders", Scopes: []quan.KeyScope{quan.ScopeSettlement}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := two.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if _, err := one.Revoke(ctx, admin, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := one.Authenticate(ctx, secret); quan.ErrorCode(err) != quan.EUNAUTHORIZED {
		t.Errorf("the revoking process: %v, want unauthorized", err)
	}
	c.t = c.t.Add(apikeys.DefaultCacheFor - time.Millisecond)
	if _, err := two.Authenticate(ctx, secret); err != nil {
		t.Errorf("within the cache period the other process still trusts the key: %v", err)
	}
	c.t = c.t.Add(time.Millisecond)
	if _, err := two.Authenticate(ctx, secret); quan.ErrorCode(err) != quan.EUNAUTHORIZED {
		t.Errorf("after the cache period: %v, want unauthorized", err)
	}
}

// TestOnlyAdmins: merchants, users and keys make, list and revoke none.
func TestOnlyAdmins(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := openStore(t)
	s := newService(t, st, &clock{time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)})
	for _, who := range []quan.Identity{
		{Role: quan.RoleMerchant, ShopNo: 1},
		{Role: quan.RoleUser, UserID: 1},
		{Role: quan.RoleService, KeyID: 1, Scopes: quan.NewScopeSet(quan.AllScopes()...)},
	} {
		if _, _, err := s.Create(ctx, who, apikeys.NewKey{Name: "x", Scopes: []quan.KeyScope{quan.ScopeTasks}}); quan.ErrorCode(err) != quan.EFORBIDDEN {
			t.Errorf("%s creates: %v", who, err)
		}
		if _, err := s.List(ctx, who); quan.ErrorCode(err) != quan.EFORBIDDEN {
			t.Errorf("%s lists: %v", who, err)
		}
		if _, err := s.Revoke(ctx, who, 1); quan.ErrorCode(err) != quan.EFORBIDDEN {
			t.Errorf("%s revokes: %v", who, err)
		}
	}
}

func TestCreateInvalid(t *testing.T) {
	t.Parallel()
	s := newService(t, openStore(t), &clock{time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)})
	for field, in := range map[string]apikeys.NewKey{
		"name":   {Name: " ", Scopes: []quan.KeyScope{quan.ScopeTasks}},
		"shopNo": {Name: "x", ShopNo: -1, Scopes: []quan.KeyScope{quan.ScopeTasks}},
		"scopes": {Name: "x", Scopes: []quan.KeyScope{"admin"}},
	} {
		_, _, err := s.Create(t.Context(), admin, in)
		var qe *quan.Error
		if !errors.As(err, &qe) || qe.Code != quan.EINVALID || len(qe.Fields) == 0 || qe.Fields[0].Field != field {
			t.Errorf("%+v: %v, want invalid naming %s", in, err, field)
		}
	}
}
