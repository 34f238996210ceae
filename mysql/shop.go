package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/quanhq/quan"
)

var _ quan.ShopStore = (*Store)(nil)

// ShopSettings implements quan.ShopStore: the shop's row of shop_settings,
// zero settings without one.
func (s *Store) ShopSettings(ctx context.Context, shop int64) (_ *quan.ShopSettings, err error) {
	defer s.db.unavailable(&err)
	st := &quan.ShopSettings{ShopNo: shop}
	err = s.db.db.QueryRowContext(ctx, `SELECT daily_claim_cap, updated_at, updated_by FROM shop_settings WHERE shop_no = ?`, shop).
		Scan(&st.DailyClaimCap, &st.UpdatedAt, &st.UpdatedBy)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return st, nil
	case err != nil:
		return nil, fmt.Errorf("settings of shop %d: %w", shop, err)
	}
	st.UpdatedAt = st.UpdatedAt.UTC()
	return st, nil
}

// PutShopSettings implements quan.ShopStore.
func (s *Store) PutShopSettings(ctx context.Context, st *quan.ShopSettings) (err error) {
	defer s.db.unavailable(&err)
	if _, err := s.db.db.ExecContext(ctx, `INSERT INTO shop_settings (shop_no, daily_claim_cap, updated_at, updated_by) VALUES (?, ?, ?, ?)
		ON DUPLICATE KEY UPDATE daily_claim_cap = VALUES(daily_claim_cap), updated_at = VALUES(updated_at),
			updated_by = VALUES(updated_by)`,
		st.ShopNo, st.DailyClaimCap, utc(st.UpdatedAt), st.UpdatedBy); err != nil {
		return fmt.Errorf("put the settings of shop %d: %w", st.ShopNo, err)
	}
	return nil
}

// ShopClaimed implements quan.ShopStore: the claimed column of the shop's
// hours (every slot) in template_stats_hourly, along
// template_stats_hourly_shop.
func (s *Store) ShopClaimed(ctx context.Context, shop int64, from, to time.Time) (_ int64, err error) {
	defer s.db.unavailable(&err)
	var n int64
	if err := s.db.db.QueryRowContext(ctx, `SELECT COALESCE(SUM(claimed), 0) FROM template_stats_hourly
		WHERE shop_no = ? AND hour >= ? AND hour < ?`, shop, utc(from), utc(to)).Scan(&n); err != nil {
		return 0, fmt.Errorf("claims of shop %d: %w", shop, err)
	}
	return n, nil
}
