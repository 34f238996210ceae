package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/sqlrow"
)

var _ quan.Archiver = (*Store)(nil)

// ArchiveCoupons implements quan.Archiver in one transaction.
func (s *Store) ArchiveCoupons(ctx context.Context, before, now time.Time, limit int) (_ int, err error) {
	defer s.db.unavailable(&err)
	n := 0
	err = s.db.inTx(ctx, func(tx *sql.Tx) error {
		n = 0
		rows, err := tx.QueryContext(ctx, `SELECT c.id FROM coupons c JOIN templates t ON t.id = c.template_id
			WHERE t.status = 'ended' AND c.status IN ('used', 'expired', 'revoked') AND c.updated_at < ?
			LIMIT ? FOR UPDATE SKIP LOCKED`, utc(before), limit)
		if err != nil {
			return err
		}
		var ids []any
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(ids) == 0 {
			return err
		}
		in := sqlrow.Params(len(ids))
		// A coupon records the claim that issued it: the claim gets its
		// row in claims before the coupon goes.
		if _, err := tx.ExecContext(ctx, `INSERT IGNORE INTO claims (`+claimColumns+`)
			SELECT `+issuedColumns+` FROM coupons WHERE id IN (`+in+`) AND claim_id IS NOT NULL`, ids...); err != nil {
			return fmt.Errorf("record their claims: %w", translate(err))
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO coupons_archive (`+couponColumns+`, archived_at)
			SELECT `+couponColumns+`, ? FROM coupons WHERE id IN (`+in+`)`, append([]any{utc(now)}, ids...)...); err != nil {
			return fmt.Errorf("copy: %w", translate(err))
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM coupons WHERE id IN (`+in+`)`, ids...); err != nil {
			return fmt.Errorf("delete: %w", err)
		}
		n = len(ids)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("archive coupons: %w", err)
	}
	return n, nil
}
