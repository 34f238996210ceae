package mysql

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
// case is quan.ErrConflict (the unique name_key, 1062).
func (s *Store) CreateAccount(ctx context.Context, a *quan.Account) (err error) {
	defer s.db.unavailable(&err)
	res, err := s.db.db.ExecContext(ctx, `INSERT INTO accounts
		(name, name_key, role, shop_no, disabled, password_hash, created_by, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		a.Name, sqlrow.AccountKey(a.Name), a.Role, a.ShopNo, a.Disabled, a.PasswordHash,
		a.CreatedBy, utc(a.CreatedAt), utc(a.UpdatedAt))
	if err != nil {
		return fmt.Errorf("create account %q: %w", a.Name, translate(err))
	}
	id, err := res.LastInsertId()
	if err != nil {
		return fmt.Errorf("create account %q: %w", a.Name, err)
	}
	a.ID = id
	return nil
}

// Account implements quan.AccountStore.
func (s *Store) Account(ctx context.Context, id int64) (_ *quan.Account, err error) {
	defer s.db.unavailable(&err)
	return queryAccount(ctx, s.db.db, id, "")
}

// queryAccount reads account id; lock is "" or a locking clause such as
// "FOR UPDATE".
func queryAccount(ctx context.Context, q rowQueryer, id int64, lock string) (*quan.Account, error) {
	return sqlrow.One(q.QueryRowContext(ctx, `SELECT `+accountColumns+` FROM accounts WHERE id = ? `+lock, id),
		"account", id, sqlrow.ScanAccount)
}

// AccountByName implements quan.AccountStore, regardless of ASCII case.
func (s *Store) AccountByName(ctx context.Context, name string) (_ *quan.Account, err error) {
	defer s.db.unavailable(&err)
	a, err := sqlrow.ScanAccount(s.db.db.QueryRowContext(ctx,
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
	w.If(f.NameContains != "", `name_key LIKE ? ESCAPE '!'`, "%"+escapeLike(sqlrow.AccountKey(f.NameContains))+"%")
	return sqlrow.PageBy(ctx, s.db.db, "accounts", "accounts", accountColumns, w, `name_key, id`, f.Offset, f.Limit, sqlrow.ScanAccount)
}

// UpdateAccount implements quan.AccountStore: it locks the account's row
// with SELECT … FOR UPDATE and calls fn with it. fn may run again if
// InnoDB picks the transaction as a deadlock victim, each time with the
// account read afresh; its error is returned as it is.
func (s *Store) UpdateAccount(ctx context.Context, id int64, fn func(*quan.Account) error) (_ *quan.Account, err error) {
	defer s.db.unavailable(&err)
	var saved *quan.Account
	err = s.db.inTx(ctx, func(tx *sql.Tx) error {
		a, err := queryAccount(ctx, tx, id, "FOR UPDATE")
		if err != nil {
			return err
		}
		if err := fn(a); err != nil {
			return fnError{err}
		}
		if a.ID != id {
			return fmt.Errorf("the update changed the id, which is fixed")
		}
		if _, err := tx.ExecContext(ctx, `UPDATE accounts SET
			name = ?, name_key = ?, role = ?, shop_no = ?, disabled = ?, password_hash = ?, updated_at = ?
			WHERE id = ?`,
			a.Name, sqlrow.AccountKey(a.Name), a.Role, a.ShopNo, a.Disabled, a.PasswordHash, utc(a.UpdatedAt), id); err != nil {
			return translate(err)
		}
		saved = a
		return nil
	})
	if fe, ok := err.(fnError); ok {
		return nil, fe.err
	}
	if errors.Is(err, quan.ErrNotFound) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("update account %d: %w", id, err)
	}
	return saved, nil
}

// CreateSession implements quan.AccountStore.
func (s *Store) CreateSession(ctx context.Context, sess *quan.Session) (err error) {
	defer s.db.unavailable(&err)
	if _, err := s.db.db.ExecContext(ctx, `INSERT INTO console_sessions (`+sessionColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?)`,
		sess.ID, sess.AccountID, sess.CSRF, sess.Addr, utc(sess.CreatedAt), utc(sess.SeenAt), utc(sess.ExpiresAt)); err != nil {
		return fmt.Errorf("create session of account %d: %w", sess.AccountID, translate(err))
	}
	return nil
}

// Session implements quan.AccountStore.
func (s *Store) Session(ctx context.Context, id []byte) (_ *quan.Session, err error) {
	defer s.db.unavailable(&err)
	sess, err := sqlrow.ScanSession(s.db.db.QueryRowContext(ctx,
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
	if _, err := s.db.db.ExecContext(ctx, `UPDATE console_sessions SET seen_at = ?, expires_at = ? WHERE id = ?`,
		utc(seen), utc(expires), id); err != nil {
		return fmt.Errorf("touch session: %w", err)
	}
	return nil
}

// DeleteSession implements quan.AccountStore.
func (s *Store) DeleteSession(ctx context.Context, id []byte) (err error) {
	defer s.db.unavailable(&err)
	if _, err := s.db.db.ExecContext(ctx, `DELETE FROM console_sessions WHERE id = ?`, id); err != nil {
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
	return s.deleteSessions(ctx, "delete expired sessions", `DELETE FROM console_sessions WHERE expires_at < ?`, utc(t))
}

func (s *Store) deleteSessions(ctx context.Context, what, query string, arg any) (int64, error) {
	res, err := s.db.db.ExecContext(ctx, query, arg)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	return n, nil
}

// LoginFailed implements quan.AccountStore in one transaction: an upsert
// that counts one more failure under key, or starts again at one if the
// first failure is window or more before now, then a read of the row it
// holds locked until COMMIT, so concurrent failures each count and each
// read their own count. MySQL assigns ON DUPLICATE KEY UPDATE's columns
// left to right, each seeing those before it: failures is set first, and
// first_at then starts again exactly when failures did (back at 1; a
// failure within the window makes it at least 2).
func (s *Store) LoginFailed(ctx context.Context, key string, now time.Time, window time.Duration) (_ int, _ time.Time, err error) {
	defer s.db.unavailable(&err)
	var (
		n     int
		first time.Time
	)
	err = s.db.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO login_failures (throttle_key, failures, first_at) VALUES (?, 1, ?)
			ON DUPLICATE KEY UPDATE
				failures = IF(first_at > ?, failures + 1, 1),
				first_at = IF(failures = 1, ?, first_at)`,
			key, utc(now), utc(now.Add(-window)), utc(now)); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT failures, first_at FROM login_failures WHERE throttle_key = ?`, key).
			Scan(&n, sqlrow.Time(&first))
	})
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
	err = s.db.db.QueryRowContext(ctx, `SELECT failures, first_at FROM login_failures WHERE throttle_key = ? AND first_at > ?`,
		key, utc(now.Add(-window))).Scan(&n, sqlrow.Time(&first))
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
	res, err := s.db.db.ExecContext(ctx, `DELETE FROM login_failures WHERE first_at <= ?`, utc(t))
	if err != nil {
		return 0, fmt.Errorf("delete past failed sign-ins: %w", err)
	}
	return res.RowsAffected()
}

// ClearLoginFailures implements quan.AccountStore.
func (s *Store) ClearLoginFailures(ctx context.Context, key string) (err error) {
	defer s.db.unavailable(&err)
	if _, err := s.db.db.ExecContext(ctx, `DELETE FROM login_failures WHERE throttle_key = ?`, key); err != nil {
		return fmt.Errorf("clear failed sign-ins: %w", err)
	}
	return nil
}

// ForgiveLoginFailures implements quan.AccountStore.
func (s *Store) ForgiveLoginFailures(ctx context.Context, key string, n int) (err error) {
	defer s.db.unavailable(&err)
	if _, err := s.db.db.ExecContext(ctx, `UPDATE login_failures SET failures = GREATEST(failures - ?, 0) WHERE throttle_key = ?`, n, key); err != nil {
		return fmt.Errorf("forgive failed sign-ins: %w", err)
	}
	return nil
}
