package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/sqlrow"
)

var _ quan.CodeStore = (*Store)(nil)

const codeBatchColumns = `id, template_id, shop_no, count, generated, status, created_by, created_at, updated_at`

// CreateCodeBatch implements quan.CodeStore.
func (s *Store) CreateCodeBatch(ctx context.Context, b *quan.CodeBatch) (err error) {
	defer s.db.unavailable(&err)
	res, err := s.db.db.ExecContext(ctx, `INSERT INTO code_batches (template_id, shop_no, count, generated, status,
		created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		b.TemplateID, b.ShopNo, b.Count, b.Generated, string(b.Status), b.CreatedBy, utc(b.CreatedAt), utc(b.UpdatedAt))
	if err != nil {
		return fmt.Errorf("create code batch: %w", translate(err))
	}
	if b.ID, err = res.LastInsertId(); err != nil {
		return fmt.Errorf("create code batch: %w", err)
	}
	return nil
}

// CodeBatch implements quan.CodeStore.
func (s *Store) CodeBatch(ctx context.Context, shop, id int64) (_ *quan.CodeBatch, err error) {
	defer s.db.unavailable(&err)
	return codeBatch(ctx, s.db.db, shop, id, "")
}

func codeBatch(ctx context.Context, q rowQueryer, shop, id int64, lock string) (*quan.CodeBatch, error) {
	query, args := sqlrow.OfShop(`SELECT `+codeBatchColumns+` FROM code_batches WHERE id = ?`, id, shop)
	b, err := sqlrow.ScanCodeBatch(q.QueryRowContext(ctx, query+" "+lock, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, quan.Errorf(quan.ENOTFOUND, "no code batch %d", id)
	}
	if err != nil {
		return nil, fmt.Errorf("code batch %d: %w", id, err)
	}
	return b, nil
}

// AddCodes implements quan.CodeStore in one transaction, under the batch's
// row lock.
func (s *Store) AddCodes(ctx context.Context, id int64, codes []string, now time.Time) (_ *quan.CodeBatch, err error) {
	defer s.db.unavailable(&err)
	var out *quan.CodeBatch
	err = s.db.inTx(ctx, func(tx *sql.Tx) error {
		b, err := codeBatch(ctx, tx, quan.AnyShop, id, "FOR UPDATE")
		if err != nil {
			return err
		}
		if b.Generated+int64(len(codes)) > b.Count {
			return quan.Errorf(quan.EINVALID, "batch %d holds %d of %d codes: %d more are too many", id, b.Generated, b.Count, len(codes))
		}
		for part := range slices.Chunk(codes, batchRows) {
			var q strings.Builder
			q.WriteString(`INSERT INTO redeem_codes (code, batch_id, template_id) VALUES `)
			args := make([]any, 0, 3*len(part))
			for i, c := range part {
				if i > 0 {
					q.WriteByte(',')
				}
				q.WriteString(`(?, ?, ?)`)
				args = append(args, c, id, b.TemplateID)
			}
			if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
				return fmt.Errorf("store %d codes: %w", len(part), translate(err))
			}
		}
		b.Generated += int64(len(codes))
		b.UpdatedAt = now
		if b.Generated == b.Count {
			b.Status = quan.CodeBatchReady
		}
		if _, err := tx.ExecContext(ctx, `UPDATE code_batches SET generated = ?, status = ?, updated_at = ? WHERE id = ?`,
			b.Generated, string(b.Status), utc(now), id); err != nil {
			return translate(err)
		}
		out = b
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("add codes to batch %d: %w", id, err)
	}
	return out, nil
}

// GeneratingCodeBatches implements quan.CodeStore.
func (s *Store) GeneratingCodeBatches(ctx context.Context) (_ []*quan.CodeBatch, err error) {
	defer s.db.unavailable(&err)
	return sqlrow.Query(ctx, s.db.db, "code batches generating", sqlrow.ScanCodeBatch,
		`SELECT `+codeBatchColumns+` FROM code_batches WHERE status = ? ORDER BY id`, string(quan.CodeBatchGenerating))
}

// CodeBatches implements quan.CodeStore. code_batches has a row a batch,
// not a code, and few of them: it is read without an index on template_id.
func (s *Store) CodeBatches(ctx context.Context, shop, template int64) (_ []*quan.CodeBatch, err error) {
	defer s.db.unavailable(&err)
	query, args := sqlrow.OfShop(`SELECT `+codeBatchColumns+` FROM code_batches WHERE template_id = ?`, template, shop)
	return sqlrow.Query(ctx, s.db.db, fmt.Sprintf("code batches of template %d", template), sqlrow.ScanCodeBatch,
		query+` ORDER BY id DESC`, args...)
}

// Codes implements quan.CodeStore, a page of the (batch, code) index at a
// time.
func (s *Store) Codes(ctx context.Context, id int64) iter.Seq2[quan.RedeemCode, error] {
	scan := func(row sqlrow.Scanner) (quan.RedeemCode, error) { return sqlrow.ScanRedeemCode(row, id) }
	code := func(c quan.RedeemCode) string { return c.Code }
	return unavailableSeq(s.db, sqlrow.Keyset(ctx, s.db.db, fmt.Sprintf("codes of batch %d", id), scan, code, "", codesPage,
		`SELECT code, template_id, user_id, coupon_id, redeemed_at FROM redeem_codes
		WHERE batch_id = ? AND code > ? ORDER BY code LIMIT 10000`, id))
}

// Code implements quan.CodeStore.
func (s *Store) Code(ctx context.Context, code string) (_ quan.RedeemCode, err error) {
	defer s.db.unavailable(&err)
	return sqlrow.RedeemCodeOf(ctx, s.db.db, code)
}

// codesPage is the LIMIT of the query of Codes.
const codesPage = 10000

// RedeemCode implements quan.CodeStore in one transaction: the code's row
// lock makes two redeems of one code take turns, and the template's row
// lock keeps the stock and the holdings true until the commit.
func (s *Store) RedeemCode(ctx context.Context, code string, user int64, now time.Time) (_ *quan.Coupon, err error) {
	defer s.db.unavailable(&err)
	var out *quan.Coupon
	err = s.db.inTx(ctx, func(tx *sql.Tx) error {
		var template, by, couponID int64
		err := tx.QueryRowContext(ctx, `SELECT template_id, user_id, coupon_id FROM redeem_codes WHERE code = ? FOR UPDATE`, code).
			Scan(&template, &by, &couponID)
		if errors.Is(err, sql.ErrNoRows) {
			return quan.Errorf(quan.ENOTFOUND, "no code %s", code)
		}
		if err != nil {
			return err
		}
		switch {
		case by == user:
			if out, err = sqlrow.ScanCoupon(tx.QueryRowContext(ctx, `SELECT `+couponColumns+` FROM coupons WHERE id = ?`, couponID)); err != nil {
				return err
			}
			return s.db.codes.Fill(ctx, tx, []*quan.Coupon{out})
		case by != 0:
			return quan.Errorf(quan.ECODEUSED, "code %s was redeemed already", code)
		}
		t, err := queryTemplate(ctx, tx, quan.AnyShop, template, "FOR UPDATE")
		if err != nil {
			return err
		}
		held := map[int64]int64{}
		var periods *quan.PeriodHeld // nil counts nothing
		if t.HasPeriodLimits() {
			periods = &quan.PeriodHeld{}
		}
		if err := holdings(ctx, tx, template, []int64{user}, held, map[string]*quan.Claim{}, periods); err != nil {
			return err
		}
		if err := quan.IssueRefusal(t, user, held[user], periods, now); err != nil {
			return err
		}
		c := quan.NewCoupon(t, user, held[user]+1, 0, now)
		c.Source = quan.FromCode
		res, err := tx.ExecContext(ctx, `INSERT INTO coupons (template_id, shop_no, user_id, seq, status,
			valid_start, valid_end, source, task_id, order_id, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?, ?)`,
			c.TemplateID, c.ShopNo, c.UserID, c.Seq, string(c.Status), utc(c.ValidStart), utc(c.ValidEnd), string(c.Source),
			utc(now), utc(now))
		if err != nil {
			return fmt.Errorf("insert the coupon: %w", translate(err))
		}
		if c.ID, err = res.LastInsertId(); err != nil {
			return err
		}
		c.Code = s.db.codes.Key.Code(c.ID, t.CodePrefix)
		if err := sqlrow.RecordIssued(ctx, tx, []int64{c.ID}); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE templates SET stock = stock - 1 WHERE id = ? AND stock >= 1`, template); err != nil {
			return fmt.Errorf("take the stock: %w", translate(err))
		}
		if _, err := tx.ExecContext(ctx, `UPDATE redeem_codes SET user_id = ?, coupon_id = ?, redeemed_at = ? WHERE code = ?`,
			user, c.ID, utc(now), code); err != nil {
			return translate(err)
		}
		var d quan.StatsDelta
		d.Issued(t.ID, t.ShopNo, c.Source, c.Status, 1, now)
		if err := addStats(ctx, tx, &d); err != nil {
			return err
		}
		out = &c
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("redeem code: %w", err)
	}
	return out, nil
}
