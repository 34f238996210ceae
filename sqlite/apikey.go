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

var (
	_ quan.APIKeyStore = (*Store)(nil)
	_ quan.RefundStore = (*Store)(nil)
)

// CreateAPIKey implements quan.APIKeyStore.
func (s *Store) CreateAPIKey(ctx context.Context, k *quan.APIKey) (err error) {
	defer s.db.unavailable(&err)
	res, err := s.db.write.ExecContext(ctx, `INSERT INTO api_keys (name, shop_no, scopes, hash, hint, created_at, created_by)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, k.Name, k.ShopNo, sqlrow.JoinScopes(k.Scopes), k.Hash, k.Hint, micros(k.CreatedAt), k.CreatedBy)
	if err != nil {
		return fmt.Errorf("create service key %q: %w", k.Name, translate(err))
	}
	if k.ID, err = res.LastInsertId(); err != nil {
		return fmt.Errorf("create service key %q: %w", k.Name, err)
	}
	return nil
}

// APIKeys implements quan.APIKeyStore.
func (s *Store) APIKeys(ctx context.Context) (_ []*quan.APIKey, err error) {
	defer s.db.unavailable(&err)
	return sqlrow.Query(ctx, s.db.read, "service keys", sqlrow.ScanAPIKey,
		`SELECT `+sqlrow.APIKeyColumns+` FROM api_keys ORDER BY id DESC`)
}

// APIKeyByHash implements quan.APIKeyStore, along the hash's unique index.
func (s *Store) APIKeyByHash(ctx context.Context, hash []byte) (_ *quan.APIKey, err error) {
	defer s.db.unavailable(&err)
	k, err := sqlrow.ScanAPIKey(s.db.read.QueryRowContext(ctx, `SELECT `+sqlrow.APIKeyColumns+` FROM api_keys WHERE hash = ?`, hash))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, quan.Errorf(quan.ENOTFOUND, "no such service key")
	case err != nil:
		return nil, fmt.Errorf("service key by hash: %w", err)
	}
	return k, nil
}

// RevokeAPIKey implements quan.APIKeyStore.
func (s *Store) RevokeAPIKey(ctx context.Context, id int64, at time.Time) (_ *quan.APIKey, err error) {
	defer s.db.unavailable(&err)
	k, err := sqlrow.ScanAPIKey(s.db.write.QueryRowContext(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?)
		WHERE id = ? RETURNING `+sqlrow.APIKeyColumns, micros(at), id))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, quan.Errorf(quan.ENOTFOUND, "no service key %d", id)
	case err != nil:
		return nil, fmt.Errorf("revoke service key %d: %w", id, err)
	}
	return k, nil
}

// TouchAPIKey implements quan.APIKeyStore.
func (s *Store) TouchAPIKey(ctx context.Context, id int64, at time.Time) (err error) {
	defer s.db.unavailable(&err)
	if _, err := s.db.write.ExecContext(ctx, `UPDATE api_keys SET last_used_at = ?
		WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)`, micros(at), id, micros(at)); err != nil {
		return fmt.Errorf("touch service key %d: %w", id, err)
	}
	return nil
}

// RefundOrder implements quan.RefundStore: the order's row of
// refunded_orders and the coupons' changes, in one transaction.
func (s *Store) RefundOrder(ctx context.Context, user int64, order string, at time.Time, ids []int64, fn func([]*quan.Coupon) error) (_ []*quan.Coupon, err error) {
	defer s.db.unavailable(&err)
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("refund order %s of user %d: %w", order, user, err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `INSERT INTO refunded_orders (user_id, order_id, refunded_at) VALUES (?, ?, ?)
		ON CONFLICT (user_id, order_id) DO NOTHING`, user, order, micros(at))
	if err != nil {
		return nil, fmt.Errorf("refund order %s of user %d: %w", order, user, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return nil, fmt.Errorf("refund order %s of user %d: %w", order, user, err)
	} else if n == 0 {
		return nil, quan.Errorf(quan.EREFUNDED, "order %s was refunded already", order)
	}
	cs, err := s.updateCoupons(ctx, tx, user, ids, fn)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("refund order %s of user %d: commit: %w", order, user, translate(err))
	}
	return cs, nil
}

// OrderRefunded implements quan.RefundStore.
func (s *Store) OrderRefunded(ctx context.Context, user int64, order string) (_ bool, err error) {
	defer s.db.unavailable(&err)
	var n int
	if err := s.db.read.QueryRowContext(ctx, `SELECT count(*) FROM refunded_orders WHERE user_id = ? AND order_id = ?`, user, order).Scan(&n); err != nil {
		return false, fmt.Errorf("was order %s of user %d refunded: %w", order, user, err)
	}
	return n > 0, nil
}
