package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/sqlrow"
)

var _ quan.RulesStore = (*Store)(nil)

// AddRulesVersion implements quan.RulesStore in one write transaction,
// which holds SQLite's write lock: check runs under it.
func (s *Store) AddRulesVersion(ctx context.Context, shop, id int64, actor string, v *quan.RulesVersion,
	check func(*quan.Template, *quan.RulesVersion) error) (err error) {
	defer s.db.unavailable(&err)
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("add rules of template %d: %w", id, err)
	}
	defer tx.Rollback()
	t, err := queryTemplate(ctx, tx, shop, id)
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
		return fmt.Errorf("add rules of template %d: latest version: %w", id, err)
	}
	if err := check(t, last); err != nil {
		return err
	}
	add := *v
	add.TemplateID, add.Version = id, 1
	if last != nil {
		add.Version = last.Version + 1
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO template_rules (`+sqlrow.RulesColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		sqlrow.RulesVersionValues(&add, micros)...); err != nil {
		return fmt.Errorf("add rules of template %d: %w", id, translate(err))
	}
	if err := insertAudit(ctx, tx, &quan.AuditEntry{TemplateID: id, ShopNo: t.ShopNo, Actor: actor,
		Action: quan.ActionRules, At: add.CreatedAt, Changes: quan.RulesChanges(t, last, &add)}); err != nil {
		return fmt.Errorf("add rules of template %d: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("add rules of template %d: commit: %w", id, translate(err))
	}
	*v = add
	return nil
}

// RulesVersions implements quan.RulesStore.
func (s *Store) RulesVersions(ctx context.Context, template int64) (_ []quan.RulesVersion, err error) {
	defer s.db.unavailable(&err)
	return sqlrow.Query(ctx, s.db.read, fmt.Sprintf("rules of template %d", template), sqlrow.ScanRulesVersion,
		`SELECT `+sqlrow.RulesColumns+` FROM template_rules WHERE template_id = ? ORDER BY version`, template)
}
