package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/quanhq/quan/internal/sqlrow"
	"github.com/quanhq/quan/mysql"
	"github.com/quanhq/quan/sqlite"
)

// Migration is one schema migration of the store and when it was applied
// (zero AppliedAt: pending).
type Migration = sqlrow.MigrationStatus

// migrateHint adds to an error of opening a store with migrations pending
// under Config.NoMigrate how to apply them.
func migrateHint(cfg Config, err error) error {
	if !errors.Is(err, sqlrow.ErrMigrationsPending) {
		return err
	}
	return fmt.Errorf("%w; apply them with: quan migrate up --store %s (or start without --migrate=false)", err, Redact(cfg.StoreURL))
}

// Migrations returns every migration of the store cfg names, in order,
// and when each was applied. It changes nothing.
func Migrations(ctx context.Context, cfg Config) ([]Migration, error) {
	cfg = cfg.withDefaults()
	scheme, rest, _ := strings.Cut(cfg.StoreURL, ":")
	switch scheme {
	case StoreSQLite:
		return sqlite.Migrations(ctx, sqlitePath(cfg.DataDir, rest))
	case StoreMySQL:
		return mysql.Migrations(ctx, cfg.StoreURL)
	}
	return nil, fmt.Errorf("--store %q: unknown scheme %q (use sqlite: or mysql://)", Redact(cfg.StoreURL), scheme)
}

// MigrateUp applies the pending migrations of the store cfg names, as
// opening it does, and returns the migrations after.
func MigrateUp(ctx context.Context, cfg Config, logger *slog.Logger) ([]Migration, error) {
	cfg = cfg.withDefaults()
	cfg.NoMigrate = false
	scheme, rest, _ := strings.Cut(cfg.StoreURL, ":")
	switch scheme {
	case StoreSQLite:
		path := sqlitePath(cfg.DataDir, rest)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("create data folder: %w", err)
		}
		db, err := sqlite.Open(ctx, path, logger)
		if err != nil {
			return nil, fmt.Errorf("migrate the sqlite store: %w", err)
		}
		db.Close()
	case StoreMySQL:
		db, err := mysql.Open(ctx, cfg.StoreURL, logger)
		if err != nil {
			return nil, fmt.Errorf("migrate the mysql store: %w", err)
		}
		db.Close()
	default:
		return nil, fmt.Errorf("--store %q: unknown scheme %q (use sqlite: or mysql://)", Redact(cfg.StoreURL), scheme)
	}
	return Migrations(ctx, cfg)
}
