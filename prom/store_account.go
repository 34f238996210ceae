package prom

import (
	"context"
	"time"

	"github.com/quanhq/quan"
)

// accountOps record the account store's calls.
type accountOps struct {
	createAccount, account, accountByName, accounts, updateAccount                             *op
	createSession, session, touchSession, deleteSession, deleteSessions, deleteExpiredSessions *op
	loginFailed, loginFailures, clearLoginFailures, deleteLoginFailures, forgiveLoginFailures  *op
}

func newAccountOps(o func(string) *op) accountOps {
	return accountOps{
		createAccount:         o("CreateAccount"),
		account:               o("Account"),
		accountByName:         o("AccountByName"),
		accounts:              o("Accounts"),
		updateAccount:         o("UpdateAccount"),
		createSession:         o("CreateSession"),
		session:               o("Session"),
		touchSession:          o("TouchSession"),
		deleteSession:         o("DeleteSession"),
		deleteSessions:        o("DeleteSessions"),
		deleteExpiredSessions: o("DeleteExpiredSessions"),
		loginFailed:           o("LoginFailed"),
		loginFailures:         o("LoginFailures"),
		clearLoginFailures:    o("ClearLoginFailures"),
		deleteLoginFailures:   o("DeleteLoginFailures"),
		forgiveLoginFailures:  o("ForgiveLoginFailures"),
	}
}

func (s *store) CreateAccount(ctx context.Context, a *quan.Account) (err error) {
	defer s.createAccount.done(ctx, time.Now(), &err)
	return s.s.CreateAccount(ctx, a)
}

func (s *store) Account(ctx context.Context, id int64) (_ *quan.Account, err error) {
	defer s.account.done(ctx, time.Now(), &err)
	return s.s.Account(ctx, id)
}

func (s *store) AccountByName(ctx context.Context, name string) (_ *quan.Account, err error) {
	defer s.accountByName.done(ctx, time.Now(), &err)
	return s.s.AccountByName(ctx, name)
}

func (s *store) Accounts(ctx context.Context, f quan.AccountFilter) (_ []*quan.Account, _ int, err error) {
	defer s.accounts.done(ctx, time.Now(), &err)
	return s.s.Accounts(ctx, f)
}

func (s *store) UpdateAccount(ctx context.Context, id int64, fn func(*quan.Account) error) (_ *quan.Account, err error) {
	defer s.updateAccount.done(ctx, time.Now(), &err)
	return s.s.UpdateAccount(ctx, id, fn)
}

func (s *store) CreateSession(ctx context.Context, sess *quan.Session) (err error) {
	defer s.createSession.done(ctx, time.Now(), &err)
	return s.s.CreateSession(ctx, sess)
}

func (s *store) Session(ctx context.Context, id []byte) (_ *quan.Session, err error) {
	defer s.session.done(ctx, time.Now(), &err)
	return s.s.Session(ctx, id)
}

func (s *store) TouchSession(ctx context.Context, id []byte, seen, expires time.Time) (err error) {
	defer s.touchSession.done(ctx, time.Now(), &err)
	return s.s.TouchSession(ctx, id, seen, expires)
}

func (s *store) DeleteSession(ctx context.Context, id []byte) (err error) {
	defer s.deleteSession.done(ctx, time.Now(), &err)
	return s.s.DeleteSession(ctx, id)
}

func (s *store) DeleteSessions(ctx context.Context, account int64) (_ int64, err error) {
	defer s.deleteSessions.done(ctx, time.Now(), &err)
	return s.s.DeleteSessions(ctx, account)
}

func (s *store) DeleteExpiredSessions(ctx context.Context, t time.Time) (_ int64, err error) {
	defer s.deleteExpiredSessions.done(ctx, time.Now(), &err)
	return s.s.DeleteExpiredSessions(ctx, t)
}

func (s *store) LoginFailed(ctx context.Context, key string, now time.Time, window time.Duration) (_ int, _ time.Time, err error) {
	defer s.loginFailed.done(ctx, time.Now(), &err)
	return s.s.LoginFailed(ctx, key, now, window)
}

func (s *store) LoginFailures(ctx context.Context, key string, now time.Time, window time.Duration) (_ int, _ time.Time, err error) {
	defer s.loginFailures.done(ctx, time.Now(), &err)
	return s.s.LoginFailures(ctx, key, now, window)
}

func (s *store) DeleteLoginFailures(ctx context.Context, t time.Time) (_ int64, err error) {
	defer s.deleteLoginFailures.done(ctx, time.Now(), &err)
	return s.s.DeleteLoginFailures(ctx, t)
}

func (s *store) ClearLoginFailures(ctx context.Context, key string) (err error) {
	defer s.clearLoginFailures.done(ctx, time.Now(), &err)
	return s.s.ClearLoginFailures(ctx, key)
}

func (s *store) ForgiveLoginFailures(ctx context.Context, key string, n int) (err error) {
	defer s.forgiveLoginFailures.done(ctx, time.Now(), &err)
	return s.s.ForgiveLoginFailures(ctx, key, n)
}
