package accounts

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/quanhq/quan"
)

// Account rules and the defaults of Service.
const (
	MaxNameLen     = 64
	MinPasswordLen = 10  // bytes
	MaxPasswordLen = 128 // bytes

	DefaultSessionIdle     = 12 * time.Hour
	DefaultMaxFailures     = 5
	DefaultMaxAddrFailures = 20
	DefaultLockWindow      = 15 * time.Minute
	DefaultAddrDelay       = time.Second
	DefaultMaxAddrDelay    = 10 * time.Second
)

// sessionTouchEvery is how stale a session's SeenAt may grow before a
// request writes it again: at most one write a minute per session, not
// one per request.
const sessionTouchEvery = time.Minute

// maxAddrLen bounds the client address kept with a session and in a
// throttle key (of at most 255 bytes, the name's key included); an
// address is an IP, far shorter.
const maxAddrLen = 100

// ValidName returns nil if name may name an account: 1 to 64 of
// the ASCII letters and digits and . _ @ -; else an EINVALID *Error whose
// field "name" says why. Names are unique regardless of ASCII case.
func ValidName(name string) error {
	if msg := accountNameProblem(name); msg != "" {
		return &quan.Error{Code: quan.EINVALID, Message: "invalid account name", Fields: []quan.FieldError{{Field: "name", Message: msg}}}
	}
	return nil
}

func accountNameProblem(name string) string {
	switch {
	case name == "":
		return "is required"
	case len(name) > MaxNameLen:
		return fmt.Sprintf("must be at most %d characters", MaxNameLen)
	}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '@', r == '-':
		default:
			return fmt.Sprintf("must hold only letters A-Z and a-z, digits and . _ @ - (not %q)", r)
		}
	}
	return ""
}

// passwordProblem says what is wrong with a new password, "" if nothing.
func passwordProblem(pw string) string {
	switch {
	case len(pw) < MinPasswordLen:
		return fmt.Sprintf("must be at least %d bytes", MinPasswordLen)
	case len(pw) > MaxPasswordLen:
		return fmt.Sprintf("must be at most %d bytes", MaxPasswordLen)
	}
	return ""
}

// NewAccount is what an admin gives to create an account.
type NewAccount struct {
	Name     string    `json:"name"`
	Role     quan.Role `json:"role"`   // RoleMerchant or RoleAdmin
	ShopNo   int64     `json:"shopNo"` // a merchant's shop; 0 for an admin
	Password string    `json:"password"`
}

// Validate reports every field of in that breaks a rule, as an EINVALID
// *Error naming them: name, role (merchant or admin), shopNo (positive
// for a merchant, 0 for an admin) and password.
func (in NewAccount) Validate() error {
	var v quan.Validation
	if msg := accountNameProblem(in.Name); msg != "" {
		v.Add("name", msg)
	}
	switch in.Role {
	case quan.RoleMerchant:
		if in.ShopNo <= 0 {
			v.Add("shopNo", "a merchant's account needs its shop: a positive shop number")
		}
	case quan.RoleAdmin:
		if in.ShopNo != 0 {
			v.Add("shopNo", "an admin's account sees every shop: leave the shop number out (0)")
		}
	case "":
		v.Add("role", "is required: merchant or admin")
	default:
		v.Add("role", fmt.Sprintf("%q is not a console role: use merchant or admin", in.Role))
	}
	if msg := passwordProblem(in.Password); msg != "" {
		v.Add("password", msg)
	}
	return v.Err("invalid account")
}

