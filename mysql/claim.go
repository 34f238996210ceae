package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/quanhq/quan"
)

var _ quan.ClaimStore = (*Store)(nil)

const claimColumns = `id, template_id, user_id, status, coupon_id, reason, at, decided_at`

// claimBatch bounds the rows of one claims or coupons statement.
const claimBatch = 500

// IssueClaims implements quan.ClaimStore in one transaction: claims
// recorded before are returned as recorded; the rest are planned per
// template, under the template's row lock, with quan.PlanClaims against
// the stock and the holdings, and their coupons, the stock taken and
// their records written together.
func (s *Store) IssueClaims(ctx context.Context, claims []*quan.Claim, now time.Time) ([]*quan.Claim, error) {
	var out []*quan.Claim
	err := s.db.inTx(ctx, func(tx *sql.Tx) error {
		out = make([]*quan.Claim, len(claims))
		recorded, err := claimsByID(ctx, tx, claims)
		if err != nil {
			return err
		}
		byTemplate := map[int64][]*quan.Claim{}
		for i, c := range claims {
			if r := recorded[c.ID]; r != nil {
				out[i] = r
				continue
			}
			d := *c
			out[i] = &d
			byTemplate[c.TemplateID] = append(byTemplate[c.TemplateID], &d)
			recorded[c.ID] = &d // a claim twice in one batch is decided once
		}
		// Templates in id order: two batches lock them in the same order.
		ids := make([]int64, 0, len(byTemplate))
		for id := range byTemplate {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			if err := issueClaims(ctx, tx, id, byTemplate[id], now); err != nil {
				return fmt.Errorf("template %d: %w", id, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("issue claims: %w", err)
	}
	return out, nil
}

// issueClaims decides the new claims cs of one template in tx.
func issueClaims(ctx context.Context, tx *sql.Tx, template int64, cs []*quan.Claim, now time.Time) error {
	t, err := queryTemplate(ctx, tx, quan.AnyShop, template, "FOR UPDATE")
	if errors.Is(err, quan.ErrNotFound) {
		for _, c := range cs {
			c.Status, c.Reason, c.DecidedAt = quan.ClaimFailed, string(quan.CauseTemplateInactive), now
		}
		return insertClaims(ctx, tx, cs)
	}
	if err != nil {
		return err
	}
	users := make([]int64, 0, len(cs))
	for _, c := range cs {
		users = append(users, c.UserID)
	}
	slices.Sort(users)
	users = slices.Compact(users)
	held := map[int64]int64{}
	if err := heldCounts(ctx, tx, template, users, held); err != nil {
		return err
	}
	seqs := quan.PlanClaims(cs, t, held, t.Stock, now)
	var issued []int // indexes into cs
	for i, c := range cs {
		if c.Status == quan.ClaimIssued {
			issued = append(issued, i)
		}
	}
	if len(issued) > 0 {
		res, err := tx.ExecContext(ctx, `UPDATE templates SET stock = stock - ? WHERE id = ? AND stock >= ?`, len(issued), template, len(issued))
		if err != nil {
			return fmt.Errorf("take %d of the stock: %w", len(issued), translate(err))
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return fmt.Errorf("take %d of the stock: the stock read under the lock changed (%d rows, %v)", len(issued), n, err)
		}
	}
	for part := range slices.Chunk(issued, claimBatch) {
		var b strings.Builder
		b.WriteString(`INSERT INTO coupons (template_id, shop_no, user_id, seq, status, valid_start, valid_end,
			source, task_id, order_id, created_at, updated_at, code) VALUES `)
		args := make([]any, 0, 11*len(part))
		codes, err := quan.NewCodes(len(part), t.CodePrefix)
		if err != nil {
			return err
		}
		for k, i := range part {
			if k > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`(?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?, ?, ?)`)
			cp := quan.NewCoupon(t, cs[i].UserID, seqs[i], 0, cs[i].At)
			cp.Source = quan.FromClaim
			args = append(args, cp.TemplateID, cp.ShopNo, cp.UserID, cp.Seq, string(cp.Status),
				utc(cp.ValidStart), utc(cp.ValidEnd), string(cp.Source), utc(now), utc(now), codes[k])
		}
		if _, err := tx.ExecContext(ctx, b.String(), args...); err != nil {
			return fmt.Errorf("insert %d coupons: %w", len(part), translate(err))
		}
		if err := couponIDs(ctx, tx, template, cs, seqs, part); err != nil {
			return err
		}
	}
	return insertClaims(ctx, tx, cs)
}

// couponIDs sets the CouponID of the claims cs[part] from the coupons
// just inserted, found by (user, template, seq) on the unique index.
func couponIDs(ctx context.Context, tx *sql.Tx, template int64, cs []*quan.Claim, seqs []int64, part []int) error {
	type us struct{ user, seq int64 }
	want := make(map[us]*quan.Claim, len(part))
	var b strings.Builder
	b.WriteString(`SELECT id, user_id, seq FROM coupons WHERE template_id = ? AND (user_id, seq) IN (`)
	args := []any{template}
	for k, i := range part {
		if k > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`(?, ?)`)
		args = append(args, cs[i].UserID, seqs[i])
		want[us{cs[i].UserID, seqs[i]}] = cs[i]
	}
	b.WriteByte(')')
	rows, err := tx.QueryContext(ctx, b.String(), args...)
	if err != nil {
		return fmt.Errorf("find the coupons inserted: %w", err)
	}
	defer rows.Close()
	found := 0
	for rows.Next() {
		var id, user, seq int64
		if err := rows.Scan(&id, &user, &seq); err != nil {
			return fmt.Errorf("find the coupons inserted: %w", err)
		}
		if c := want[us{user, seq}]; c != nil {
			c.CouponID = id
			found++
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("find the coupons inserted: %w", err)
	}
	if found != len(part) {
		return fmt.Errorf("found %d of the %d coupons inserted", found, len(part))
	}
	return nil
}

// insertClaims records decided claims.
func insertClaims(ctx context.Context, tx *sql.Tx, cs []*quan.Claim) error {
	for part := range slices.Chunk(cs, claimBatch) {
		var b strings.Builder
		b.WriteString(`INSERT INTO claims (` + claimColumns + `) VALUES `)
		args := make([]any, 0, 8*len(part))
		for i, c := range part {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`(?, ?, ?, ?, ?, ?, ?, ?)`)
			args = append(args, c.ID, c.TemplateID, c.UserID, string(c.Status), c.CouponID, c.Reason, utc(c.At), utc(c.DecidedAt))
		}
		if _, err := tx.ExecContext(ctx, b.String(), args...); err != nil {
			return fmt.Errorf("record %d claims: %w", len(part), translate(err))
		}
	}
	return nil
}

// claimsByID returns the records of the claims of cs that exist, locked
// (FOR UPDATE) so that a claim decided alongside waits for this one.
func claimsByID(ctx context.Context, tx *sql.Tx, cs []*quan.Claim) (map[string]*quan.Claim, error) {
	found := map[string]*quan.Claim{}
	for part := range slices.Chunk(cs, claimBatch) {
		args := make([]any, len(part))
		for i, c := range part {
			args[i] = c.ID
		}
		rows, err := tx.QueryContext(ctx, `SELECT `+claimColumns+` FROM claims WHERE id IN (?`+strings.Repeat(`, ?`, len(part)-1)+`) FOR UPDATE`, args...)
		if err != nil {
			return nil, fmt.Errorf("look up claims: %w", err)
		}
		for rows.Next() {
			c, err := scanClaim(rows)
			if err != nil {
				rows.Close()
				return nil, err
			}
			found[c.ID] = c
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("look up claims: %w", err)
		}
	}
	return found, nil
}

// FailClaim implements quan.ClaimStore.
func (s *Store) FailClaim(ctx context.Context, c *quan.Claim, reason string, now time.Time) (*quan.Claim, error) {
	if _, err := s.db.db.ExecContext(ctx, `INSERT IGNORE INTO claims (`+claimColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		c.ID, c.TemplateID, c.UserID, string(quan.ClaimFailed), 0, reason, utc(c.At), utc(now)); err != nil {
		return nil, fmt.Errorf("fail claim %s: %w", c.ID, translate(err))
	}
	return s.Claim(ctx, c.ID)
}

// Claim implements quan.ClaimStore.
func (s *Store) Claim(ctx context.Context, id string) (*quan.Claim, error) {
	c, err := scanClaim(s.db.db.QueryRowContext(ctx, `SELECT `+claimColumns+` FROM claims WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, quan.Errorf(quan.ENOTFOUND, "no claim %q", id)
	}
	if err != nil {
		return nil, fmt.Errorf("claim %s: %w", id, err)
	}
	return c, nil
}

func scanClaim(row interface{ Scan(...any) error }) (*quan.Claim, error) {
	var c quan.Claim
	if err := row.Scan(&c.ID, &c.TemplateID, &c.UserID, &c.Status, &c.CouponID, &c.Reason, &c.At, &c.DecidedAt); err != nil {
		return nil, err
	}
	c.At, c.DecidedAt = c.At.UTC(), c.DecidedAt.UTC()
	return &c, nil
}
