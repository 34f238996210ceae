package app

import (
	"context"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/accounts"
)

// TestAccountsWired: every role gets the console's accounts on its store,
// recorded by the store's metrics, and a sign-in on one process's store
// is a session another process on the same data folder accepts.
func TestAccountsWired(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	local, err := Open(ctx, Config{DataDir: dir}, Local, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	if local.Accounts == nil {
		t.Fatal("no AccountService for Local")
	}
	local.Accounts.HashCost = bcrypt.MinCost
	root := quan.Identity{Subject: "root", Role: quan.RoleAdmin}
	if _, err := local.Accounts.Add(ctx, root, accounts.NewAccount{Name: "alice", Role: quan.RoleMerchant, ShopNo: 1001, Password: "a good password"}); err != nil {
		t.Fatal(err)
	}
	tok, _, _, err := local.Accounts.Login(ctx, "alice", "a good password", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	local.Close()

	srv, err := Open(ctx, Config{DataDir: dir}, Server, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	_, acct, err := srv.Accounts.Authenticate(ctx, tok)
	if err != nil || acct.Identity() != (quan.Identity{Subject: "alice", Role: quan.RoleMerchant, ShopNo: 1001}) {
		t.Fatalf("Authenticate on the server: %+v, %v", acct, err)
	}
	// The Session call is recorded as op "Session" of backend "store".
	if n := storeCalls(t, srv, "Session"); n != 1 {
		t.Errorf("the store's Session call is recorded %d times in quan_backend_duration_seconds, want 1", n)
	}
}

// storeCalls returns how many calls of op the store's metrics of a have
// recorded.
func storeCalls(t *testing.T, a *App, op string) uint64 {
	t.Helper()
	mfs, err := a.Metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "quan_backend_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["backend"] == "store" && labels["op"] == op {
				return m.GetHistogram().GetSampleCount()
			}
		}
	}
	return 0
}
