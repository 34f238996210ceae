package quantest

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// TestAccountStore runs the conformance suite of quan.AccountStore.
// newStore returns a fresh, empty store for each subtest.
func TestAccountStore(t *testing.T, newStore func(t *testing.T) quan.AccountStore) {
	t.Helper()
	run := func(name string, test func(*testing.T, quan.AccountStore)) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, newStore(t))
		})
	}
	run("Accounts/CreateAndRead", testAccountCreate)
	run("Accounts/NameTakenInAnyCase", testAccountConflict)
	run("Accounts/NotFound", testAccountNotFound)
	run("Accounts/PagesByNameWithFilters", testAccountsPage)
	run("Accounts/Update", testAccountUpdate)
	run("Accounts/UpdateFnErrorWritesNothing", testAccountUpdateFnError)
	run("Sessions/CRUD", testSessions)
	run("Sessions/DeleteByAccount", testSessionsOfAccount)
	run("Sessions/DeleteExpired", testSessionsExpired)
	run("LoginFailures/CountWithinWindow", testLoginFailures)
	run("LoginFailures/Concurrent", testLoginFailedConcurrent)
	run("LoginFailures/Forgive", testLoginFailuresForgive)
}

// newAccount returns an account of shop (an admin's for shop 0) named
// name, not stored.
func newAccount(name string, shop int64) *quan.Account {
	role := quan.RoleMerchant
	if shop == 0 {
		role = quan.RoleAdmin
	}
	return &quan.Account{Name: name, Role: role, ShopNo: shop, PasswordHash: []byte("$2a$04$" + name),
		CreatedBy: "admin:root", CreatedAt: base, UpdatedAt: base}
}

func createAccount(t *testing.T, s quan.AccountStore, a *quan.Account) *quan.Account {
	t.Helper()
	if err := s.CreateAccount(t.Context(), a); err != nil {
		t.Fatalf("create account %q: %v", a.Name, err)
	}
	if a.ID <= 0 {
		t.Fatalf("create account %q: id %d, want positive", a.Name, a.ID)
	}
	return a
}

func assertAccount(t *testing.T, got, want *quan.Account) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("account:\n got %+v\nwant %+v", got, want)
	}
}

func testAccountCreate(t *testing.T, s quan.AccountStore) {
	a := createAccount(t, s, newAccount("Alice.Ops@shop-1001", 1001))
	b := createAccount(t, s, newAccount("root", 0))
	if b.ID == a.ID {
		t.Fatalf("two accounts got id %d", a.ID)
	}
	got, err := s.Account(t.Context(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	assertAccount(t, got, a)
	// By name, in any ASCII case.
	for _, name := range []string{"Alice.Ops@shop-1001", "alice.ops@SHOP-1001"} {
		got, err := s.AccountByName(t.Context(), name)
		if err != nil {
			t.Fatalf("AccountByName(%q): %v", name, err)
		}
		assertAccount(t, got, a)
	}
	got, err = s.Account(t.Context(), b.ID)
	if err != nil {
		t.Fatal(err)
	}
	assertAccount(t, got, b)
}

func testAccountConflict(t *testing.T, s quan.AccountStore) {
	createAccount(t, s, newAccount("alice", 1001))
	for _, name := range []string{"alice", "ALICE", "Alice"} {
		a := newAccount(name, 1002)
		err := s.CreateAccount(t.Context(), a)
		if !errors.Is(err, quan.ErrConflict) {
			t.Errorf("create a second %q: %v, want ErrConflict", name, err)
		}
		if a.ID != 0 {
			t.Errorf("create a second %q: id set to %d", name, a.ID)
		}
	}
	_, n, err := s.Accounts(t.Context(), quan.AccountFilter{})
	if err != nil || n != 1 {
		t.Errorf("Accounts: %d, %v; want 1 account", n, err)
	}
}

func testAccountNotFound(t *testing.T, s quan.AccountStore) {
	ctx := t.Context()
	if _, err := s.Account(ctx, 42); !errors.Is(err, quan.ErrNotFound) {
		t.Errorf("Account(42): %v, want ErrNotFound", err)
	}
	for _, name := range []string{"nobody", "", "名字", string(make([]byte, 300))} {
		if _, err := s.AccountByName(ctx, name); !errors.Is(err, quan.ErrNotFound) {
			t.Errorf("AccountByName(%q): %v, want ErrNotFound", name, err)
		}
	}
	if _, err := s.UpdateAccount(ctx, 42, func(*quan.Account) error { return nil }); !errors.Is(err, quan.ErrNotFound) {
		t.Errorf("UpdateAccount(42): %v, want ErrNotFound", err)
	}
	if _, err := s.Session(ctx, make([]byte, 32)); !errors.Is(err, quan.ErrNotFound) {
		t.Errorf("Session: %v, want ErrNotFound", err)
	}
}

func accountNames(as []*quan.Account) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.Name
	}
	return out
}

