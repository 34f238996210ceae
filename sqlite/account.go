package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/sqlrow"
)

var _ quan.AccountStore = (*Store)(nil)

// accountColumns are the columns of sqlrow.ScanAccount, in its order.
const accountColumns = `id, name, role, shop_no, disabled, password_hash, created_by, created_at, updated_at`

// sessionColumns are the columns of sqlrow.ScanSession, in its order.
const sessionColumns = `id, account_id, csrf, addr, created_at, seen_at, expires_at`

// CreateAccount implements quan.AccountStore; a name taken in any ASCII
// case is quan.ErrConflict.
func (s *Store) CreateAccount(ctx context.Context, a *quan.Account) (err error) {
	defer s.db.unavailable(&err)
	var id int64
	err = s.db.write.QueryRowContext(ctx, `INSERT INTO accounts
		(name, name_key, role, shop_no, disabled, password_hash, created_by, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		a.Name, sqlrow.AccountKey(a.Name), a.Role, a.ShopNo, a.Disabled, a.PasswordHash,
		a.CreatedBy, micros(a.CreatedAt), micros(a.UpdatedAt)).Scan(&id)
	if err != nil {
		return fmt.Errorf("create account %q: %w", a.Name, translate(err))
	}
	a.ID = id
	return nil
}

// Account implements quan.AccountStore.
func (s *Store) Account(ctx context.Context, id int64) (_ *quan.Account, err error) {
	defer s.db.unavailable(&err)
	return queryAccount(ctx, s.db.read, id)
}

func queryAccount(ctx context.Context, q rowQueryer, id int64) (*quan.Account, error) {
	return sqlrow.One(q.QueryRowContext(ctx, `SELECT `+accountColumns+` FROM accounts WHERE id = ?`, id),
		"account", id, sqlrow.ScanAccount)
}

// AccountByName implements quan.AccountStore, regardless of ASCII case.
func (s *Store) AccountByName(ctx context.Context, name string) (_ *quan.Account, err error) {
	defer s.db.unavailable(&err)
	a, err := sqlrow.ScanAccount(s.db.read.QueryRowContext(ctx,
		`SELECT `+accountColumns+` FROM accounts WHERE name_key = ?`, sqlrow.AccountKey(name)))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("account %q: %w", name, quan.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read account %q: %w", name, err)
	}
	return a, nil
}

// Accounts implements quan.AccountStore: by name regardless of ASCII case,
// NameContains too.
func (s *Store) Accounts(ctx context.Context, f quan.AccountFilter) (_ []*quan.Account, _ int, err error) {
	defer s.db.unavailable(&err)
	var w sqlrow.Where
	w.If(f.ShopNo != quan.AnyShop, `shop_no = ?`, f.ShopNo)
	w.If(f.NameContains != "", `name_key LIKE ? ESCAPE '\'`, "%"+escapeLike(sqlrow.AccountKey(f.NameContains))+"%")
	return sqlrow.PageBy(ctx, s.db.read, "accounts", "accounts", accountColumns, w, `name_key, id`, f.Offset, f.Limit, sqlrow.ScanAccount)
}

// UpdateAccount implements quan.AccountStore in one write transaction.
// fn runs under the database's only write lock: it must be quick and must
// not call the store. Its error is returned as it is.
func (s *Store) UpdateAccount(ctx context.Context, id int64, fn func(*quan.Account) error) (_ *quan.Account, err error) {
	defer s.db.unavailable(&err)
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("update account %d: %w", id, err)
	}
	defer tx.Rollback()
	a, err := queryAccount(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	if err := fn(a); err != nil {
		return nil, err
	}
	if a.ID != id {
		return nil, fmt.Errorf("update account %d: the update changed the id, which is fixed", id)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE accounts SET
		name = ?, name_key = ?, role = ?, shop_no = ?, disabled = ?, password_hash = ?, updated_at = ?
		WHERE id = ?`,
		a.Name, sqlrow.AccountKey(a.Name), a.Role, a.ShopNo, a.Disabled, a.PasswordHash, micros(a.UpdatedAt), id); err != nil {
		return nil, fmt.Errorf("update account %d: %w", id, translate(err))
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("update account %d: commit: %w", id, translate(err))
	}
	return a, nil
}

// CreateSession implements quan.AccountStore.
func (s *Store) CreateSession(ctx context.Context, sess *quan.Session) (err error) {
	defer s.db.unavailable(&err)
	if _, err := s.db.write.ExecContext(ctx, `INSERT INTO console_sessions (`+sessionColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?)`,
		sess.ID, sess.AccountID, sess.CSRF, sess.Addr, micros(sess.CreatedAt), micros(sess.SeenAt), micros(sess.ExpiresAt)); err != nil {
		return fmt.Errorf("create session of account %d: %w", sess.AccountID, translate(err))
	}
	return nil
}

// Session implements quan.AccountStore.
func (s *Store) Session(ctx context.Context, id []byte) (_ *quan.Session, err error) {
	defer s.db.unavailable(&err)
	sess, err := sqlrow.ScanSession(s.db.read.QueryRowContext(ctx,
		`SELECT `+sessionColumns+` FROM console_sessions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("session: %w", quan.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read session: %w", err)
	}
	return sess, nil
}

// TouchSession implements quan.AccountStore; touching no session is no
// error (it was signed out meanwhile).
func (s *Store) TouchSession(ctx context.Context, id []byte, seen, expires time.Time) (err error) {
	defer s.db.unavailable(&err)
	if _, err := s.db.write.ExecContext(ctx, `UPDATE console_sessions SET seen_at = ?, expires_at = ? WHERE id = ?`,
		micros(seen), micros(expires), id); err != nil {
		return fmt.Errorf("touch session: %w", err)
	}
	return nil
}

// DeleteSession implements quan.AccountStore.
func (s *Store) DeleteSession(ctx context.Context, id []byte) (err error) {
	defer s.db.unavailable(&err)
	if _, err := s.db.write.ExecContext(ctx, `DELETE FROM console_sessions WHERE id = ?`, id); err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	return nil
}

// DeleteSessions implements quan.AccountStore.
func (s *Store) DeleteSessions(ctx context.Context, account int64) (_ int64, err error) {
	defer s.db.unavailable(&err)
	return s.deleteSessions(ctx, "delete the sessions of account "+fmt.Sprint(account),
		`DELETE FROM console_sessions WHERE account_id = ?`, account)
}

// DeleteExpiredSessions implements quan.AccountStore along
// console_sessions_expires.
func (s *Store) DeleteExpiredSessions(ctx context.Context, t time.Time) (_ int64, err error) {
	defer s.db.unavailable(&err)
	return s.deleteSessions(ctx, "delete expired sessions", `DELETE FROM console_sessions WHERE expires_at < ?`, micros(t))
}

func (s *Store) deleteSessions(ctx context.Context, what, query string, arg any) (int64, error) {
	res, err := s.db.write.ExecContext(ctx, query, arg)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	return n, nil
}

// LoginFailed implements quan.AccountStore in one statement, which the
// single writer runs alone: the row of key counts one more failure, or
// starts again at one if its first failure is window or more before now.
// In an UPDATE's SET every column reads the row as it was.
func (s *Store) LoginFailed(ctx context.Context, key string, now time.Time, window time.Duration) (_ int, _ time.Time, err error) {
	defer s.db.unavailable(&err)
	var (
		n     int
		first time.Time
	)
	err = s.db.write.QueryRowContext(ctx, `INSERT INTO login_failures (throttle_key, failures, first_at) VALUES (?1, 1, ?2)
		ON CONFLICT (throttle_key) DO UPDATE SET
			failures = CASE WHEN first_at > ?3 THEN failures + 1 ELSE 1 END,
			first_at = CASE WHEN first_at > ?3 THEN first_at ELSE ?2 END
		RETURNING failures, first_at`, key, micros(now), micros(now.Add(-window))).Scan(&n, sqlrow.Time(&first))
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("count a failed sign-in: %w", err)
	}
	return n, first, nil
}

// LoginFailures implements quan.AccountStore.
func (s *Store) LoginFailures(ctx context.Context, key string, now time.Time, window time.Duration) (_ int, _ time.Time, err error) {
	defer s.db.unavailable(&err)
	var (
		n     int
		first time.Time
	)
	err = s.db.read.QueryRowContext(ctx, `SELECT failures, first_at FROM login_failures WHERE throttle_key = ? AND first_at > ?`,
		key, micros(now.Add(-window))).Scan(&n, sqlrow.Time(&first))
	if errors.Is(err, sql.ErrNoRows) {
		return 0, time.Time{}, nil
	}
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("read failed sign-ins: %w", err)
	}
	return n, first, nil
}

// DeleteLoginFailures implements quan.AccountStore.
func (s *Store) DeleteLoginFailures(ctx context.Context, t time.Time) (_ int64, err error) {
	defer s.db.unavailable(&err)
	res, err := s.db.write.ExecContext(ctx, `DELETE FROM login_failures WHERE first_at <= ?`, micros(t))
	if err != nil {
		return 0, fmt.Errorf("delete past failed sign-ins: %w", err)
	}
	return res.RowsAffected()
}

// ClearLoginFailures implements quan.AccountStore.
func (s *Store) ClearLoginFailures(ctx context.Context, key string) (err error) {
	defer s.db.unavailable(&err)
	if _, err := s.db.write.ExecContext(ctx, `DELETE FROM login_failures WHERE throttle_key = ?`, key); err != nil {
		return fmt.Errorf("clear failed sign-ins: %w", err)
	}
	return nil
}

// ForgiveLoginFailures implements quan.AccountStore.
func (s *Store) ForgiveLoginFailures(ctx context.Context, key string, n int) (err error) {
	defer s.db.unavailable(&err)
	if _, err := s.db.write.ExecContext(ctx, `UPDATE login_failures SET failures = MAX(failures - ?, 0) WHERE throttle_key = ?`, n, key); err != nil {
		return fmt.Errorf("forgive failed sign-ins: %w", err)
	}
	return nil
}
