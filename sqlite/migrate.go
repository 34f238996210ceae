package sqlite

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Migrations are numbered files, NNNN_what.sql, applied in number order.
// A migration once released is never edited: a change is a new file.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, p := range names {
		name := strings.TrimPrefix(p, "migrations/")
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v < 1 {
			return nil, fmt.Errorf("migration %s: the name must start with a positive number and '_'", name)
		}
		b, err := migrationFiles.ReadFile(p)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: name, sql: string(b)})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for i := 1; i < len(ms); i++ {
		if ms[i].version == ms[i-1].version {
			return nil, fmt.Errorf("migrations %s and %s have the same number", ms[i-1].name, ms[i].name)
		}
	}
	return ms, nil
}

// migrate applies, each in its own transaction, the migrations not yet
// recorded in schema_migrations. The check runs inside the transaction,
// under the write lock, so two processes opening the same new file do not
// both apply a migration.
func (db *DB) migrate(ctx context.Context) error {
	ms, err := migrations()
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
			return fmt.Errorf("migrate %s: %w", m.name, err)
		}
		if applied {
			db.logger.Info("applied migration", "version", m.version, "name", m.name)
		}
	}
	return nil
}

func (db *DB) apply(ctx context.Context, m migration) (applied bool, err error) {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()

	var n int
	if err := tx.QueryRowContext(ctx,
		`SELECT count(*) FROM schema_migrations WHERE version = ?`, m.version).Scan(&n); err != nil {
		return false, err
	}
	if n > 0 {
		return false, nil
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.version, m.name, time.Now().UnixMicro()); err != nil {
		return false, err
	}
	return true, tx.Commit()
}
