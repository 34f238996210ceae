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
	"github.com/quanhq/quan/internal/sqlrow"
)

// Store keeps templates and their audit trail in a DB.
type Store struct {
	db *DB
}

var (
	_ quan.Store         = (*Store)(nil)
	_ quan.TemplateStore = (*Store)(nil)
)

// NewStore returns a Store on db. Closing db is the caller's business.
func NewStore(db *DB) *Store { return &Store{db: db} }

// templateColumns is the column list of every SELECT, in
// sqlrow.ScanTemplate's order.
const templateColumns = `id, shop_no, name, description, kind,
	rule_amount, rule_threshold, rule_rate, rule_cap, rule_step,
	source, scope_kind, scope_ids, issue_start, issue_end,
	validity_kind, validity_start, validity_end, validity_hours, code_prefix,
	per_user_limit, stock, total_stock, status, created_by, created_at, updated_at,
	remind_before, remind_channels, remind_lead, stacking, priority,
	budget, per_user_daily, per_user_weekly, eligibility, applies,
	logo_url, category, goods, instructions, metadata, promo_code`

// CreateTemplate stores t, sets t.ID, and records the create audit entry
// in the same transaction. t.ID is left alone if anything fails.
func (s *Store) CreateTemplate(ctx context.Context, t *quan.Template, actor string) (err error) {
	defer s.db.unavailable(&err)
	vals, err := sqlrow.TemplateValues(t, utc)
	if err != nil {
		return fmt.Errorf("create template: %w", err)
	}
	var id int64
	err = s.db.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `
			INSERT INTO templates (
				shop_no, name, description, kind,
				rule_amount, rule_threshold, rule_rate, rule_cap, rule_step,
				source, scope_kind, scope_ids, issue_start, issue_end,
				validity_kind, validity_start, validity_end, validity_hours, code_prefix,
				per_user_limit, stock, total_stock, status, created_by, created_at, updated_at,
				remind_before, remind_channels, remind_lead, stacking, priority,
				budget, per_user_daily, per_user_weekly, eligibility, applies,
				logo_url, category, goods, instructions, metadata, promo_code
			) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			append([]any{t.ShopNo}, vals...)...,
		)
		if err != nil {
			return promoCodeHeld(translate(err), t.PromoCode)
		}
		if id, err = res.LastInsertId(); err != nil {
			return err
		}
		created := *t
		created.ID = id
		return insertAudit(ctx, tx, &quan.AuditEntry{
			TemplateID: id,
			ShopNo:     t.ShopNo,
			Actor:      actor,
			Action:     quan.ActionCreate,
			At:         t.CreatedAt,
			Changes:    quan.DiffTemplates(nil, &created),
		})
	})
	if err != nil {
		return fmt.Errorf("create template: %w", err)
	}
	t.ID = id
	return nil
}

// Template returns template id of shop (any shop for quan.AnyShop), or
// quan.ErrNotFound.
func (s *Store) Template(ctx context.Context, shop, id int64) (_ *quan.Template, err error) {
	defer s.db.unavailable(&err)
	return queryTemplate(ctx, s.db.db, shop, id, "")
}

// rowQueryer is a *sql.DB or a *sql.Tx.
type rowQueryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// queryTemplate reads template id of shop; lock is "" or a locking clause
// such as "FOR UPDATE".
func queryTemplate(ctx context.Context, q rowQueryer, shop, id int64, lock string) (*quan.Template, error) {
	query, args := sqlrow.OfShop(`SELECT `+templateColumns+` FROM templates WHERE id = ?`, id, shop)
	if lock != "" {
		query += ` ` + lock
	}
	return sqlrow.One(q.QueryRowContext(ctx, query, args...), "template", id, sqlrow.ScanTemplate)
}

// Templates returns one page of the templates matching f, newest (highest
// id) first, and the number of all matches. A Limit of 0 means
// quan.DefaultPageSize, and one above quan.MaxPageSize is cut to it.
func (s *Store) Templates(ctx context.Context, f quan.TemplateFilter) (_ []*quan.Template, _ int, err error) {
	defer s.db.unavailable(&err)
	var w sqlrow.Where
	sqlrow.TemplateWhere(&w, f, escapeLike, `!`)
	// The column's binary collation compares code points, so both
	// sides are lowered: ASCII case is ignored, as the contract asks
	// (and the case of other letters too, which it allows). The
	// escape, '!', makes % and _ in the search text literal; it is
	// not a backslash, whose meaning in a literal depends on sql_mode.
	w.If(f.NameContains != "", `LOWER(name) LIKE LOWER(?) ESCAPE '!'`, "%"+escapeLike(f.NameContains)+"%")
	return sqlrow.Templates(ctx, s.db.db, templateColumns, w, f)
}

// HighestTemplateID returns the highest template id, 0 if there is
// none: MAX of the primary key, one index lookup.
func (s *Store) HighestTemplateID(ctx context.Context) (_ int64, err error) {
	defer s.db.unavailable(&err)
	var id sql.NullInt64
	if err := s.db.db.QueryRowContext(ctx, `SELECT MAX(id) FROM templates`).Scan(&id); err != nil {
		return 0, fmt.Errorf("highest template id: %w", err)
	}
	return id.Int64, nil
}

// PromoCodeTemplate returns the id of the active template holding code,
// along the unique index of promo_code_held, or quan.ErrNotFound.
func (s *Store) PromoCodeTemplate(ctx context.Context, code string) (_ int64, err error) {
	defer s.db.unavailable(&err)
	var (
		id     int64
		status quan.TemplateStatus
	)
	err = s.db.db.QueryRowContext(ctx, `SELECT id, status FROM templates WHERE promo_code_held = ?`, code).Scan(&id, &status)
	switch {
	case errors.Is(err, sql.ErrNoRows) || err == nil && status != quan.TemplateActive:
		return 0, quan.Errorf(quan.ENOTFOUND, "no active template has the promo code %q", code)
	case err != nil:
		return 0, fmt.Errorf("template of promo code %q: %w", code, err)
	}
	return id, nil
}

// promoCodeHeld is err, or quan.PromoCodeHeld when err is the unique
// index of promo_code_held refusing code: the templates' one unique
// index beside the primary key, which the store hands out.
func promoCodeHeld(err error, code string) error {
	if code != "" && errors.Is(err, quan.ErrConflict) {
		return quan.PromoCodeHeld(code)
	}
	return err
}

// UpdateTemplate locks template id of shop with SELECT ... FOR UPDATE and
// calls fn with it. If fn returns nil, the template and an audit entry
// listing the changed fields are saved in the same transaction; the
// entry's time is the template's UpdatedAt. If fn fails, nothing is
// written and its error is returned as it is. quan.ErrNotFound if there is
// no such template.
//
// fn holds the template's row lock, which claims and distributions of the
// template wait for: it must be quick and must not call the store. It may
// run more than once if InnoDB picks the transaction as a deadlock victim;
// each run gets a freshly read template. It must not change ID or ShopNo.
func (s *Store) UpdateTemplate(ctx context.Context, shop, id int64, actor, action string, fn func(*quan.Template) error) (_ *quan.Template, err error) {
	defer s.db.unavailable(&err)
	var saved *quan.Template
	err = s.db.inTx(ctx, func(tx *sql.Tx) error {
		t, err := queryTemplate(ctx, tx, shop, id, "FOR UPDATE")
		if err != nil {
			return err
		}
		before := *t
		before.Scope.IDs = slices.Clone(t.Scope.IDs)
		if err := fn(t); err != nil {
			return fnError{err}
		}
		if t.ID != before.ID || t.ShopNo != before.ShopNo {
			return fmt.Errorf("update template %d: the update changed the id or the shop, which are fixed", id)
		}
		vals, err := sqlrow.TemplateValues(t, utc)
		if err != nil {
			return fmt.Errorf("update template %d: %w", id, err)
		}
		if _, err := tx.ExecContext(ctx, `
			UPDATE templates SET
				name = ?, description = ?, kind = ?,
				rule_amount = ?, rule_threshold = ?, rule_rate = ?, rule_cap = ?, rule_step = ?,
				source = ?, scope_kind = ?, scope_ids = ?, issue_start = ?, issue_end = ?,
				validity_kind = ?, validity_start = ?, validity_end = ?, validity_hours = ?, code_prefix = ?,
				per_user_limit = ?, stock = ?, total_stock = ?, status = ?,
				created_by = ?, created_at = ?, updated_at = ?,
				remind_before = ?, remind_channels = ?, remind_lead = ?,
				stacking = ?, priority = ?,
				budget = ?, per_user_daily = ?, per_user_weekly = ?,
				eligibility = ?, applies = ?,
				logo_url = ?, category = ?, goods = ?, instructions = ?, metadata = ?, promo_code = ?
			WHERE id = ?`,
			append(vals, id)...,
		); err != nil {
			return fmt.Errorf("update template %d: %w", id, promoCodeHeld(translate(err), t.PromoCode))
		}
		if err := insertAudit(ctx, tx, &quan.AuditEntry{
			TemplateID: id,
			ShopNo:     t.ShopNo,
			Actor:      actor,
			Action:     action,
			At:         t.UpdatedAt,
			Changes:    quan.DiffTemplates(&before, t),
		}); err != nil {
			return fmt.Errorf("update template %d: %w", id, err)
		}
		e, err := quan.TemplateEvent(before.Status, t)
		if err != nil {
			return err
		}
		if err := sqlrow.RecordEvent(ctx, tx, e, utc(t.UpdatedAt)); err != nil {
			return translate(err)
		}
		saved = t
		return nil
	})
	if fe, ok := err.(fnError); ok {
		return nil, fe.err
	}
	if err != nil {
		return nil, fmt.Errorf("update template %d: %w", id, err)
	}
	return saved, nil
}

// fnError carries the error of a caller's closure out of inTx untouched,
// so that it is returned as it is, not wrapped and not retried.
type fnError struct{ err error }

func (e fnError) Error() string { return e.err.Error() }

// AdjustStock adds delta to the stock of template id and returns the stock
// left. The UPDATE's WHERE refuses a take larger than the stock, and the
// stock is read back in the same transaction, under the row lock the
// UPDATE took, so concurrent takes each see their own result. A take that
// is refused changes nothing and returns quan.ErrOutOfStock; quan.ErrNotFound
// if there is no such template.
func (s *Store) AdjustStock(ctx context.Context, id, delta int64) (_ int64, err error) {
	defer s.db.unavailable(&err)
	var stock int64
	err = s.db.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx,
			`UPDATE templates SET stock = stock + ? WHERE id = ? AND stock + ? >= 0`, delta, id, delta)
		if err != nil {
			return translate(err)
		}
		// The connection reports matched rows (clientFoundRows), so a
		// delta of 0 counts as a match.
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 1 {
			return tx.QueryRowContext(ctx, `SELECT stock FROM templates WHERE id = ?`, id).Scan(&stock)
		}
		// Nothing updated: no such template, or not enough stock.
		var exists bool
		if err := tx.QueryRowContext(ctx,
			`SELECT EXISTS (SELECT 1 FROM templates WHERE id = ?)`, id).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return fmt.Errorf("template %d: %w", id, quan.ErrNotFound)
		}
		return fmt.Errorf("template %d: take %d: %w", id, -delta, quan.ErrOutOfStock)
	})
	if err != nil {
		return 0, fmt.Errorf("adjust stock of template %d: %w", id, err)
	}
	return stock, nil
}

// TemplateHistory returns the audit entries of template id of shop, oldest
// first, or quan.ErrNotFound.
func (s *Store) TemplateHistory(ctx context.Context, shop, id int64) (_ []*quan.AuditEntry, err error) {
	defer s.db.unavailable(&err)
	tx, err := s.db.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("template %d history: %w", id, err)
	}
	defer tx.Rollback()

	query, args := sqlrow.OfShop(`SELECT EXISTS (SELECT 1 FROM templates WHERE id = ?`, id, shop)
	var exists bool
	if err := tx.QueryRowContext(ctx, query+`)`, args...).Scan(&exists); err != nil {
		return nil, fmt.Errorf("template %d history: %w", id, err)
	}
	if !exists {
		return nil, fmt.Errorf("template %d: %w", id, quan.ErrNotFound)
	}
	return sqlrow.Query(ctx, tx, fmt.Sprintf("template %d history", id), sqlrow.ScanAudit, `
		SELECT id, template_id, shop_no, actor, action, at, changes
		FROM template_audit WHERE template_id = ? ORDER BY id`, id)
}

// Ping reports whether the server is reachable.
func (s *Store) Ping(ctx context.Context) (err error) {
	defer s.db.unavailable(&err)
	return s.db.Ping(ctx)
}

func insertAudit(ctx context.Context, tx *sql.Tx, e *quan.AuditEntry) error {
	vals, err := sqlrow.AuditValues(e, utc)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `
		INSERT INTO template_audit (template_id, shop_no, actor, action, at, changes)
		VALUES (?, ?, ?, ?, ?, ?)`, vals...); err != nil {
		return fmt.Errorf("audit entry: %w", translate(err))
	}
	return nil
}

// escapeLike makes the LIKE wildcards % and _, and the escape itself,
// literal; the query says ESCAPE '!'.
func escapeLike(s string) string {
	return strings.NewReplacer(`!`, `!!`, `%`, `!%`, `_`, `!_`).Replace(s)
}

// utc is how times are stored: DATETIME(6) in UTC. The driver converts to
// its location (UTC) itself; utc makes the intent visible at each write.
func utc(t time.Time) time.Time { return t.UTC() }

// nullTime stores the zero time as NULL.
func nullTime(t time.Time) any { return sqlrow.Null(utc, t) }
