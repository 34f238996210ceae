package mysql

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/quanhq/quan/internal/sqlrow"
)

// Migrations are numbered files, NNNN_what.sql, applied in number order
// (see sqlrow.Migrations).
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

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
//
// With noMigrate it applies nothing: a database lacking a migration is an
// error wrapping ErrMigrationsPending that names them.
func (db *DB) migrate(ctx context.Context, noMigrate bool) error {
	ms, err := sqlrow.Migrations(migrationFiles, "migrations")
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if noMigrate {
		applied, err := appliedMigrations(ctx, db.db)
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		return sqlrow.CheckApplied(ms, applied)
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
		if applied[m.Version] {
			continue
		}
		for i, s := range splitStatements(m.SQL) {
			if _, err := conn.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("migrate %s: statement %d: %w", m.Name, i+1, err)
			}
		}
		if _, err := conn.ExecContext(ctx,
			`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			m.Version, m.Name, time.Now().UTC()); err != nil {
			return fmt.Errorf("migrate %s: record: %w", m.Name, err)
		}
		db.logger.Info("applied migration", "version", m.Version, "name", m.Name)
	}
	return nil
}

// ErrMigrationsPending: see OpenOptions.
var ErrMigrationsPending = sqlrow.ErrMigrationsPending

// MigrationStatus is a migration and when it was applied.
type MigrationStatus = sqlrow.MigrationStatus

// Migrations returns every migration this build knows, in order, and when
// each was applied to the database dsn names (zero: pending). It changes
// nothing.
func Migrations(ctx context.Context, dsn string) ([]MigrationStatus, error) {
	ms, err := sqlrow.Migrations(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("open mysql: %w", err)
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("open mysql %s: %w", cfg.Addr, err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	applied, err := appliedMigrations(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("mysql %s/%s: %w", cfg.Addr, cfg.DBName, err)
	}
	return sqlrow.Statuses(ms, applied), nil
}

// appliedMigrations reads schema_migrations: none if it does not exist.
func appliedMigrations(ctx context.Context, db *sql.DB) (map[int]time.Time, error) {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables
		WHERE table_schema = DATABASE() AND table_name = 'schema_migrations'`).Scan(&n); err != nil {
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
		var at time.Time
		if err := rows.Scan(&v, &at); err != nil {
			return nil, fmt.Errorf("read applied migrations: %w", err)
		}
		applied[v] = at.UTC()
	}
	return applied, rows.Err()
}
