package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/sqlrow"
)

var _ quan.ClaimStore = (*Store)(nil)

const claimColumns = `id, template_id, user_id, status, coupon_id, reason, at, decided_at`

// claimBatch bounds the rows of one claims or coupons statement.
const claimBatch = 500

// IssueClaims implements quan.ClaimStore in one transaction. Template by
// template, in id order (two batches lock them in the same order), under
// the template's row lock: claims decided before are returned as
// recorded; the rest are planned with quan.PlanClaims against the stock
// and the holdings, and their coupons (which record the claims that
// issued them), the stock taken and the records of the claims that failed
// written together. FailClaim takes the same lock, so a claim is decided
// once.
func (s *Store) IssueClaims(ctx context.Context, claims []*quan.Claim, now time.Time) (_ []*quan.Claim, err error) {
	defer s.db.unavailable(&err)
	var out []*quan.Claim
	err = s.db.inTx(ctx, func(tx *sql.Tx) error {
		out = make([]*quan.Claim, len(claims))
		byTemplate := map[int64][]int{} // indexes into claims
		for i, c := range claims {
			byTemplate[c.TemplateID] = append(byTemplate[c.TemplateID], i)
		}
		ids := make([]int64, 0, len(byTemplate))
		for id := range byTemplate {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			if err := s.db.issueTemplateClaims(ctx, tx, id, claims, byTemplate[id], out, now); err != nil {
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

// issueTemplateClaims decides the claims[i] of one template, i in idx,
// into out[i].
func (db *DB) issueTemplateClaims(ctx context.Context, tx *sql.Tx, template int64, claims []*quan.Claim, idx []int, out []*quan.Claim, now time.Time) error {
	t, err := queryTemplate(ctx, tx, quan.AnyShop, template, "FOR UPDATE")
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
		for _, c := range fresh {
			c.Status, c.Reason, c.DecidedAt = quan.ClaimFailed, string(quan.CauseTemplateInactive), now
		}
		return insertClaims(ctx, tx, fresh)
	}
	return db.issueClaims(ctx, tx, t, fresh, held, periods, now)
}

// holdings reads the coupons of template that users hold, in one search
// of the (user, template, seq) index a user as heldCounts does: it counts
// them into held, and adds the claims that issued them to found. It is a
// plain read, which in a transaction that read before may miss a coupon
// issued since: the unique (user, template, seq) index then refuses the
// coupon planned again, and the batch goes again.
//
// With periods (not nil), it also counts each coupon in the Shanghai day
// and week its user received it (the period limits).
func holdings(ctx context.Context, tx *sql.Tx, template int64, users []int64, held map[int64]int64, found map[string]*quan.Claim, periods *quan.PeriodHeld) error {
	for part := range slices.Chunk(users, heldBatch) {
		b := usersOfTemplate([]byte(`SELECT claim_id, template_id, user_id, id, claimed_at, created_at FROM coupons`), template, part)
		hs, err := sqlrow.Query(ctx, tx, "read the users' coupons", sqlrow.ScanHeld, string(b))
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

// issueClaims decides the new claims cs of template t, locked, in tx,
// given the coupons each user holds.
func (db *DB) issueClaims(ctx context.Context, tx *sql.Tx, t *quan.Template, cs []*quan.Claim, held map[int64]int64, periods *quan.PeriodHeld, now time.Time) error {
	template := t.ID
	seqs := quan.PlanClaims(cs, t, held, periods, t.Stock, now)
	var issued []int // indexes into cs
	var failed []*quan.Claim
	for i, c := range cs {
		if c.Status == quan.ClaimIssued {
			issued = append(issued, i)
		} else {
			failed = append(failed, c)
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
		if err := db.insertClaimCoupons(ctx, tx, t, cs, seqs, part, now); err != nil {
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
	if err := insertClaims(ctx, tx, failed); err != nil {
		return err
	}
	// One row of counters per template and batch, not per claim.
	var d quan.StatsDelta
	d.Issued(template, t.ShopNo, quan.FromClaim, quan.CouponAvailable, int64(len(issued)), now)
	for _, c := range failed {
		d.Failed(template, c.Reason, 1)
	}
	return addStats(ctx, tx, &d)
}

// insertClaimCoupons writes the coupons of the claims cs[part], each
// recording its claim, and sets their CouponID: by LOAD DATA when the
// server allows it (the server parses its text for about half the CPU of
// an INSERT's literals, see loadCoupons), otherwise by one multi-row
// INSERT. With consecutive ids (consecutiveIDs: a LOAD DATA holds the
// table's AUTO-INC lock to its end, an INSERT of known length reserves
// its ids at once) they follow from LAST_INSERT_ID; else they are read
// back.
func (db *DB) insertClaimCoupons(ctx context.Context, tx *sql.Tx, t *quan.Template, cs []*quan.Claim, seqs []int64, part []int, now time.Time) error {
	loaded := false
	if !db.noLoad.Load() {
		err := db.loadClaimCoupons(ctx, tx, t, cs, seqs, part, now)
		if !refusedLoad(err) {
			if err != nil {
				return err
			}
			loaded = true
		} else {
			db.noLoad.Store(true)
			db.logger.Warn("the server refuses LOAD DATA LOCAL INFILE (local_infile is off): coupons go by INSERT, which takes the server about twice the CPU",
				"err", err)
		}
	}
	consecutive := db.consecutiveIDs.Load()
	var (
		first int64
		err   error
	)
	if !loaded {
		if first, err = insertClaimCouponRows(ctx, tx, t, cs, seqs, part, now); err != nil {
			return err
		}
	} else if consecutive {
		if err := tx.QueryRowContext(ctx, `SELECT LAST_INSERT_ID()`).Scan(&first); err != nil {
			return fmt.Errorf("load %d coupons: read their first id: %w", len(part), err)
		}
	}
	if !consecutive {
		return couponIDs(ctx, tx, t.ID, cs, seqs, part)
	}
	if first <= 0 {
		return fmt.Errorf("write %d coupons: first id %d", len(part), first)
	}
	for k, i := range part {
		cs[i].CouponID = first + int64(k)
	}
	return nil
}

// loadClaimCoupons writes the coupons of the claims cs[part] by one LOAD
// DATA LOCAL INFILE (loadRows). A value the server would cut short with
// a warning is refused before.
func (db *DB) loadClaimCoupons(ctx context.Context, tx *sql.Tx, t *quan.Template, cs []*quan.Claim, seqs []int64, part []int, now time.Time) error {
	b := make([]byte, 0, len(part)*256)
	for _, i := range part {
		c := cs[i]
		if len(c.ID) > maxClaimID {
			return fmt.Errorf("load %d coupons: claim id %.20q… is longer than %d bytes", len(part), c.ID, maxClaimID)
		}
		cp := quan.NewCoupon(t, c.UserID, seqs[i], 0, c.At)
		b = strconv.AppendInt(b, cp.UserID, 10)
		b = append(b, '\t')
		b = strconv.AppendInt(b, cp.Seq, 10)
		b = append(b, '\t')
		b = strconv.AppendInt(b, cp.TemplateID, 10)
		b = append(b, '\t')
		b = strconv.AppendInt(b, cp.ShopNo, 10)
		b = append(b, '\t')
		b = appendLoadText(b, string(cp.Status))
		b = append(b, '\t')
		b = appendLoadTime(b, cp.ValidStart)
		b = append(b, '\t')
		b = appendLoadTime(b, cp.ValidEnd)
		b = append(b, '\t')
		b = appendLoadText(b, string(quan.FromClaim))
		b = append(b, "\t\\N\t\\N\t"...)
		b = appendLoadTime(b, now)
		b = append(b, '\t')
		b = appendLoadTime(b, now)
		b = append(b, '\t')
		b = appendLoadText(b, c.ID)
		b = append(b, '\t')
		b = appendLoadTime(b, c.At)
		b = append(b, '\n')
	}
	// A clash (errClash): the batch goes again, and reads the coupon.
	return db.loadRows(ctx, tx, b, len(part), `user_id, seq, template_id, shop_no, status, valid_start, valid_end,
		source, task_id, order_id, created_at, updated_at, claim_id, claimed_at`)
}

// maxClaimID is the length of coupons.claim_id.
const maxClaimID = 64

// appendLoadText appends s to LOAD DATA's text, its backslashes, tabs
// and newlines escaped.
func appendLoadText(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			b = append(b, '\\', '\\')
		case '\t':
			b = append(b, '\\', 't')
		case '\n':
			b = append(b, '\\', 'n')
		default:
			b = append(b, c)
		}
	}
	return b
}

// appendLoadTime appends t in UTC as LOAD DATA reads a DATETIME(6).
func appendLoadTime(b []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(b, "2006-01-02 15:04:05.000000")
}

// insertClaimCouponRows writes the coupons of the claims cs[part] by one
// multi-row INSERT, and returns the first id it wrote.
func insertClaimCouponRows(ctx context.Context, tx *sql.Tx, t *quan.Template, cs []*quan.Claim, seqs []int64, part []int, now time.Time) (int64, error) {
	var b strings.Builder
	b.WriteString(`INSERT INTO coupons (template_id, shop_no, user_id, seq, status, valid_start, valid_end,
		source, task_id, order_id, created_at, updated_at, claim_id, claimed_at) VALUES `)
	args := make([]any, 0, 12*len(part))
	for k, i := range part {
		if k > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`(?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?, ?, ?, ?)`)
		cp := quan.NewCoupon(t, cs[i].UserID, seqs[i], 0, cs[i].At)
		cp.Source = quan.FromClaim
		args = append(args, cp.TemplateID, cp.ShopNo, cp.UserID, cp.Seq, string(cp.Status),
			utc(cp.ValidStart), utc(cp.ValidEnd), string(cp.Source), utc(now), utc(now), cs[i].ID, utc(cs[i].At))
	}
	res, err := tx.ExecContext(ctx, b.String(), args...)
	if err != nil {
		return 0, fmt.Errorf("insert %d coupons: %w", len(part), translate(err))
	}
	first, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("insert %d coupons: %w", len(part), err)
	}
	if n, err := res.RowsAffected(); err != nil || n != int64(len(part)) {
		return 0, fmt.Errorf("insert %d coupons: %d rows (%v)", len(part), n, err)
	}
	return first, nil
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
			args = append(args, sqlrow.ClaimValues(c, utc)...)
		}
		if _, err := tx.ExecContext(ctx, b.String(), args...); err != nil {
			return fmt.Errorf("record %d claims: %w", len(part), translate(err))
		}
	}
	return nil
}

// issuedColumns read the record of the claim that issued a coupon, as
// claimColumns read one from claims.
const issuedColumns = `claim_id, template_id, user_id, 'issued', id, '', claimed_at, created_at`

// claimsByID returns the records of the claims cs of template that exist, by
// locking reads (FOR UPDATE), which see what committed before, whatever
// the transaction read earlier: the failed ones (and those issued before
// coupons recorded their claims) in claims, the issued ones on their
// coupons, along the user index.
func claimsByID(ctx context.Context, tx *sql.Tx, template int64, cs []*quan.Claim) (map[string]*quan.Claim, error) {
	found := map[string]*quan.Claim{}
	for part := range slices.Chunk(cs, claimBatch) {
		ids := make([]any, len(part))
		users := make([]any, 0, 2*len(part)+1)
		for i, c := range part {
			ids[i] = c.ID
			users = append(users, c.UserID)
		}
		users = append(users, template)
		in := sqlrow.Params(len(part))
		if err := scanClaims(ctx, tx, found, `SELECT `+claimColumns+` FROM claims WHERE id IN (`+in+`) FOR UPDATE`, ids...); err != nil {
			return nil, err
		}
		if err := scanClaims(ctx, tx, found, `SELECT `+issuedColumns+` FROM coupons FORCE INDEX (coupons_user_template_seq)
			WHERE user_id IN (`+in+`) AND template_id = ? AND claim_id IN (`+in+`) FOR UPDATE`, append(users, ids...)...); err != nil {
			return nil, err
		}
	}
	return found, nil
}

// failedByID returns the records of the claims of cs in claims (the
// failed ones, and those whose coupons were archived), by
// a locking read, which sees what committed before whatever the
// transaction read earlier.
func failedByID(ctx context.Context, tx *sql.Tx, cs []*quan.Claim) (map[string]*quan.Claim, error) {
	found := map[string]*quan.Claim{}
	for part := range slices.Chunk(cs, claimBatch) {
		ids := make([]any, len(part))
		for i, c := range part {
			ids[i] = c.ID
		}
		if err := scanClaims(ctx, tx, found, `SELECT `+claimColumns+` FROM claims WHERE id IN (`+sqlrow.Params(len(part))+`) FOR UPDATE`, ids...); err != nil {
			return nil, err
		}
	}
	return found, nil
}

// scanClaims adds the claims query finds to found.
func scanClaims(ctx context.Context, tx *sql.Tx, found map[string]*quan.Claim, query string, args ...any) error {
	cs, err := sqlrow.Query(ctx, tx, "look up claims", sqlrow.ScanClaim, query, args...)
	for _, c := range cs {
		found[c.ID] = c
	}
	return err
}

// FailClaim implements quan.ClaimStore in one transaction, under the row
// lock of the claim's template as IssueClaims takes it: a claim issued
// meanwhile keeps its coupon.
func (s *Store) FailClaim(ctx context.Context, c *quan.Claim, reason string, now time.Time) (_ *quan.Claim, err error) {
	defer s.db.unavailable(&err)
	if err := sqlrow.CheckClaimCode("reason", reason); err != nil {
		return nil, fmt.Errorf("fail claim %s: %w", c.ID, err)
	}
	var rec *quan.Claim
	err = s.db.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := queryTemplate(ctx, tx, quan.AnyShop, c.TemplateID, "FOR UPDATE"); err != nil && !errors.Is(err, quan.ErrNotFound) {
			return err
		}
		found, err := claimsByID(ctx, tx, c.TemplateID, []*quan.Claim{c})
		if err != nil {
			return err
		}
		if rec = found[c.ID]; rec != nil {
			return nil
		}
		f := *c
		f.Status, f.Reason, f.CouponID, f.DecidedAt = quan.ClaimFailed, reason, 0, now
		rec = &f
		if err := insertClaims(ctx, tx, []*quan.Claim{rec}); err != nil {
			return err
		}
		var d quan.StatsDelta
		d.Failed(c.TemplateID, reason, 1)
		return addStats(ctx, tx, &d)
	})
	if err != nil {
		return nil, fmt.Errorf("fail claim %s: %w", c.ID, err)
	}
	return rec, nil
}

// Claim implements quan.ClaimStore: the coupon the claim issued, found by
// the template and user its id names, or else its record in claims (a
// failed claim, or one whose coupon was archived).
func (s *Store) Claim(ctx context.Context, id string) (_ *quan.Claim, err error) {
	defer s.db.unavailable(&err)
	template, user, err := quan.ParseClaimID(id)
	if err != nil {
		return nil, err
	}
	c, err := sqlrow.ScanClaim(s.db.db.QueryRowContext(ctx, `SELECT `+issuedColumns+` FROM coupons
		WHERE user_id = ? AND template_id = ? AND claim_id = ?`, user, template, id))
	if errors.Is(err, sql.ErrNoRows) {
		c, err = sqlrow.ScanClaim(s.db.db.QueryRowContext(ctx, `SELECT `+claimColumns+` FROM claims WHERE id = ?`, id))
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil, quan.Errorf(quan.ENOTFOUND, "no claim %q", id)
	}
	if err != nil {
		return nil, fmt.Errorf("claim %s: %w", id, err)
	}
	return c, nil
}