// Service manages the operator console's accounts and signs their
// people in and out. Admins manage accounts; a sign-in gives a browser a
// session, which Authenticate checks on every request.
//
// Failed sign-ins are counted, in the store so that every process sees
// them, under three keys, each for LockWindow from its first failure:
//
//   - the account (its name, whether or not it exists, so that a lockout
//     tells nothing): MaxFailures failures lock it, and every sign-in to
//     it is refused, even with the right password, until LockWindow has
//     passed since its first failure;
//   - the client address: past MaxAddrFailures failures, every sign-in
//     from it waits before its password is checked (AddrDelay, doubled
//     for each failure beyond, at most MaxAddrDelay), and a wrong one is
//     answered ERATELIMITED (ErrSlowed) with the next wait as RetryAfter.
//     A right password of an account that is not locked itself still
//     signs in, so that one person guessing from behind the office's
//     proxy (one address) does not lock the whole staff out;
//   - the account from the address: a sign-in forgives these, its own
//     owner's mistakes, from the address's count.
//
// Sign-ins that run concurrently are each checked before any of them
// fails, so a burst of N concurrent guesses may try up to N beyond the
// limit once; every failure still counts.
type Service struct {
	Store quan.AccountStore
	Now   quan.Clock // nil: time.Now
	// SessionIdle is how long a session may go unused before it ends;
	// each use (Authenticate) moves its end on. 0: DefaultSessionIdle.
	SessionIdle time.Duration
	// MaxFailures is how many failed sign-ins of one account within
	// LockWindow lock it; 0: DefaultMaxFailures.
	MaxFailures int
	// MaxAddrFailures is how many failed sign-ins from one client address
	// within LockWindow slow its sign-ins down; 0:
	// DefaultMaxAddrFailures.
	MaxAddrFailures int
	// AddrDelay is the wait of a sign-in from an address at
	// MaxAddrFailures, doubled for each failure beyond, up to
	// MaxAddrDelay; 0: DefaultAddrDelay and DefaultMaxAddrDelay.
	AddrDelay    time.Duration
	MaxAddrDelay time.Duration
	// LockWindow is how long failures are remembered, from the first one;
	// a lockout ends by itself when the window of its first failure
	// passes. 0: DefaultLockWindow.
	LockWindow time.Duration
	// Sleep waits d, or until ctx ends (its error then); nil waits on a
	// timer. Tests give one that returns at once.
	Sleep func(ctx context.Context, d time.Duration) error
	// HashCost is the bcrypt cost of new password hashes; 0 is
	// bcrypt.DefaultCost. Tests lower it (bcrypt.MinCost) to run fast.
	HashCost int
	Logger   *slog.Logger // nil discards

	dummyOnce sync.Once
	dummyHash []byte // a hash compared against for unknown names
}

func (s *Service) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

func (s *Service) idle() time.Duration {
	if s.SessionIdle > 0 {
		return s.SessionIdle
	}
	return DefaultSessionIdle
}

func (s *Service) window() time.Duration {
	if s.LockWindow > 0 {
		return s.LockWindow
	}
	return DefaultLockWindow
}

func (s *Service) maxFailures() int {
	if s.MaxFailures > 0 {
		return s.MaxFailures
	}
	return DefaultMaxFailures
}

func (s *Service) maxAddrFailures() int {
	if s.MaxAddrFailures > 0 {
		return s.MaxAddrFailures
	}
	return DefaultMaxAddrFailures
}

func (s *Service) addrDelay(failures int) time.Duration {
	d, most := s.AddrDelay, s.MaxAddrDelay
	if d <= 0 {
		d = DefaultAddrDelay
	}
	if most <= 0 {
		most = DefaultMaxAddrDelay
	}
	for range min(failures-s.maxAddrFailures(), 32) {
		if d >= most {
			break
		}
		d *= 2
	}
	return min(d, most)
}

