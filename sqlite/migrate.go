package sqlite

import (
	"context"
	"embed"
	"fmt"
	"time"

	"github.com/quanhq/quan/internal/sqlrow"
)

// Migrations are numbered files, NNNN_what.sql, applied in number order
// (see sqlrow.Migrations).
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrate applies, each in its own transaction, the migrations not yet
// recorded in schema_migrations. The check runs inside the transaction,
// under the write lock, so two processes opening the same new file do not
// both apply a migration.
func (db *DB) migrate(ctx context.Context) error {
	ms, err := sqlrow.Migrations(migrationFiles, "migrations")
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if _, err := db.write.ExecContext(ctx, `
		CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER PRIMARY KEY,
			name       TEXT    NOT NULL,
			applied_at INTEGER NOT NULL -- Unix microseconds, UTC
		) STRICT`); err != nil {
		return fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	for _, m := range ms {
		applied, err := db.apply(ctx, m)
		if err != nil {
			return fmt.Errorf("migrate %s: %w", m.Name, err)
		}
		if applied {
			db.logger.Info("applied migration", "version", m.Version, "name", m.Name)
		}
	}
	return nil
}

func (db *DB) apply(ctx context.Context, m sqlrow.Migration) (applied bool, err error) {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()

	var n int
	if err := tx.QueryRowContext(ctx,
		`SELECT count(*) FROM schema_migrations WHERE version = ?`, m.Version).Scan(&n); err != nil {
		return false, err
	}
	if n > 0 {
		return false, nil
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.Version, m.Name, time.Now().UnixMicro()); err != nil {
		return false, err
	}
	return true, tx.Commit()
}
