package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/sqlrow"
)

var _ quan.ClaimStore = (*Store)(nil)

const claimColumns = `id, template_id, user_id, status, coupon_id, reason, at, decided_at`

// IssueClaims implements quan.ClaimStore in one write transaction: claims
// decided before are returned as recorded; the rest are planned per
// template with quan.PlanClaims against the stock and the holdings, and
// their coupons (which record the claims that issued them), the stock
// taken and the records of the claims that failed written together.
func (s *Store) IssueClaims(ctx context.Context, claims []*quan.Claim, now time.Time) (_ []*quan.Claim, err error) {
	defer s.db.unavailable(&err)
	out := make([]*quan.Claim, len(claims))
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("issue claims: %w", err)
	}
	defer tx.Rollback()

	byTemplate := map[int64][]int{} // indexes into claims
	var order []int64
	for i, c := range claims {
		if _, ok := byTemplate[c.TemplateID]; !ok {
			order = append(order, c.TemplateID)
		}
		byTemplate[c.TemplateID] = append(byTemplate[c.TemplateID], i)
	}
	for _, id := range order {
		if err := s.issueTemplateClaims(ctx, tx, id, claims, byTemplate[id], out, now); err != nil {
			return nil, fmt.Errorf("issue claims of template %d: %w", id, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("issue claims: commit: %w", translate(err))
	}
	return out, nil
}

// issueTemplateClaims decides the claims[i] of one template, i in idx,
// into out[i]: those decided before as recorded (failed in claims, issued
// on the users' coupons, read with their holdings), the rest anew.
func (s *Store) issueTemplateClaims(ctx context.Context, tx *sql.Tx, template int64, claims []*quan.Claim, idx []int, out []*quan.Claim, now time.Time) error {
	t, err := queryTemplate(ctx, tx, quan.AnyShop, template)
	if err != nil && !errors.Is(err, quan.ErrNotFound) {
		return err
	}
	cs := make([]*quan.Claim, len(idx))
	users := make([]int64, 0, len(idx))
	for k, i := range idx {
		cs[k] = claims[i]
		users = append(users, claims[i].UserID)
	}
	recorded, err := failedByID(ctx, tx, cs)
	if err != nil {
		return err
	}
	slices.Sort(users)
	users = slices.Compact(users)
	held := map[int64]int64{}
	var periods *quan.PeriodHeld // nil counts nothing
	if t != nil && t.HasPeriodLimits() {
		periods = &quan.PeriodHeld{}
	}
	if t != nil {
		if err := holdings(ctx, tx, template, users, held, recorded, periods); err != nil {
			return err
		}
	}
	fresh := quan.UndecidedClaims(claims, idx, recorded, out)
	if len(fresh) == 0 {
		return nil
	}
	if t == nil {
		// No statistics: there is no template to count them for.
		for _, c := range fresh {
			c.Status, c.Reason, c.DecidedAt = quan.ClaimFailed, string(quan.CauseTemplateInactive), now
		}
		return insertClaims(ctx, tx, fresh)
	}
	return s.issueClaims(ctx, tx, t, fresh, held, periods, now)
}

// issueClaims decides the new claims cs of template t in tx, given the
// coupons each user holds.
func (s *Store) issueClaims(ctx context.Context, tx *sql.Tx, t *quan.Template, cs []*quan.Claim, held map[int64]int64, periods *quan.PeriodHeld, now time.Time) error {
	seqs := quan.PlanClaims(cs, t, held, periods, t.Stock, now)
	var issued []int // into cs
	for i, c := range cs {
		if c.Status == quan.ClaimIssued {
			issued = append(issued, i)
		}
	}
	if len(issued) > 0 {
		// In user order, as a chunk's: each page of the user index is
		// changed once, not once per claim that arrived in between.
		slices.SortFunc(issued, func(a, b int) int {
			return cmp.Or(cmp.Compare(cs[a].UserID, cs[b].UserID), cmp.Compare(seqs[a], seqs[b]))
		})
		for part := range slices.Chunk(issued, batchRows) {
			if err := s.insertClaimCoupons(ctx, tx, t, cs, seqs, part, now); err != nil {
				return err
			}
		}
		ids := make([]int64, len(issued))
		for k, i := range issued {
			ids[k] = cs[i].CouponID
		}
		if err := sqlrow.RecordIssued(ctx, tx, ids); err != nil {
			return err
		}
		n := int64(len(issued))
		res, err := tx.ExecContext(ctx, `UPDATE templates SET stock = stock - ? WHERE id = ? AND stock >= ?`, n, t.ID, n)
		if err != nil {
			return fmt.Errorf("take %d of the stock: %w", n, translate(err))
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return fmt.Errorf("take %d of the stock: the stock changed under the write lock (%d rows, %v)", len(issued), n, err)
		}
	}
	failed := failedOnly(cs)
	// One row of counters per template and batch, not per claim.
	var d quan.StatsDelta
	d.Issued(t.ID, t.ShopNo, quan.FromClaim, quan.CouponAvailable, int64(len(issued)), now)
	for _, c := range failed {
		d.Failed(t.ID, c.Reason, 1)
	}
	if err := s.addStats(ctx, tx, &d); err != nil {
		return err
	}
	return insertClaims(ctx, tx, failed)
}

// claimCouponsSQL inserts the coupons of n claims and returns their ids,
// users and seqs. OR IGNORE, so that SQLite keeps no statement journal
// (see ApplyChunk); a row it leaves out (a seq taken) is an error
// of insertClaimCoupons.
func claimCouponsSQL(n int) string {
	var b strings.Builder
	b.WriteString(`INSERT OR IGNORE INTO coupons (template_id, shop_no, source, created_at, updated_at,
		task_id, order_id, user_id, seq, status, valid_start, valid_end, claim_id, claimed_at) VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`(?1, ?2, ?3, ?4, ?5, NULL, NULL, ?, ?, ?, ?, ?, ?, ?)`)
	}
	b.WriteString(` RETURNING id, user_id, seq`)
	return b.String()
}

// fullClaimCouponsSQL, the statement of batchRows claims, is prepared
// once when the store opens: SQLite's parser takes a seventh of a claim's
// time in a statement prepared each time.
var fullClaimCouponsSQL = claimCouponsSQL(batchRows)

// insertClaimCoupons inserts the coupons of the claims cs[i], i in idx
// (at most batchRows, sorted by user and seq), with one statement, and
// sets each claim's CouponID.
func (s *Store) insertClaimCoupons(ctx context.Context, tx *sql.Tx, t *quan.Template, cs []*quan.Claim, seqs []int64, idx []int, now time.Time) error {
	args := make([]any, 0, 5+7*len(idx))
	args = append(args, t.ID, t.ShopNo, quan.FromClaim, micros(now), micros(now))
	type userSeq struct{ user, seq int64 }
	of := make(map[userSeq]*quan.Claim, len(idx))
	for _, i := range idx {
		c := cs[i]
		cp := quan.NewCoupon(t, c.UserID, seqs[i], 0, c.At)
		args = append(args, cp.UserID, cp.Seq, cp.Status, micros(cp.ValidStart), micros(cp.ValidEnd), c.ID, micros(c.At))
		of[userSeq{cp.UserID, cp.Seq}] = c
	}
	query := fullClaimCouponsSQL
	if len(idx) != batchRows {
		query = claimCouponsSQL(len(idx))
	}
	rows, err := s.db.writeStmts.queryTx(ctx, tx, query, args...)
	if err != nil {
		return fmt.Errorf("insert the coupons of %d claims: %w", len(idx), translate(err))
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var (
			id int64
			us userSeq
		)
		if err := rows.Scan(&id, &us.user, &us.seq); err != nil {
			return fmt.Errorf("insert the coupons of %d claims: %w", len(idx), err)
		}
		c := of[us]
		if c == nil || c.CouponID != 0 {
			return fmt.Errorf("insert the coupons of %d claims: coupon %d of user %d, seq %d, is none of theirs", len(idx), id, us.user, us.seq)
		}
		c.CouponID = id
		n++
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("insert the coupons of %d claims: %w", len(idx), translate(err))
	}
	if n != len(idx) {
		return fmt.Errorf("insert the coupons of %d claims: %d inserted, a receive sequence was taken", len(idx), n)
	}
	return nil
}

// failedOnly returns the claims of cs that failed: an issued claim is
// recorded on its coupon.
func failedOnly(cs []*quan.Claim) []*quan.Claim {
	var failed []*quan.Claim
	for _, c := range cs {
		if c.Status != quan.ClaimIssued {
			failed = append(failed, c)
		}
	}
	return failed
}

// insertClaims records decided claims.
func insertClaims(ctx context.Context, tx *sql.Tx, cs []*quan.Claim) error {
	for len(cs) > 0 {
		n := min(len(cs), batchRows/8)
		var b strings.Builder
		b.WriteString(`INSERT INTO claims (` + claimColumns + `) VALUES `)
		args := make([]any, 0, 8*n)
		for i, c := range cs[:n] {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`(?, ?, ?, ?, ?, ?, ?, ?)`)
			args = append(args, sqlrow.ClaimValues(c, micros)...)
		}
		if _, err := tx.ExecContext(ctx, b.String(), args...); err != nil {
			return fmt.Errorf("record %d claims: %w", n, translate(err))
		}
		cs = cs[n:]
	}
	return nil
}

// failedByID returns the records of the claims of cs in claims: the
// failed ones, and those whose coupons were archived.
func failedByID(ctx context.Context, tx *sql.Tx, cs []*quan.Claim) (map[string]*quan.Claim, error) {
	found := map[string]*quan.Claim{}
	for start := 0; start < len(cs); start += batchRows {
		part := cs[start:min(len(cs), start+batchRows)]
		ids := make([]any, len(part))
		for i, c := range part {
			ids[i] = c.ID
		}
		if err := scanClaims(ctx, tx, found, `SELECT `+claimColumns+` FROM claims WHERE id IN (`+sqlrow.Params(len(part))+`)`, ids...); err != nil {
			return nil, err
		}
	}
	return found, nil
}

// holdingsSQL reads the coupons of template ?1 that n users hold, and the
// claims that issued them (sqlrow.ScanHeld), along the user index, as
// heldCountsSQL counts them.
func holdingsSQL(n int) string {
	return `SELECT claim_id, template_id, user_id, id, claimed_at, created_at FROM coupons
		WHERE template_id = ?1 AND user_id IN (` + sqlrow.Params(n) + `)`
}

// holdings reads the coupons of template that users hold: it counts them
// into held, and adds the claims that issued them to found.
//
// With periods (not nil), it also counts each coupon in the Shanghai day
// and week its user received it (the period limits).
func holdings(ctx context.Context, tx *sql.Tx, template int64, users []int64, held map[int64]int64, found map[string]*quan.Claim, periods *quan.PeriodHeld) error {
	for len(users) > 0 {
		n := min(len(users), batchRows)
		args := sqlrow.Args(template, users[:n])
		users = users[n:]
		hs, err := sqlrow.Query(ctx, tx, "read the users' coupons", sqlrow.ScanHeld, holdingsSQL(n), args...)
		if err != nil {
			return err
		}
		for _, c := range hs {
			held[c.UserID]++
			periods.Add(c.UserID, sqlrow.Received(c))
			if c.ID != "" {
				found[c.ID] = c
			}
		}
	}
	return nil
}

// issuedColumns read the record of the claim that issued a coupon, as
// claimColumns read one from claims.
const issuedColumns = `claim_id, template_id, user_id, 'issued', id, '', claimed_at, created_at`

// issuedOneSQL finds the coupon of one claim: user, template, claim id.
const issuedOneSQL = `SELECT ` + issuedColumns + ` FROM coupons WHERE user_id = ? AND template_id = ? AND claim_id = ?`

// scanClaims adds the claims query finds to found.
func scanClaims(ctx context.Context, q sqlrow.Queryer, found map[string]*quan.Claim, query string, args ...any) error {
	cs, err := sqlrow.Query(ctx, q, "look up claims", sqlrow.ScanClaim, query, args...)
	for _, c := range cs {
		found[c.ID] = c
	}
	return err
}

// FailClaim implements quan.ClaimStore, in one write transaction: a claim
// that issued a coupon in between keeps it.
func (s *Store) FailClaim(ctx context.Context, c *quan.Claim, reason string, now time.Time) (_ *quan.Claim, err error) {
	defer s.db.unavailable(&err)
	if err := sqlrow.CheckClaimCode("reason", reason); err != nil {
		return nil, fmt.Errorf("fail claim %s: %w", c.ID, err)
	}
	f := *c
	f.Status, f.Reason, f.CouponID, f.DecidedAt = quan.ClaimFailed, reason, 0, now
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("fail claim %s: %w", c.ID, err)
	}
	defer tx.Rollback()
	rec, err := s.claim(ctx, tx, c.ID)
	if errors.Is(err, quan.ErrNotFound) {
		if _, err := tx.ExecContext(ctx, `INSERT INTO claims (`+claimColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			sqlrow.ClaimValues(&f, micros)...); err != nil {
			return nil, fmt.Errorf("fail claim %s: %w", c.ID, translate(err))
		}
		var d quan.StatsDelta
		d.Failed(f.TemplateID, reason, 1)
		if err := s.addStats(ctx, tx, &d); err != nil {
			return nil, fmt.Errorf("fail claim %s: %w", c.ID, err)
		}
		rec, err = &f, nil
	}
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("fail claim %s: commit: %w", c.ID, translate(err))
	}
	return rec, nil
}

// Claim implements quan.ClaimStore.
func (s *Store) Claim(ctx context.Context, id string) (_ *quan.Claim, err error) {
	defer s.db.unavailable(&err)
	return s.claim(ctx, s.db.read, id)
}

// claim reads the record of claim id from the coupon it issued, found by
// the template and user its id names, or else from claims (a failed
// claim, or one whose coupon was archived).
func (s *Store) claim(ctx context.Context, q rowQueryer, id string) (*quan.Claim, error) {
	template, user, err := quan.ParseClaimID(id)
	if err != nil {
		return nil, err
	}
	c, err := sqlrow.ScanClaim(q.QueryRowContext(ctx, issuedOneSQL, user, template, id))
	if errors.Is(err, sql.ErrNoRows) {
		c, err = sqlrow.ScanClaim(q.QueryRowContext(ctx, `SELECT `+claimColumns+` FROM claims WHERE id = ?`, id))
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil, quan.Errorf(quan.ENOTFOUND, "no claim %q", id)
	}
	if err != nil {
		return nil, fmt.Errorf("claim %s: %w", id, err)
	}
	return c, nil
}