func (s *Service) sleep(ctx context.Context, d time.Duration) error {
	if s.Sleep != nil {
		return s.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Service) cost() int {
	if s.HashCost > 0 {
		return s.HashCost
	}
	return bcrypt.DefaultCost
}

// Add creates an account. Only admins may: EFORBIDDEN otherwise. EINVALID
// lists the fields in error (name, role, shopNo, password); ECONFLICT if
// the name is taken (in any ASCII case).
func (s *Service) Add(ctx context.Context, who quan.Identity, in NewAccount) (*quan.Account, error) {
	if err := quan.RequireAdmin(who, "manage console accounts"); err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	hash, err := s.hash(in.Password)
	if err != nil {
		return nil, err
	}
	now := s.Now.UTC()
	a := &quan.Account{Name: in.Name, Role: in.Role, ShopNo: in.ShopNo, PasswordHash: hash,
		CreatedBy: who.String(), CreatedAt: now, UpdatedAt: now}
	if err := s.Store.CreateAccount(ctx, a); err != nil {
		if errors.Is(err, quan.ErrConflict) {
			return nil, quan.Errorf(quan.ECONFLICT, "an account named %q exists already", in.Name)
		}
		return nil, fmt.Errorf("add account %q: %w", in.Name, err)
	}
	s.logger().Info("console account added", "account", a.ID, "name", a.Name, "role", a.Role, "shop", a.ShopNo, "by", who.String())
	return a, nil
}

// List returns one page of the accounts of f, by name, and how many
// match. Admins only.
func (s *Service) List(ctx context.Context, who quan.Identity, f quan.AccountFilter) ([]*quan.Account, int, error) {
	if err := quan.RequireAdmin(who, "manage console accounts"); err != nil {
		return nil, 0, err
	}
	var v quan.Validation
	if f.ShopNo < 0 {
		v.Add("shopNo", "must not be negative (0: every shop)")
	}
	v.Line("name", f.NameContains)
	v.Page(f.Offset, f.Limit)
	if err := v.Err("invalid account filter"); err != nil {
		return nil, 0, err
	}
	as, n, err := s.Store.Accounts(ctx, f)
	if err != nil {
		return nil, 0, fmt.Errorf("list accounts: %w", err)
	}
	return as, n, nil
}

// Get returns account id to an admin, or to the account itself (who is
// its Identity); anyone else gets ENOTFOUND, as for a missing account.
func (s *Service) Get(ctx context.Context, who quan.Identity, id int64) (*quan.Account, error) {
	if who.Role == "" {
		return nil, quan.ErrUnauthorized
	}
	a, err := s.Store.Account(ctx, id)
	if err != nil {
		if errors.Is(err, quan.ErrNotFound) {
			return nil, quan.Errorf(quan.ENOTFOUND, "account %d not found", id)
		}
		return nil, fmt.Errorf("account %d: %w", id, err)
	}
	if who.Role != quan.RoleAdmin && who != a.Identity() {
		return nil, quan.Errorf(quan.ENOTFOUND, "account %d not found", id)
	}
	return a, nil
}

// GetByName is Get of the account named name, in any ASCII case.
func (s *Service) GetByName(ctx context.Context, who quan.Identity, name string) (*quan.Account, error) {
	if who.Role == "" {
		return nil, quan.ErrUnauthorized
	}
	if accountNameProblem(name) != "" {
		return nil, quan.Errorf(quan.ENOTFOUND, "no account named %q", name)
	}
	a, err := s.Store.AccountByName(ctx, name)
	if err != nil {
		if errors.Is(err, quan.ErrNotFound) {
			return nil, quan.Errorf(quan.ENOTFOUND, "no account named %q", name)
		}
		return nil, fmt.Errorf("account %q: %w", name, err)
	}
	if who.Role != quan.RoleAdmin && who != a.Identity() {
		return nil, quan.Errorf(quan.ENOTFOUND, "no account named %q", name)
	}
	return a, nil
}

// SetDisabled disables or enables account id and returns it. Admins only;
// an admin cannot disable its own account (EFORBIDDEN), so that the
// console is never left without the admin who meant to keep it.
// Disabling ends the account's sessions at once.
func (s *Service) SetDisabled(ctx context.Context, who quan.Identity, id int64, disabled bool) (*quan.Account, error) {
	if err := quan.RequireAdmin(who, "manage console accounts"); err != nil {
		return nil, err
	}
	now := s.Now.UTC()
	a, err := s.Store.UpdateAccount(ctx, id, func(a *quan.Account) error {
		if disabled && who == a.Identity() {
			return quan.Errorf(quan.EFORBIDDEN, "an admin cannot disable its own account: ask another admin")
		}
		if a.Disabled != disabled {
			a.Disabled, a.UpdatedAt = disabled, now
		}
		return nil
	})
	if err != nil {
		return nil, s.updateError(id, err)
	}
	if disabled {
		n, err := s.Store.DeleteSessions(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("end the sessions of disabled account %d: %w", id, err)
		}
		s.logger().Info("console account disabled", "account", id, "name", a.Name, "sessions_ended", n, "by", who.String())
	} else {
		s.logger().Info("console account enabled", "account", id, "name", a.Name, "by", who.String())
	}
	return a, nil
}

// ResetPassword sets the password of account id and returns the account.
// Admins only; EINVALID (field password) for a password out of bounds.
// It ends the account's sessions and forgets its failed sign-ins, which
// lifts a lockout of the account.
func (s *Service) ResetPassword(ctx context.Context, who quan.Identity, id int64, password string) (*quan.Account, error) {
	if err := quan.RequireAdmin(who, "manage console accounts"); err != nil {
		return nil, err
	}
	if msg := passwordProblem(password); msg != "" {
		return nil, &quan.Error{Code: quan.EINVALID, Message: "invalid password", Fields: []quan.FieldError{{Field: "password", Message: msg}}}
	}
	hash, err := s.hash(password)
	if err != nil {
		return nil, err
	}
	now := s.Now.UTC()
	a, err := s.Store.UpdateAccount(ctx, id, func(a *quan.Account) error {
		a.PasswordHash, a.UpdatedAt = hash, now
		return nil
	})
	if err != nil {
		return nil, s.updateError(id, err)
	}
	n, err := s.Store.DeleteSessions(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("end the sessions of account %d: %w", id, err)
	}
	if err := s.Store.ClearLoginFailures(ctx, accountKey(a.Name)); err != nil {
		return nil, fmt.Errorf("clear the failed sign-ins of account %d: %w", id, err)
	}
	s.logger().Info("console password reset", "account", id, "name", a.Name, "sessions_ended", n, "by", who.String())
	return a, nil
}

func (s *Service) updateError(id int64, err error) error {
	var e *quan.Error
	switch {
	case errors.Is(err, quan.ErrNotFound):
		return quan.Errorf(quan.ENOTFOUND, "account %d not found", id)
	case errors.As(err, &e):
		return err
	}
	return fmt.Errorf("update account %d: %w", id, err)
}

// errSignIn is the one answer to a wrong name, a wrong password and a
// disabled account, so that none tells which it was.
func errSignIn() error { return quan.Errorf(quan.EUNAUTHORIZED, "wrong name or password") }

// ErrSlowed is in the chain of the error of a wrong sign-in from an
// address that failed too often (an ERATELIMITED *quan.Error whose
// RetryAfter is how long its next sign-in will wait): errors.Is tells it
// from a lockout of the account.
var ErrSlowed = errors.New("sign-ins from this address are slowed down")

// slowedError is a wrong sign-in from a slowed address: its *quan.Error
// and ErrSlowed.
type slowedError struct{ err *quan.Error }

func (e *slowedError) Error() string   { return e.err.Error() }
func (e *slowedError) Unwrap() []error { return []error{e.err, ErrSlowed} }

// The throttle's keys of a name, an address, and a name from an address.
func accountKey(name string) string    { return "account:" + strings.ToLower(name) }
func addrKey(addr string) string       { return "addr:" + addr }
func pairKey(addr, name string) string { return "pair:" + addr + " " + strings.ToLower(name) }

// Login signs the account name in with password, from the client address
// addr (its IP without the port; "" skips the address's throttle), and
// returns the new session's token for the browser to keep — only its
// SHA-256 is stored — with the session and the account.
//
// A wrong name, a wrong password and a disabled account are each
// EUNAUTHORIZED with the same message, and take as long (a name that is
// no account is checked against a dummy hash). Each counts as a failure
// of the name, of the address and of the name from the address. When
// the name is locked (see Service) the sign-in is ERATELIMITED, whose
// RetryAfter is when the lockout ends, whatever the password. From an
// address past its failures the sign-in first waits, then a wrong one is
// ERATELIMITED with ErrSlowed. A sign-in clears the failures of the
// account and takes those of the account from addr off the address's.
func (s *Service) Login(ctx context.Context, name, password, addr string) (string, *quan.Session, *quan.Account, error) {
	now := s.Now.UTC()
	if len(addr) > maxAddrLen {
		addr = addr[:maxAddrLen]
	}
	logName := name
	if len(logName) > MaxNameLen {
		logName = logName[:MaxNameLen] + "…"
	}
	log := s.logger().With("name", logName, "addr", addr)
	// A name that cannot be an account's is not throttled under its own
	// key (the store would keep a key per string tried): its failures
	// count under the address alone.
	validName := accountNameProblem(name) == ""
	if validName {
		n, first, err := s.Store.LoginFailures(ctx, accountKey(name), now, s.window())
		if err != nil {
			return "", nil, nil, fmt.Errorf("sign in: read the account's failed sign-ins: %w", err)
		}
		if n >= s.maxFailures() {
			until := first.Add(s.window())
			log.Warn("console sign-in refused: locked", "failures", n, "until", until)
			return "", nil, nil, s.locked(until, now)
		}
	}
	if addr != "" {
		n, _, err := s.Store.LoginFailures(ctx, addrKey(addr), now, s.window())
		if err != nil {
			return "", nil, nil, fmt.Errorf("sign in: read the address's failed sign-ins: %w", err)
		}
		if n >= s.maxAddrFailures() {
			// Before the password is checked, right or wrong: a wait for
			// wrong ones only would tell them apart by the time taken.
			wait := s.addrDelay(n)
			log.Warn("console sign-in slowed down: its address failed too often", "address_failures", n, "wait", wait)
			if err := s.sleep(ctx, wait); err != nil {
				return "", nil, nil, fmt.Errorf("sign in: wait: %w", err)
			}
		}
	}

	var a *quan.Account
	if validName {
		var err error
		a, err = s.Store.AccountByName(ctx, name)
		if err != nil && !errors.Is(err, quan.ErrNotFound) {
			return "", nil, nil, fmt.Errorf("sign in: %w", err)
		}
	}
	hash := s.dummy()
	if a != nil {
		hash = a.PasswordHash
	}
	// The hash is compared before anything else is looked at, so that
	// every refusal below takes as long.
	err := bcrypt.CompareHashAndPassword(hash, prehash(password))
	if err != nil && !errors.Is(err, bcrypt.ErrMismatchedHashAndPassword) && a != nil {
		return "", nil, nil, fmt.Errorf("sign in %q: compare the password: %w", name, err)
	}
	why := ""
	switch {
	case a == nil:
		why = "no such account"
	case err != nil:
		why = "wrong password"
	case a.Disabled:
		why = "account disabled"
	}
	if why != "" {
		return "", nil, nil, s.failed(ctx, log, name, validName, addr, now, why)
	}

	if err := s.forgive(ctx, a.Name, addr); err != nil {
		return "", nil, nil, err
	}
	tok, id, err := newSessionToken()
	if err != nil {
		return "", nil, nil, err
	}
	csrf, _, err := newSessionToken()
	if err != nil {
		return "", nil, nil, err
	}
	sess := &quan.Session{ID: id, AccountID: a.ID, CSRF: csrf, Addr: addr,
		CreatedAt: now, SeenAt: now, ExpiresAt: now.Add(s.idle())}
	if err := s.Store.CreateSession(ctx, sess); err != nil {
		return "", nil, nil, fmt.Errorf("sign in: create the session: %w", err)
	}
	log.Info("console sign-in", "account", a.ID, "role", a.Role, "shop", a.ShopNo)
	return tok, sess, a, nil
}

// failed counts a failed sign-in of name from addr and returns
// errSignIn(), or the ErrSlowed refusal if addr is past its failures.
func (s *Service) failed(ctx context.Context, log *slog.Logger, name string, validName bool, addr string, now time.Time, why string) error {
	log.Warn("console sign-in failed", "reason", why)
	if validName {
		n, first, err := s.Store.LoginFailed(ctx, accountKey(name), now, s.window())
		if err != nil {
			return fmt.Errorf("sign in: count the failure: %w", err)
		}
		if n == s.maxFailures() {
			log.Warn("console sign-in locked", "failures", n, "until", first.Add(s.window()))
		}
	}
	if addr == "" {
		return errSignIn()
	}
	if validName {
		if _, _, err := s.Store.LoginFailed(ctx, pairKey(addr, name), now, s.window()); err != nil {
			return fmt.Errorf("sign in: count the failure: %w", err)
		}
	}
	n, _, err := s.Store.LoginFailed(ctx, addrKey(addr), now, s.window())
	if err != nil {
		return fmt.Errorf("sign in: count the failure: %w", err)
	}
	if n < s.maxAddrFailures() {
		return errSignIn()
	}
	if n == s.maxAddrFailures() {
		log.Warn("console sign-ins from the address slowed down", "address_failures", n)
	}
	wait := s.addrDelay(n)
	return &slowedError{&quan.Error{Code: quan.ERATELIMITED, RetryAfter: wait, Message: fmt.Sprintf(
		"wrong name or password; too many failed sign-ins from this address: wait %s before the next try", wait.Round(time.Second))}}
}

// forgive clears the failures of the account name, which just signed in
// from addr, and takes those it had from addr off the address's count:
// they were its owner's mistakes, not guesses. At most MaxFailures are
// taken off.
func (s *Service) forgive(ctx context.Context, name, addr string) error {
	if err := s.Store.ClearLoginFailures(ctx, accountKey(name)); err != nil {
		return fmt.Errorf("sign in: clear failed sign-ins: %w", err)
	}
	if addr == "" {
		return nil
	}
	pair := pairKey(addr, name)
	n, _, err := s.Store.LoginFailures(ctx, pair, s.Now.UTC(), s.window())
	if err != nil {
		return fmt.Errorf("sign in: read failed sign-ins: %w", err)
	}
	if n == 0 {
		return nil
	}
	if err := s.Store.ForgiveLoginFailures(ctx, addrKey(addr), min(n, s.maxFailures())); err != nil {
		return fmt.Errorf("sign in: %w", err)
	}
	if err := s.Store.ClearLoginFailures(ctx, pair); err != nil {
		return fmt.Errorf("sign in: clear failed sign-ins: %w", err)
	}
	return nil
}

// locked is the ERATELIMITED answer of a lockout ending at until.
func (s *Service) locked(until, now time.Time) error {
	wait := max(until.Sub(now), time.Second)
	return &quan.Error{Code: quan.ERATELIMITED, RetryAfter: wait,
		Message: fmt.Sprintf("sign-in is locked for now after too many failed attempts; try again in %s", wait.Round(time.Second))}
}

// Authenticate returns the session of token and its account. EUNAUTHORIZED
// if the token is no session's, the session ended (SessionIdle passed
// since its last use) or the account is disabled; an ended session is
// deleted. Each use moves the session's end SessionIdle on, writing it at
// most once a minute.
func (s *Service) Authenticate(ctx context.Context, token string) (*quan.Session, *quan.Account, error) {
	id, ok := sessionID(token)
	if !ok {
		return nil, nil, quan.Errorf(quan.EUNAUTHORIZED, "not signed in")
	}
	sess, err := s.Store.Session(ctx, id)
	if errors.Is(err, quan.ErrNotFound) {
		return nil, nil, quan.Errorf(quan.EUNAUTHORIZED, "the session ended or was signed out: sign in again")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read session: %w", err)
	}
	now := s.Now.UTC()
	if !now.Before(sess.ExpiresAt) {
		if err := s.Store.DeleteSession(ctx, id); err != nil {
			return nil, nil, fmt.Errorf("delete an ended session: %w", err)
		}
		return nil, nil, quan.Errorf(quan.EUNAUTHORIZED, "the session ended or was signed out: sign in again")
	}
	a, err := s.Store.Account(ctx, sess.AccountID)
	if err != nil && !errors.Is(err, quan.ErrNotFound) {
		return nil, nil, fmt.Errorf("read the account of a session: %w", err)
	}
	if a == nil || a.Disabled {
		if err := s.Store.DeleteSession(ctx, id); err != nil {
			return nil, nil, fmt.Errorf("delete the session of a disabled account: %w", err)
		}
		return nil, nil, quan.Errorf(quan.EUNAUTHORIZED, "the account is disabled")
	}
	if now.Sub(sess.SeenAt) >= sessionTouchEvery {
		expires := now.Add(s.idle())
		if err := s.Store.TouchSession(ctx, id, now, expires); err != nil {
			return nil, nil, fmt.Errorf("touch session: %w", err)
		}
		sess.SeenAt, sess.ExpiresAt = now, expires
	}
	return sess, a, nil
}

// Logout ends the session of token. A token that is no session's (ended,
// signed out before, or malformed) is no error: the browser is signed out
// either way.
func (s *Service) Logout(ctx context.Context, token string) error {
	id, ok := sessionID(token)
	if !ok {
		return nil
	}
	sess, err := s.Store.Session(ctx, id)
	if errors.Is(err, quan.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sign out: %w", err)
	}
	if err := s.Store.DeleteSession(ctx, id); err != nil {
		return fmt.Errorf("sign out: %w", err)
	}
	s.logger().Info("console sign-out", "account", sess.AccountID, "addr", sess.Addr)
	return nil
}

// Sweep deletes the sessions that ended, and says how many.
func (s *Service) Sweep(ctx context.Context) (int64, error) {
	now := s.Now.UTC()
	n, err := s.Store.DeleteExpiredSessions(ctx, now)
	if err != nil {
		return n, fmt.Errorf("delete ended sessions: %w", err)
	}
	if _, err := s.Store.DeleteLoginFailures(ctx, now.Add(-s.window())); err != nil {
		return n, fmt.Errorf("delete past failed sign-ins: %w", err)
	}
	return n, nil
}

// tokenBytes is the size of a session token and of a CSRF token.
const tokenBytes = 32

// newSessionToken returns a random token for the browser, base64url, and
// the SHA-256 of its bytes, the session's ID.
func newSessionToken() (string, []byte, error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", nil, fmt.Errorf("random token: %w", err)
	}
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(b), sum[:], nil
}

