package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/sqlrow"
)

var _ quan.RulesStore = (*Store)(nil)

// AddRulesVersion implements quan.RulesStore: the template's row lock
// (SELECT ... FOR UPDATE) orders concurrent changes, so each gets the
// next version. check may run more than once if InnoDB picks the
// transaction as a deadlock victim.
func (s *Store) AddRulesVersion(ctx context.Context, shop, id int64, actor string, v *quan.RulesVersion,
	check func(*quan.Template, *quan.RulesVersion) error) (err error) {
	defer s.db.unavailable(&err)
	var add quan.RulesVersion
	err = s.db.inTx(ctx, func(tx *sql.Tx) error {
		t, err := queryTemplate(ctx, tx, shop, id, "FOR UPDATE")
		if err != nil {
			return err
		}
		latest, err := sqlrow.ScanRulesVersion(tx.QueryRowContext(ctx,
			`SELECT `+sqlrow.RulesColumns+` FROM template_rules WHERE template_id = ? ORDER BY version DESC LIMIT 1`, id))
		var last *quan.RulesVersion
		switch {
		case err == nil:
			last = &latest
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("latest version: %w", err)
		}
		if err := check(t, last); err != nil {
			return fnError{err}
		}
		add = *v
		add.TemplateID, add.Version = id, 1
		if last != nil {
			add.Version = last.Version + 1
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO template_rules (`+sqlrow.RulesColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			sqlrow.RulesVersionValues(&add, utc)...); err != nil {
			return translate(err)
		}
		return insertAudit(ctx, tx, &quan.AuditEntry{TemplateID: id, ShopNo: t.ShopNo, Actor: actor,
			Action: quan.ActionRules, At: add.CreatedAt, Changes: quan.RulesChanges(t, last, &add)})
	})
	if fe, ok := err.(fnError); ok {
		return fe.err
	}
	if errors.Is(err, quan.ErrNotFound) {
		return err
	}
	if err != nil {
		return fmt.Errorf("add rules of template %d: %w", id, err)
	}
	*v = add
	return nil
}

// RulesVersions implements quan.RulesStore.
func (s *Store) RulesVersions(ctx context.Context, template int64) (_ []quan.RulesVersion, err error) {
	defer s.db.unavailable(&err)
	return sqlrow.Query(ctx, s.db.db, fmt.Sprintf("rules of template %d", template), sqlrow.ScanRulesVersion,
		`SELECT `+sqlrow.RulesColumns+` FROM template_rules WHERE template_id = ? ORDER BY version`, template)
}
