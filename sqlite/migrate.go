package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
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
//
// With noMigrate it applies nothing: a database lacking a migration is an
// error wrapping ErrMigrationsPending that names them.
func (db *DB) migrate(ctx context.Context, noMigrate bool) error {
	ms, err := sqlrow.Migrations(migrationFiles, "migrations")
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if noMigrate {
		applied, err := appliedMigrations(ctx, db.write)
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		return sqlrow.CheckApplied(ms, applied)
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

// ErrMigrationsPending: see OpenOptions.
var ErrMigrationsPending = sqlrow.ErrMigrationsPending

// MigrationStatus is a migration and when it was applied.
type MigrationStatus = sqlrow.MigrationStatus

// Migrations returns every migration this build knows, in order, and when
// each was applied to the database file at path (zero: pending). It
// changes nothing; a file that does not exist has every migration
// pending.
func Migrations(ctx context.Context, path string) ([]MigrationStatus, error) {
	ms, err := sqlrow.Migrations(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return sqlrow.Statuses(ms, nil), nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", dsn(abs, url.Values{"_pragma": {fmt.Sprintf("busy_timeout(%d)", busyTimeoutMS), "query_only(1)"}}))
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	defer db.Close()
	applied, err := appliedMigrations(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("sqlite %s: %w", path, err)
	}
	return sqlrow.Statuses(ms, applied), nil
}

// appliedMigrations reads schema_migrations: none if it does not exist.
func appliedMigrations(ctx context.Context, db *sql.DB) (map[int]time.Time, error) {
	var n int
	if err := db.QueryRowContext(ctx,
		`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`).Scan(&n); err != nil {
		return nil, fmt.Errorf("read applied migrations: %w", err)
	}
	applied := map[int]time.Time{}
	if n == 0 {
		return applied, nil
	}
	rows, err := db.QueryContext(ctx, `SELECT version, applied_at FROM schema_migrations`)
	if err != nil {
		return nil, fmt.Errorf("read applied migrations: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var v int
		var at int64
		if err := rows.Scan(&v, &at); err != nil {
			return nil, fmt.Errorf("read applied migrations: %w", err)
		}
		applied[v] = time.UnixMicro(at).UTC()
	}
	return applied, rows.Err()
}