// sessionID returns the session ID of token, false if token cannot be
// one.
func sessionID(token string) ([]byte, bool) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(b) != tokenBytes {
		return nil, false
	}
	sum := sha256.Sum256(b)
	return sum[:], true
}

// prehash is what bcrypt hashes of a password: its HMAC-SHA-256 under a
// fixed label, base64. bcrypt reads at most 72 bytes (and x/crypto refuses
// more) while passwords may have up to MaxPasswordLen; the HMAC makes
// every byte count. The label keeps these hashes apart from plain
// SHA-256s of passwords leaked elsewhere, which could otherwise be tried
// against them without knowing the passwords.
func prehash(password string) []byte {
	m := hmac.New(sha256.New, []byte("quan console password v1"))
	m.Write([]byte(password))
	out := make([]byte, base64.StdEncoding.EncodedLen(sha256.Size))
	base64.StdEncoding.Encode(out, m.Sum(nil))
	return out
}

// hash returns the bcrypt hash of password at the service's cost.
func (s *Service) hash(password string) ([]byte, error) {
	h, err := bcrypt.GenerateFromPassword(prehash(password), s.cost())
	if err != nil {
		return nil, fmt.Errorf("hash password: %w", err)
	}
	return h, nil
}

// dummy is a hash at the service's cost that no password matches in
// practice, compared against when the name is no account's so that the
// answer takes as long as a wrong password.
func (s *Service) dummy() []byte {
	s.dummyOnce.Do(func() {
		b := make([]byte, tokenBytes)
		rand.Read(b)
		h, err := bcrypt.GenerateFromPassword(prehash(base64.RawURLEncoding.EncodeToString(b)), s.cost())
		if err != nil {
			// Only a cost above bcrypt.MaxCost fails; compare against
			// nothing rather than fail every sign-in.
			h = []byte{}
		}
		s.dummyHash = h
	})
	return s.dummyHash
}
