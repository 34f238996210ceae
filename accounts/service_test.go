package accounts_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/accounts"
	"github.com/quanhq/quan/internal/testrig"
	"github.com/quanhq/quan/sqlite"
)

var (
	acctT0  = time.Date(2030, 5, 1, 9, 0, 0, 0, time.UTC)
	goodPW  = "correct horse battery"
	otherPW = "another fine password"
)

// acctFixture is a Service on a SQLite store and a test clock,
// logging into logs. Its waits move the clock and are noted in waits.
type acctFixture struct {
	st    *sqlite.Store
	clock *testrig.Clock
	svc   *accounts.Service
	logs  *syncBuffer

	mu    sync.Mutex
	waits []time.Duration
}

// takeWaits returns the waits since the last call.
func (f *acctFixture) takeWaits() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := f.waits
	f.waits = nil
	return w
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newAcctFixture(t *testing.T) *acctFixture {
	t.Helper()
	st := testrig.Store(t)
	clock := testrig.NewClock(acctT0)
	logs := &syncBuffer{}
	f := &acctFixture{st: st, clock: clock, logs: logs, svc: &accounts.Service{
		Store: st, Now: clock.At(), HashCost: bcrypt.MinCost,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}}
	f.svc.Sleep = func(ctx context.Context, d time.Duration) error {
		f.mu.Lock()
		f.waits = append(f.waits, d)
		f.mu.Unlock()
		f.clock.Add(d)
		return nil
	}
	return f
}

func (f *acctFixture) add(t *testing.T, name string, role quan.Role, shop int64) *quan.Account {
	t.Helper()
	a, err := f.svc.Add(t.Context(), testrig.Admin, accounts.NewAccount{Name: name, Role: role, ShopNo: shop, Password: goodPW})
	if err != nil {
		t.Fatalf("add %q: %v", name, err)
	}
	return a
}

func (f *acctFixture) login(t *testing.T, name, pw, addr string) (string, *quan.Session) {
	t.Helper()
	tok, sess, _, err := f.svc.Login(t.Context(), name, pw, addr)
	if err != nil {
		t.Fatalf("login %q: %v", name, err)
	}
	return tok, sess
}

// wantCode fails unless err has code.
func wantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	if got := quan.ErrorCode(err); got != code {
		t.Fatalf("%s: %v (code %q), want code %q", what, err, got, code)
	}
}