func testAccountsPage(t *testing.T, s quan.AccountStore) {
	// Created out of order; listed by name regardless of case.
	for _, a := range []*quan.Account{
		newAccount("dave", 1001), newAccount("Bob", 1002), newAccount("carol", 1001),
		newAccount("root", 0), newAccount("alice", 1001), newAccount("e_100%", 1001),
	} {
		createAccount(t, s, a)
	}
	for _, tc := range []struct {
		name  string
		f     quan.AccountFilter
		want  []string
		total int
	}{
		{"All", quan.AccountFilter{}, []string{"alice", "Bob", "carol", "dave", "e_100%", "root"}, 6},
		{"Shop", quan.AccountFilter{ShopNo: 1001}, []string{"alice", "carol", "dave", "e_100%"}, 4},
		{"Page2", quan.AccountFilter{ShopNo: 1001, Offset: 1, Limit: 2}, []string{"carol", "dave"}, 4},
		{"PastTheEnd", quan.AccountFilter{Offset: 10}, []string{}, 6},
		{"NameContainsAnyCase", quan.AccountFilter{NameContains: "O"}, []string{"Bob", "carol", "root"}, 3},
		{"NameContainsInShop", quan.AccountFilter{ShopNo: 1002, NameContains: "b"}, []string{"Bob"}, 1},
		{"LikeCharactersAreLiteral", quan.AccountFilter{NameContains: "_1"}, []string{"e_100%"}, 1},
		{"PercentIsLiteral", quan.AccountFilter{NameContains: "%"}, []string{"e_100%"}, 1},
		{"NoMatch", quan.AccountFilter{NameContains: "zz"}, []string{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as, n, err := s.Accounts(t.Context(), tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if got := accountNames(as); !slices.Equal(got, tc.want) || n != tc.total {
				t.Errorf("Accounts(%+v) = %q, total %d; want %q, %d", tc.f, got, n, tc.want, tc.total)
			}
		})
	}
	// Limit 0 is the default page, one above the maximum is cut to it.
	for i := range quan.MaxPageSize + 1 {
		createAccount(t, s, newAccount(fmt.Sprintf("m%03d", i), 7))
	}
	for limit, want := range map[int]int{0: quan.DefaultPageSize, quan.MaxPageSize + 1: quan.MaxPageSize} {
		as, n, err := s.Accounts(t.Context(), quan.AccountFilter{ShopNo: 7, Limit: limit})
		if err != nil || len(as) != want || n != quan.MaxPageSize+1 {
			t.Errorf("Limit %d: %d accounts of %d, %v; want %d of %d", limit, len(as), n, err, want, quan.MaxPageSize+1)
		}
	}
}

func testAccountUpdate(t *testing.T, s quan.AccountStore) {
	a := createAccount(t, s, newAccount("alice", 1001))
	createAccount(t, s, newAccount("bob", 1001))
	later := base.Add(time.Hour)
	got, err := s.UpdateAccount(t.Context(), a.ID, func(cur *quan.Account) error {
		assertAccount(t, cur, a)
		cur.Disabled, cur.PasswordHash, cur.UpdatedAt = true, []byte("$2a$04$new"), later
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := *a
	want.Disabled, want.PasswordHash, want.UpdatedAt = true, []byte("$2a$04$new"), later
	assertAccount(t, got, &want)
	read, err := s.Account(t.Context(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	assertAccount(t, read, &want)

	// A rename to a name taken is a conflict, and changes nothing.
	_, err = s.UpdateAccount(t.Context(), a.ID, func(cur *quan.Account) error {
		cur.Name = "BOB"
		return nil
	})
	if !errors.Is(err, quan.ErrConflict) {
		t.Errorf("rename to a taken name: %v, want ErrConflict", err)
	}
	if read, _ := s.AccountByName(t.Context(), "alice"); read == nil || read.ID != a.ID {
		t.Errorf("after a refused rename, alice is %+v", read)
	}
}

func testAccountUpdateFnError(t *testing.T, s quan.AccountStore) {
	a := createAccount(t, s, newAccount("alice", 1001))
	boom := quan.Errorf(quan.EFORBIDDEN, "no")
	_, err := s.UpdateAccount(t.Context(), a.ID, func(cur *quan.Account) error {
		cur.Disabled = true
		return boom
	})
	if err != boom {
		t.Errorf("UpdateAccount returned %v, want fn's error as it is", err)
	}
	read, err := s.Account(t.Context(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	assertAccount(t, read, a)
}

// newSession returns a session of account, not stored, its ID the
// SHA-256 of token.
func newSession(account int64, token string, seen time.Time, idle time.Duration) *quan.Session {
	id := sha256.Sum256([]byte(token))
	return &quan.Session{ID: id[:], AccountID: account, CSRF: "csrf-" + token, Addr: "192.0.2.7",
		CreatedAt: seen, SeenAt: seen, ExpiresAt: seen.Add(idle)}
}

func createSession(t *testing.T, s quan.AccountStore, sess *quan.Session) {
	t.Helper()
	if err := s.CreateSession(t.Context(), sess); err != nil {
		t.Fatalf("create session: %v", err)
	}
}

func testSessions(t *testing.T, s quan.AccountStore) {
	ctx := t.Context()
	a := createAccount(t, s, newAccount("alice", 1001))
	one := newSession(a.ID, "one", base, time.Hour)
	two := newSession(a.ID, "two", base, time.Hour)
	createSession(t, s, one)
	createSession(t, s, two)
	if err := s.CreateSession(ctx, newSession(a.ID, "one", base, time.Hour)); err == nil {
		t.Error("a second session with the same id was stored")
	}
	got, err := s.Session(ctx, one.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, one) {
		t.Errorf("Session:\n got %+v\nwant %+v", got, one)
	}

	seen, expires := base.Add(10*time.Minute), base.Add(70*time.Minute)
	if err := s.TouchSession(ctx, one.ID, seen, expires); err != nil {
		t.Fatal(err)
	}
	got, err = s.Session(ctx, one.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := *one
	want.SeenAt, want.ExpiresAt = seen, expires
	if !reflect.DeepEqual(got, &want) {
		t.Errorf("touched session:\n got %+v\nwant %+v", got, &want)
	}
	if got, _ := s.Session(ctx, two.ID); got == nil || !got.SeenAt.Equal(base) {
		t.Errorf("touching one session changed another: %+v", got)
	}

	if err := s.DeleteSession(ctx, one.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Session(ctx, one.ID); !errors.Is(err, quan.ErrNotFound) {
		t.Errorf("deleted session: %v, want ErrNotFound", err)
	}
	if err := s.DeleteSession(ctx, one.ID); err != nil {
		t.Errorf("deleting a deleted session: %v, want nil", err)
	}
	if _, err := s.Session(ctx, two.ID); err != nil {
		t.Errorf("deleting one session took another: %v", err)
	}
}

func testSessionsOfAccount(t *testing.T, s quan.AccountStore) {
	ctx := t.Context()
	a := createAccount(t, s, newAccount("alice", 1001))
	b := createAccount(t, s, newAccount("bob", 1001))
	for _, tok := range []string{"a1", "a2", "a3"} {
		createSession(t, s, newSession(a.ID, tok, base, time.Hour))
	}
	kept := newSession(b.ID, "b1", base, time.Hour)
	createSession(t, s, kept)
	n, err := s.DeleteSessions(ctx, a.ID)
	if err != nil || n != 3 {
		t.Errorf("DeleteSessions: %d, %v; want 3", n, err)
	}
	if n, err := s.DeleteSessions(ctx, a.ID); err != nil || n != 0 {
		t.Errorf("DeleteSessions again: %d, %v; want 0", n, err)
	}
	if _, err := s.Session(ctx, kept.ID); err != nil {
		t.Errorf("another account's session: %v", err)
	}
}

func testSessionsExpired(t *testing.T, s quan.AccountStore) {
	ctx := t.Context()
	a := createAccount(t, s, newAccount("alice", 1001))
	old := newSession(a.ID, "old", base, time.Hour)                  // ends base+1h
	edge := newSession(a.ID, "edge", base.Add(time.Hour), time.Hour) // ends base+2h
	live := newSession(a.ID, "live", base.Add(2*time.Hour), time.Hour)
	for _, sess := range []*quan.Session{old, edge, live} {
		createSession(t, s, sess)
	}
	n, err := s.DeleteExpiredSessions(ctx, base.Add(2*time.Hour))
	if err != nil || n != 1 {
		t.Errorf("DeleteExpiredSessions: %d, %v; want 1 (one expired before, one at the instant)", n, err)
	}
	if _, err := s.Session(ctx, old.ID); !errors.Is(err, quan.ErrNotFound) {
		t.Errorf("expired session: %v, want ErrNotFound", err)
	}
	for _, sess := range []*quan.Session{edge, live} {
		if _, err := s.Session(ctx, sess.ID); err != nil {
			t.Errorf("session ending at %v was swept: %v", sess.ExpiresAt, err)
		}
	}
}

func testLoginFailures(t *testing.T, s quan.AccountStore) {
	ctx := t.Context()
	const window = 15 * time.Minute
	check := func(what string, n int, first time.Time, err error, wantN int, wantFirst time.Time) {
		t.Helper()
		if err != nil || n != wantN || !first.Equal(wantFirst) {
			t.Errorf("%s: %d since %v, %v; want %d since %v", what, n, first, err, wantN, wantFirst)
		}
	}
	n, first, err := s.LoginFailures(ctx, "account:alice", base, window)
	check("none yet", n, first, err, 0, time.Time{})
	for i := 1; i <= 3; i++ {
		n, first, err = s.LoginFailed(ctx, "account:alice", base.Add(time.Duration(i-1)*time.Minute), window)
		check(fmt.Sprintf("failure %d", i), n, first, err, i, base)
	}
	n, first, err = s.LoginFailures(ctx, "account:alice", base.Add(14*time.Minute), window)
	check("within the window", n, first, err, 3, base)
	n, first, err = s.LoginFailures(ctx, "addr:192.0.2.7", base, window)
	check("another key", n, first, err, 0, time.Time{})
	n, first, err = s.LoginFailures(ctx, "account:alice", base.Add(window), window)
	check("the window of the first passed", n, first, err, 0, time.Time{})

	// A failure after the window starts the count again.
	later := base.Add(window + time.Second)
	n, first, err = s.LoginFailed(ctx, "account:alice", later, window)
	check("failure after the window", n, first, err, 1, later)
	n, first, err = s.LoginFailed(ctx, "account:alice", later.Add(time.Second), window)
	check("next failure", n, first, err, 2, later)

	if err := s.ClearLoginFailures(ctx, "account:alice"); err != nil {
		t.Fatal(err)
	}
	n, first, err = s.LoginFailures(ctx, "account:alice", later.Add(time.Second), window)
	check("cleared", n, first, err, 0, time.Time{})
	if err := s.ClearLoginFailures(ctx, "account:nobody"); err != nil {
		t.Errorf("clearing a key with no failures: %v", err)
	}
	n, first, err = s.LoginFailed(ctx, "account:alice", later.Add(2*time.Second), window)
	check("failure after clearing", n, first, err, 1, later.Add(2*time.Second))

	// Keys whose window passed are deleted, the others kept.
	if _, _, err := s.LoginFailed(ctx, "addr:192.0.2.9", later.Add(3*time.Second), window); err != nil {
		t.Fatal(err)
	}
	if n, err := s.DeleteLoginFailures(ctx, later.Add(2*time.Second)); err != nil || n != 1 {
		t.Fatalf("DeleteLoginFailures = %d, %v; want 1 (alice's)", n, err)
	}
	n, first, err = s.LoginFailures(ctx, "account:alice", later.Add(3*time.Second), window)
	check("deleted", n, first, err, 0, time.Time{})
	n, first, err = s.LoginFailures(ctx, "addr:192.0.2.9", later.Add(3*time.Second), window)
	check("kept", n, first, err, 1, later.Add(3*time.Second))
}

// testLoginFailedConcurrent fails 50 sign-ins under one new key at once:
// every one counts, and each sees a count of its own.
func testLoginFailedConcurrent(t *testing.T, s quan.AccountStore) {
	const n = 50
	var (
		start = make(chan struct{})
		wg    sync.WaitGroup
		mu    sync.Mutex
		seen  []int
	)
	for range n {
		wg.Go(func() {
			<-start
			got, _, err := s.LoginFailed(t.Context(), "addr:198.51.100.1", base, 15*time.Minute)
			if err != nil {
				t.Errorf("LoginFailed: %v", err)
				return
			}
			mu.Lock()
			seen = append(seen, got)
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	got, first, err := s.LoginFailures(t.Context(), "addr:198.51.100.1", base, 15*time.Minute)
	if err != nil || got != n || !first.Equal(base) {
		t.Errorf("after %d concurrent failures: %d since %v, %v; want %d since %v", n, got, first, err, n, base)
	}
	slices.Sort(seen)
	want := make([]int, n)
	for i := range want {
		want[i] = i + 1
	}
	if !slices.Equal(seen, want) {
		t.Errorf("the failures saw counts %v, want 1 to %d once each", seen, n)
	}
}

// testLoginFailuresForgive takes failures off a count: never below zero,
// the first failure's time kept, other keys untouched, a missing key
// left missing.
func testLoginFailuresForgive(t *testing.T, s quan.AccountStore) {
	ctx := t.Context()
	const window = 15 * time.Minute
	for i := range 5 {
		if _, _, err := s.LoginFailed(ctx, "addr:192.0.2.7", base.Add(time.Duration(i)*time.Second), window); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.LoginFailed(ctx, "addr:192.0.2.8", base, window); err != nil {
		t.Fatal(err)
	}
	if err := s.ForgiveLoginFailures(ctx, "addr:192.0.2.7", 2); err != nil {
		t.Fatal(err)
	}
	now := base.Add(time.Minute)
	if n, first, err := s.LoginFailures(ctx, "addr:192.0.2.7", now, window); err != nil || n != 3 || !first.Equal(base) {
		t.Errorf("5 failures, 2 forgiven: %d since %v, %v; want 3 since %v", n, first, err, base)
	}
	if n, _, err := s.LoginFailures(ctx, "addr:192.0.2.8", now, window); err != nil || n != 1 {
		t.Errorf("another key: %d, %v; want 1", n, err)
	}
	// A failure after forgiving counts on from what is left.
	if n, first, err := s.LoginFailed(ctx, "addr:192.0.2.7", now, window); err != nil || n != 4 || !first.Equal(base) {
		t.Errorf("a failure after forgiving: %d since %v, %v; want 4 since %v", n, first, err, base)
	}
	if err := s.ForgiveLoginFailures(ctx, "addr:192.0.2.7", 10); err != nil {
		t.Fatal(err)
	}
	if n, _, err := s.LoginFailures(ctx, "addr:192.0.2.7", now, window); err != nil || n != 0 {
		t.Errorf("more forgiven than counted: %d, %v; want 0", n, err)
	}
	if n, _, err := s.LoginFailed(ctx, "addr:192.0.2.7", now, window); err != nil || n != 1 {
		t.Errorf("a failure after all were forgiven: %d, %v; want 1", n, err)
	}
	if err := s.ForgiveLoginFailures(ctx, "addr:198.51.100.1", 3); err != nil {
		t.Errorf("forgiving a key with no failures: %v", err)
	}
	if n, _, err := s.LoginFailures(ctx, "addr:198.51.100.1", now, window); err != nil || n != 0 {
		t.Errorf("a key with none forgiven: %d, %v; want 0", n, err)
	}
	if n, _, err := s.LoginFailed(ctx, "addr:198.51.100.1", now, window); err != nil || n != 1 {
		t.Errorf("the first failure of a key forgiven before it had any: %d, %v; want 1", n, err)
	}
}
