package mysql

import (
	"context"
	"database/sql"
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
	stmts   []string
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
		ms = append(ms, migration{version: v, name: name, stmts: splitStatements(string(b))})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for i := 1; i < len(ms); i++ {
		if ms[i].version == ms[i-1].version {
			return nil, fmt.Errorf("migrations %s and %s have the same number", ms[i-1].name, ms[i].name)
		}
	}
	return ms, nil
}

// splitStatements cuts a migration into statements at each line that ends
// with a semicolon, so that the connection never needs multiStatements.
// Comment-only statements are dropped.
func splitStatements(src string) []string {
	var stmts []string
	var cur strings.Builder
	flush := func() {
		s := strings.TrimSpace(cur.String())
		cur.Reset()
		for _, line := range strings.Split(s, "\n") {
			if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "--") {
				stmts = append(stmts, strings.TrimSuffix(s, ";"))
				return
			}
		}
	}
	for _, line := range strings.SplitAfter(src, "\n") {
		cur.WriteString(line)
		if strings.HasSuffix(strings.TrimSpace(line), ";") {
			flush()
		}
	}
	flush()
	return stmts
}

// migrateLockSeconds is how long Open waits for another process that is
// migrating the same database.
const migrateLockSeconds = 60

// migrate applies the migrations not yet recorded in schema_migrations.
//
// MySQL commits each DDL statement on its own, so a migration cannot run
// in a transaction; instead every process migrating a database first
// takes a named server lock (GET_LOCK), on one connection, and reads
// schema_migrations under it: two processes starting at once apply each
// migration once, one after the other. A migration that fails halfway
// leaves the statements before the failure applied and is not recorded;
// each migration should therefore be a few statements that can be
// repaired by hand.
func (db *DB) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	conn, err := db.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Close()

	// Lock names are server-wide, at most 64 characters: one per database.
	const lockName = `LEFT(CONCAT('quan.migrate.', DATABASE()), 64)`
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, `SELECT GET_LOCK(`+lockName+`, ?)`, migrateLockSeconds).Scan(&got); err != nil {
		return fmt.Errorf("migrate: lock: %w", err)
	}
	if !got.Valid || got.Int64 != 1 {
		return fmt.Errorf("migrate: another process held the migration lock for %d s", migrateLockSeconds)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `DO RELEASE_LOCK(`+lockName+`)`)

	if _, err := conn.ExecContext(ctx, `
		CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INT          NOT NULL PRIMARY KEY,
			name       VARCHAR(255) NOT NULL,
			applied_at DATETIME(6)  NOT NULL
		) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin`); err != nil {
		return fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	applied := map[int]bool{}
	rows, err := conn.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return fmt.Errorf("migrate: %w", err)
		}
		applied[v] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}

	for _, m := range ms {
		if applied[m.version] {
			continue
		}
		for i, s := range m.stmts {
			if _, err := conn.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("migrate %s: statement %d: %w", m.name, i+1, err)
			}
		}
		if _, err := conn.ExecContext(ctx,
			`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			m.version, m.name, time.Now().UTC()); err != nil {
			return fmt.Errorf("migrate %s: record: %w", m.name, err)
		}
		db.logger.Info("applied migration", "version", m.version, "name", m.name)
	}
	return nil
}