func TestAccountSignInAndOut(t *testing.T) {
	f := newAcctFixture(t)
	a := f.add(t, "alice", quan.RoleMerchant, 1001)
	if bytes.Contains(a.PasswordHash, []byte(goodPW)) || len(a.PasswordHash) == 0 {
		t.Fatalf("password hash %q", a.PasswordHash)
	}
	// The name is found in any case.
	tok, sess, got, err := f.svc.Login(t.Context(), "ALICE", goodPW, "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != a.ID || got.Identity() != (quan.Identity{Subject: "alice", Role: quan.RoleMerchant, ShopNo: 1001}) {
		t.Errorf("signed in as %+v", got)
	}
	if len(tok) != 43 || sess.CSRF == "" || len(sess.CSRF) != 43 || sess.CSRF == tok {
		t.Errorf("token %q, CSRF %q: want two different 32-byte base64url tokens", tok, sess.CSRF)
	}
	if bytes.Contains(sess.ID, []byte(tok)) || len(sess.ID) != 32 {
		t.Errorf("session id %x: want the token's SHA-256", sess.ID)
	}
	if sess.Addr != "192.0.2.1" || !sess.ExpiresAt.Equal(acctT0.Add(accounts.DefaultSessionIdle)) {
		t.Errorf("session %+v", sess)
	}

	s2, a2, err := f.svc.Authenticate(t.Context(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if a2.ID != a.ID || s2.CSRF != sess.CSRF {
		t.Errorf("Authenticate: %+v, %+v", s2, a2)
	}
	for _, bad := range []string{"", "not-a-token", tok[:42], tok + "A"} {
		_, _, err := f.svc.Authenticate(t.Context(), bad)
		wantCode(t, "Authenticate("+bad+")", err, quan.EUNAUTHORIZED)
	}

	if err := f.svc.Logout(t.Context(), tok); err != nil {
		t.Fatal(err)
	}
	_, _, err = f.svc.Authenticate(t.Context(), tok)
	wantCode(t, "Authenticate after logout", err, quan.EUNAUTHORIZED)
	if err := f.svc.Logout(t.Context(), tok); err != nil {
		t.Errorf("logging out twice: %v", err)
	}
	if err := f.svc.Logout(t.Context(), "garbage"); err != nil {
		t.Errorf("logging out a malformed token: %v", err)
	}
	logs := f.logs.String()
	if !strings.Contains(logs, "console sign-in") || !strings.Contains(logs, "console sign-out") {
		t.Errorf("logs lack the sign-in and the sign-out:\n%s", logs)
	}
	if strings.Contains(logs, goodPW) {
		t.Errorf("logs hold the password:\n%s", logs)
	}
}

func TestAccountWrongPassword(t *testing.T) {
	f := newAcctFixture(t)
	f.add(t, "alice", quan.RoleMerchant, 1001)
	_, _, _, errWrong := f.svc.Login(t.Context(), "alice", otherPW, "192.0.2.1")
	wantCode(t, "wrong password", errWrong, quan.EUNAUTHORIZED)
	_, _, _, errUnknown := f.svc.Login(t.Context(), "bob", otherPW, "192.0.2.1")
	wantCode(t, "unknown name", errUnknown, quan.EUNAUTHORIZED)
	_, _, _, errBadName := f.svc.Login(t.Context(), "no such name!", otherPW, "192.0.2.1")
	wantCode(t, "impossible name", errBadName, quan.EUNAUTHORIZED)
	if quan.ErrorMessage(errWrong) != quan.ErrorMessage(errUnknown) || quan.ErrorMessage(errWrong) != quan.ErrorMessage(errBadName) {
		t.Errorf("messages differ: %q, %q, %q", quan.ErrorMessage(errWrong), quan.ErrorMessage(errUnknown), quan.ErrorMessage(errBadName))
	}
	// A wrong password counts against the account and the address; an
	// unknown name too, under its own name.
	for key, want := range map[string]int{"account:alice": 1, "account:bob": 1, "addr:192.0.2.1": 3} {
		if n, _, _ := f.st.LoginFailures(t.Context(), key, f.clock.Now(), accounts.DefaultLockWindow); n != want {
			t.Errorf("%s: %d failures, want %d", key, n, want)
		}
	}
	if logs := f.logs.String(); strings.Contains(logs, otherPW) || !strings.Contains(logs, "console sign-in failed") {
		t.Errorf("logs hold the password or lack the failure:\n%s", logs)
	}
}

func TestAccountLockout(t *testing.T) {
	f := newAcctFixture(t)
	f.add(t, "alice", quan.RoleMerchant, 1001)
	// Five failures a minute apart, from different addresses.
	for i := range accounts.DefaultMaxFailures {
		_, _, _, err := f.svc.Login(t.Context(), "alice", otherPW, "192.0.2."+string(rune('1'+i)))
		wantCode(t, "wrong password", err, quan.EUNAUTHORIZED)
		f.clock.Add(time.Minute)
	}
	// Locked, even with the right password, until 15 minutes after the
	// first failure.
	_, _, _, err := f.svc.Login(t.Context(), "Alice", goodPW, "198.51.100.9")
	wantCode(t, "right password while locked", err, quan.ERATELIMITED)
	if got, want := quan.ErrorRetryAfter(err), 10*time.Minute; got != want {
		t.Errorf("RetryAfter %v, want %v (the first failure's window ends then)", got, want)
	}
	if !strings.Contains(quan.ErrorMessage(err), "locked") {
		t.Errorf("message %q does not say the sign-in is locked", quan.ErrorMessage(err))
	}
	if logs := f.logs.String(); !strings.Contains(logs, "console sign-in locked") || !strings.Contains(logs, "refused: locked") {
		t.Errorf("logs lack the lockout:\n%s", logs)
	}
	f.clock.Add(10*time.Minute - time.Microsecond)
	_, _, _, err = f.svc.Login(t.Context(), "alice", goodPW, "198.51.100.9")
	wantCode(t, "just before the lockout ends", err, quan.ERATELIMITED)

	f.clock.Add(time.Microsecond)
	f.login(t, "alice", goodPW, "198.51.100.9")
	// The sign-in cleared the account's failures: four more are allowed.
	for range accounts.DefaultMaxFailures - 1 {
		_, _, _, err := f.svc.Login(t.Context(), "alice", otherPW, "198.51.100.9")
		wantCode(t, "wrong password after a sign-in", err, quan.EUNAUTHORIZED)
	}
	f.login(t, "alice", goodPW, "198.51.100.9")
}

func TestAccountLockoutOfUnknownName(t *testing.T) {
	f := newAcctFixture(t)
	for range accounts.DefaultMaxFailures {
		_, _, _, err := f.svc.Login(t.Context(), "ghost", otherPW, "")
		wantCode(t, "unknown name", err, quan.EUNAUTHORIZED)
	}
	// A name that is no account locks as an account would: a lockout
	// tells nothing of which names exist.
	_, _, _, err := f.svc.Login(t.Context(), "ghost", otherPW, "")
	wantCode(t, "unknown name, locked", err, quan.ERATELIMITED)
}

// TestAccountBruteForceFromOneAddress: one address guessing across many
// accounts is slowed down past MaxAddrFailures (each sign-in waits
// longer, each wrong one is 429 with the next wait), a right password of
// an account not locked still signs in from it, and one account guessed
// MaxFailures times locks.
func TestAccountBruteForceFromOneAddress(t *testing.T) {
	f := newAcctFixture(t)
	const from = "203.0.113.5"
	for _, name := range []string{"alice", "bob"} {
		f.add(t, name, quan.RoleMerchant, 1001)
	}
	// Failures over many names, some of them accounts, none locked.
	for i := range accounts.DefaultMaxAddrFailures - 1 {
		name := fmt.Sprintf("user%02d", i)
		if i%5 == 0 {
			name = "bob"
		}
		_, _, _, err := f.svc.Login(t.Context(), name, otherPW, from)
		wantCode(t, fmt.Sprintf("guess %d", i+1), err, quan.EUNAUTHORIZED)
	}
	if w := f.takeWaits(); len(w) != 0 {
		t.Fatalf("sign-ins under the address's limit waited %v", w)
	}
	// The twentieth failure slows the address down, and says so.
	_, _, _, err := f.svc.Login(t.Context(), "user99", otherPW, from)
	wantCode(t, "the twentieth failure", err, quan.ERATELIMITED)
	if !errors.Is(err, accounts.ErrSlowed) || quan.ErrorRetryAfter(err) != accounts.DefaultAddrDelay {
		t.Fatalf("the twentieth failure: %v, RetryAfter %v; want ErrSlowed and %v", err, quan.ErrorRetryAfter(err), accounts.DefaultAddrDelay)
	}
	if !strings.Contains(quan.ErrorMessage(err), "wrong name or password") {
		t.Errorf("message %q does not say the guess was wrong", quan.ErrorMessage(err))
	}
	// From now on every sign-in waits before its check, longer with
	// each failure, up to MaxAddrDelay; each wrong one says how long the
	// next will wait.
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for i, wait := range want {
		_, _, _, err := f.svc.Login(t.Context(), fmt.Sprintf("more%02d", i), otherPW, from)
		wantCode(t, "a guess while slowed", err, quan.ERATELIMITED)
		if w := f.takeWaits(); !slices.Equal(w, []time.Duration{wait}) {
			t.Fatalf("guess %d while slowed waited %v, want %v", i+1, w, wait)
		}
		if next := quan.ErrorRetryAfter(err); next != min(2*wait, accounts.DefaultMaxAddrDelay) {
			t.Errorf("guess %d while slowed: RetryAfter %v, want %v", i+1, next, min(2*wait, accounts.DefaultMaxAddrDelay))
		}
	}
	// Bob's right password still signs in from there, after the wait.
	f.login(t, "bob", goodPW, from)
	if w := f.takeWaits(); !slices.Equal(w, []time.Duration{accounts.DefaultMaxAddrDelay}) {
		t.Errorf("the right password from the slowed address waited %v, want %v", w, accounts.DefaultMaxAddrDelay)
	}
	// Alice guessed five times is locked: even her right password is
	// refused, from anywhere, as a lockout (not a slow-down).
	for range accounts.DefaultMaxFailures {
		_, _, _, err := f.svc.Login(t.Context(), "alice", otherPW, from)
		wantCode(t, "a guess of alice", err, quan.ERATELIMITED)
	}
	for _, addr := range []string{from, "198.51.100.9"} {
		_, _, _, err = f.svc.Login(t.Context(), "alice", goodPW, addr)
		wantCode(t, "alice locked", err, quan.ERATELIMITED)
		if errors.Is(err, accounts.ErrSlowed) || !strings.Contains(quan.ErrorMessage(err), "locked") {
			t.Errorf("alice's right password from %s: %v, want the lockout", addr, err)
		}
	}
	// The slow-down ends with the window of the address's first failure.
	f.clock.Add(accounts.DefaultLockWindow)
	f.takeWaits()
	_, _, _, err = f.svc.Login(t.Context(), "user00", otherPW, from)
	wantCode(t, "a guess after the window", err, quan.EUNAUTHORIZED)
	if w := f.takeWaits(); len(w) != 0 {
		t.Errorf("a sign-in after the window waited %v", w)
	}
}

// TestAccountOfficeBehindOneAddress: the staff sign in from one address
// (an office's proxy). One of them guesses wrong thirty times, and tries
// names that are no account: the guessed account locks, the address is
// slowed down, and everyone else signs in with the right password.
func TestAccountOfficeBehindOneAddress(t *testing.T) {
	f := newAcctFixture(t)
	const office = "203.0.113.80"
	staff := []string{"carol", "dan", "erin", "frank", "grace", "heidi"}
	for _, name := range staff {
		f.add(t, name, quan.RoleMerchant, 1001)
	}
	for i := range 30 {
		_, _, _, err := f.svc.Login(t.Context(), "carol", otherPW, office)
		if code := quan.ErrorCode(err); code != quan.EUNAUTHORIZED && code != quan.ERATELIMITED {
			t.Fatalf("guess %d of carol: %v", i+1, err)
		}
		f.clock.Add(time.Second)
	}
	for i := range accounts.DefaultMaxAddrFailures {
		_, _, _, err := f.svc.Login(t.Context(), fmt.Sprintf("caro1%d", i), otherPW, office)
		if code := quan.ErrorCode(err); code != quan.EUNAUTHORIZED && code != quan.ERATELIMITED {
			t.Fatalf("guess %d of a name: %v", i+1, err)
		}
	}
	if n, _, _ := f.st.LoginFailures(t.Context(), "addr:"+office, f.clock.Now(), accounts.DefaultLockWindow); n < accounts.DefaultMaxAddrFailures {
		t.Fatalf("the office's address has %d failures, want it slowed (%d or more)", n, accounts.DefaultMaxAddrFailures)
	}
	for _, name := range staff[1:] {
		f.login(t, name, goodPW, office)
	}
	_, _, _, err := f.svc.Login(t.Context(), "carol", goodPW, office)
	wantCode(t, "carol's right password", err, quan.ERATELIMITED)
	if errors.Is(err, accounts.ErrSlowed) {
		t.Errorf("carol's right password: %v, want her account's lockout", err)
	}
}

// TestAccountSignInForgivesOwnMistakes: an operator who mistypes and
// then signs in takes her mistakes off her address's count, not those of
// others from the same address.
func TestAccountSignInForgivesOwnMistakes(t *testing.T) {
	f := newAcctFixture(t)
	const office = "203.0.113.80"
	f.add(t, "alice", quan.RoleMerchant, 1001)
	addrFailures := func() int {
		n, _, err := f.st.LoginFailures(t.Context(), "addr:"+office, f.clock.Now(), accounts.DefaultLockWindow)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, name := range []string{"bob", "carol"} {
		_, _, _, err := f.svc.Login(t.Context(), name, otherPW, office)
		wantCode(t, "another's guess", err, quan.EUNAUTHORIZED)
	}
	for range 3 {
		_, _, _, err := f.svc.Login(t.Context(), "alice", otherPW, office)
		wantCode(t, "alice mistypes", err, quan.EUNAUTHORIZED)
	}
	if n := addrFailures(); n != 5 {
		t.Fatalf("address failures %d, want 5", n)
	}
	f.login(t, "alice", goodPW, office)
	if n := addrFailures(); n != 2 {
		t.Errorf("after alice signed in, address failures %d, want 2 (the others')", n)
	}
	// Her count from the address starts again: one more mistake and a
	// sign-in take one off, not four.
	_, _, _, err := f.svc.Login(t.Context(), "alice", otherPW, office)
	wantCode(t, "alice mistypes again", err, quan.EUNAUTHORIZED)
	f.login(t, "alice", goodPW, office)
	if n := addrFailures(); n != 2 {
		t.Errorf("after a second sign-in, address failures %d, want 2", n)
	}
}

// TestAccountSlowedWaitEndsWithContext: the real wait of a slowed
// address ends when the sign-in's context does, and signs nobody in.
func TestAccountSlowedWaitEndsWithContext(t *testing.T) {
	f := newAcctFixture(t)
	f.add(t, "alice", quan.RoleMerchant, 1001)
	f.svc.MaxAddrFailures, f.svc.AddrDelay = 1, time.Hour
	_, _, _, err := f.svc.Login(t.Context(), "nobody", otherPW, "203.0.113.5")
	wantCode(t, "a guess", err, quan.ERATELIMITED)
	f.svc.Sleep = nil // the timer, which the context must end
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, _, err := f.svc.Login(ctx, "alice", goodPW, "203.0.113.5"); !errors.Is(err, context.Canceled) {
		t.Fatalf("sign-in with its context ended while it waits: %v, want context.Canceled", err)
	}
}

func TestAccountDisabled(t *testing.T) {
	f := newAcctFixture(t)
	a := f.add(t, "alice", quan.RoleMerchant, 1001)
	tok1, _ := f.login(t, "alice", goodPW, "192.0.2.1")
	tok2, _ := f.login(t, "alice", goodPW, "192.0.2.2")

	got, err := f.svc.SetDisabled(t.Context(), testrig.Admin, a.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Disabled || !got.UpdatedAt.Equal(acctT0) {
		t.Errorf("disabled account %+v", got)
	}
	for _, tok := range []string{tok1, tok2} {
		_, _, err := f.svc.Authenticate(t.Context(), tok)
		wantCode(t, "session of a disabled account", err, quan.EUNAUTHORIZED)
	}
	_, _, _, errDisabled := f.svc.Login(t.Context(), "alice", goodPW, "192.0.2.1")
	wantCode(t, "disabled account", errDisabled, quan.EUNAUTHORIZED)
	_, _, _, errWrong := f.svc.Login(t.Context(), "alice", otherPW, "192.0.2.1")
	if quan.ErrorMessage(errDisabled) != quan.ErrorMessage(errWrong) {
		t.Errorf("a disabled account answers %q, a wrong password %q: the answer tells the password was right", quan.ErrorMessage(errDisabled), quan.ErrorMessage(errWrong))
	}

	if _, err := f.svc.SetDisabled(t.Context(), testrig.Admin, a.ID, false); err != nil {
		t.Fatal(err)
	}
	f.login(t, "alice", goodPW, "192.0.2.1")
	_, err = f.svc.SetDisabled(t.Context(), testrig.Admin, 999, true)
	wantCode(t, "no such account", err, quan.ENOTFOUND)
}

func TestAccountAdminCannotDisableItself(t *testing.T) {
	f := newAcctFixture(t)
	root := f.add(t, "root", quan.RoleAdmin, 0)
	ops := f.add(t, "ops", quan.RoleAdmin, 0)
	_, err := f.svc.SetDisabled(t.Context(), root.Identity(), root.ID, true)
	wantCode(t, "disable itself", err, quan.EFORBIDDEN)
	if a, _ := f.st.Account(t.Context(), root.ID); a.Disabled {
		t.Error("the admin disabled itself")
	}
	if _, err := f.svc.SetDisabled(t.Context(), root.Identity(), ops.ID, true); err != nil {
		t.Errorf("disable another admin: %v", err)
	}
}

func TestAccountResetPassword(t *testing.T) {
	f := newAcctFixture(t)
	a := f.add(t, "alice", quan.RoleMerchant, 1001)
	tok, _ := f.login(t, "alice", goodPW, "192.0.2.1")
	for range 3 {
		f.svc.Login(t.Context(), "alice", "a wrong one!", "192.0.2.1")
	}
	f.clock.Add(time.Hour)
	_, err := f.svc.ResetPassword(t.Context(), testrig.Admin, a.ID, "short")
	wantCode(t, "short password", err, quan.EINVALID)
	if fe := quan.ErrorFields(err); len(fe) != 1 || fe[0].Field != "password" {
		t.Errorf("fields %+v, want password", fe)
	}
	got, err := f.svc.ResetPassword(t.Context(), testrig.Admin, a.ID, otherPW)
	if err != nil {
		t.Fatal(err)
	}
	if !got.UpdatedAt.Equal(acctT0.Add(time.Hour)) || bytes.Equal(got.PasswordHash, a.PasswordHash) {
		t.Errorf("after reset: %+v", got)
	}
	_, _, err = f.svc.Authenticate(t.Context(), tok)
	wantCode(t, "session from before the reset", err, quan.EUNAUTHORIZED)
	_, _, _, err = f.svc.Login(t.Context(), "alice", goodPW, "192.0.2.1")
	wantCode(t, "old password", err, quan.EUNAUTHORIZED)
	f.login(t, "alice", otherPW, "192.0.2.1")
	if strings.Contains(f.logs.String(), otherPW) {
		t.Error("the logs hold the new password")
	}
	_, err = f.svc.ResetPassword(t.Context(), testrig.Admin, 999, otherPW)
	wantCode(t, "no such account", err, quan.ENOTFOUND)
}

func TestAccountSessionIdle(t *testing.T) {
	f := newAcctFixture(t)
	f.svc.SessionIdle = time.Hour
	f.add(t, "alice", quan.RoleMerchant, 1001)
	tok, sess := f.login(t, "alice", goodPW, "192.0.2.1")

	// Used within a minute: nothing written.
	f.clock.Add(30 * time.Second)
	s, _, err := f.svc.Authenticate(t.Context(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if !s.SeenAt.Equal(sess.SeenAt) || !s.ExpiresAt.Equal(acctT0.Add(time.Hour)) {
		t.Errorf("after 30 s: seen %v, expires %v; want unchanged", s.SeenAt, s.ExpiresAt)
	}
	// Used every 50 minutes, it lives on past the first hour.
	for i := 1; i <= 3; i++ {
		f.clock.Set(acctT0.Add(time.Duration(i) * 50 * time.Minute))
		s, _, err := f.svc.Authenticate(t.Context(), tok)
		if err != nil {
			t.Fatalf("use %d, at +%dm: %v", i, i*50, err)
		}
		if want := f.clock.Now().Add(time.Hour); !s.ExpiresAt.Equal(want) {
			t.Errorf("use %d: expires %v, want %v", i, s.ExpiresAt, want)
		}
		stored, err := f.st.Session(t.Context(), s.ID)
		if err != nil || !stored.ExpiresAt.Equal(s.ExpiresAt) || !stored.SeenAt.Equal(f.clock.Now()) {
			t.Errorf("use %d: stored %+v, %v", i, stored, err)
		}
	}
	// Unused for an hour, it ends, and the sweep deletes ended sessions,
	// and the failed sign-ins whose window passed.
	tok2, _ := f.login(t, "alice", goodPW, "192.0.2.1")
	if _, _, _, err := f.svc.Login(t.Context(), "nobody", "wrong password", "192.0.2.99"); err == nil {
		t.Fatal("nobody signed in")
	}
	f.clock.Add(time.Hour)
	_, _, err = f.svc.Authenticate(t.Context(), tok)
	wantCode(t, "idle an hour", err, quan.EUNAUTHORIZED)
	if _, err := f.st.Session(t.Context(), s.ID); !errors.Is(err, quan.ErrNotFound) {
		t.Errorf("the ended session is still stored: %v", err)
	}
	f.clock.Add(time.Second)
	n, err := f.svc.Sweep(t.Context())
	if err != nil || n != 1 {
		t.Errorf("Sweep: %d, %v; want the other ended session", n, err)
	}
	_, _, err = f.svc.Authenticate(t.Context(), tok2)
	wantCode(t, "swept", err, quan.EUNAUTHORIZED)
	if n, err := f.st.DeleteLoginFailures(t.Context(), f.clock.Now()); err != nil || n != 0 {
		t.Errorf("failed sign-ins left after the sweep: %d, %v", n, err)
	}
}

func TestAccountAddValidation(t *testing.T) {
	f := newAcctFixture(t)
	for _, tc := range []struct {
		name   string
		in     accounts.NewAccount
		fields []string
	}{
		{"Empty", accounts.NewAccount{}, []string{"name", "role", "password"}},
		{"BadName", accounts.NewAccount{Name: "alice smith", Role: quan.RoleAdmin, Password: goodPW}, []string{"name"}},
		{"NonASCIIName", accounts.NewAccount{Name: "张三", Role: quan.RoleAdmin, Password: goodPW}, []string{"name"}},
		{"LongName", accounts.NewAccount{Name: strings.Repeat("a", 65), Role: quan.RoleAdmin, Password: goodPW}, []string{"name"}},
		{"UserRole", accounts.NewAccount{Name: "u", Role: quan.RoleUser, ShopNo: 1, Password: goodPW}, []string{"role"}},
		{"MerchantWithoutShop", accounts.NewAccount{Name: "m", Role: quan.RoleMerchant, Password: goodPW}, []string{"shopNo"}},
		{"AdminWithShop", accounts.NewAccount{Name: "a", Role: quan.RoleAdmin, ShopNo: 1001, Password: goodPW}, []string{"shopNo"}},
		{"ShortPassword", accounts.NewAccount{Name: "m", Role: quan.RoleMerchant, ShopNo: 1, Password: "123456789"}, []string{"password"}},
		{"LongPassword", accounts.NewAccount{Name: "m", Role: quan.RoleMerchant, ShopNo: 1, Password: strings.Repeat("x", 129)}, []string{"password"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.svc.Add(t.Context(), testrig.Admin, tc.in)
			wantCode(t, "Add", err, quan.EINVALID)
			var got []string
			for _, fe := range quan.ErrorFields(err) {
				got = append(got, fe.Field)
			}
			if !slices.Equal(got, tc.fields) {
				t.Errorf("fields %q (%v), want %q", got, err, tc.fields)
			}
		})
	}
	// The longest names and passwords are fine, every byte of a long
	// password counts, and a name is taken in any case.
	long := strings.Repeat("p", 127)
	a, err := f.svc.Add(t.Context(), testrig.Admin, accounts.NewAccount{Name: strings.Repeat("a", 64), Role: quan.RoleMerchant, ShopNo: 1, Password: long + "1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := f.svc.Login(t.Context(), a.Name, long+"2", ""); quan.ErrorCode(err) != quan.EUNAUTHORIZED {
		t.Errorf("a password differing in its 128th byte signed in: %v", err)
	}
	if _, _, _, err := f.svc.Login(t.Context(), a.Name, long+"1", ""); err != nil {
		t.Errorf("128-byte password: %v", err)
	}
	f.add(t, "alice", quan.RoleMerchant, 1001)
	_, err = f.svc.Add(t.Context(), testrig.Admin, accounts.NewAccount{Name: "Alice", Role: quan.RoleMerchant, ShopNo: 1002, Password: goodPW})
	wantCode(t, "name taken", err, quan.ECONFLICT)
	if err := accounts.ValidName("ops.team@shop-1_2"); err != nil {
		t.Errorf("ValidAccountName: %v", err)
	}
	if err := accounts.ValidName("a/b"); quan.ErrorCode(err) != quan.EINVALID {
		t.Errorf("ValidAccountName(a/b): %v", err)
	}
}

func TestAccountAdminsOnly(t *testing.T) {
	f := newAcctFixture(t)
	alice := f.add(t, "alice", quan.RoleMerchant, 1001)
	bob := f.add(t, "bob", quan.RoleMerchant, 1001)
	ctx := t.Context()
	for _, who := range []quan.Identity{alice.Identity(), {Role: quan.RoleUser, UserID: 7}} {
		_, err := f.svc.Add(ctx, who, accounts.NewAccount{Name: "eve", Role: quan.RoleAdmin, Password: goodPW})
		wantCode(t, "Add", err, quan.EFORBIDDEN)
		_, _, err = f.svc.List(ctx, who, quan.AccountFilter{})
		wantCode(t, "List", err, quan.EFORBIDDEN)
		_, err = f.svc.SetDisabled(ctx, who, bob.ID, true)
		wantCode(t, "SetDisabled", err, quan.EFORBIDDEN)
		_, err = f.svc.ResetPassword(ctx, who, bob.ID, otherPW)
		wantCode(t, "ResetPassword", err, quan.EFORBIDDEN)
	}
	_, err := f.svc.Add(ctx, quan.Identity{}, accounts.NewAccount{})
	wantCode(t, "Add without an identity", err, quan.EUNAUTHORIZED)

	// An account reads itself, not another.
	if got, err := f.svc.Get(ctx, alice.Identity(), alice.ID); err != nil || got.ID != alice.ID {
		t.Errorf("Get itself: %v, %v", got, err)
	}
	_, err = f.svc.Get(ctx, alice.Identity(), bob.ID)
	wantCode(t, "Get another", err, quan.ENOTFOUND)
	if got, err := f.svc.Get(ctx, testrig.Admin, bob.ID); err != nil || got.ID != bob.ID {
		t.Errorf("admin Get: %v, %v", got, err)
	}

	as, n, err := f.svc.List(ctx, testrig.Admin, quan.AccountFilter{ShopNo: 1001})
	if err != nil || n != 2 || len(as) != 2 || as[0].Name != "alice" {
		t.Errorf("List: %v, %d, %v", as, n, err)
	}
	_, _, err = f.svc.List(ctx, testrig.Admin, quan.AccountFilter{Limit: quan.MaxPageSize + 1, Offset: -1})
	wantCode(t, "List with a bad page", err, quan.EINVALID)
	if a, _ := f.svc.Get(ctx, testrig.Admin, alice.ID); a.CreatedBy != "admin:root" {
		t.Errorf("CreatedBy %q, want admin:root", a.CreatedBy)
	}
}
