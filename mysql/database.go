package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// CreateDatabase creates the empty database name on the server dsn names,
// connecting to dsn's own database (which must exist) to do it, and
// returns dsn naming the new database instead, in dsn's form (driver or
// mysql:// URL). name may hold ASCII letters, digits and '_' only. For
// benchmarks and tests that want a database of their own; DropDatabase
// removes it.
func CreateDatabase(ctx context.Context, dsn, name string) (string, error) {
	if name == "" || strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != "" {
		return "", fmt.Errorf("create database %q: use letters, digits and '_'", name)
	}
	renamed, err := withDatabase(dsn, name)
	if err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	if err := adminExec(ctx, dsn, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4"); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return renamed, nil
}

// DropDatabase drops the database dsn names, with everything in it.
func DropDatabase(ctx context.Context, dsn string) error {
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return fmt.Errorf("drop database: %w", err)
	}
	if err := adminExec(ctx, dsn, "DROP DATABASE IF EXISTS `"+strings.ReplaceAll(cfg.DBName, "`", "``")+"`"); err != nil {
		return fmt.Errorf("drop database %s: %w", cfg.DBName, err)
	}
	return nil
}

// adminExec runs one statement on a connection of its own to dsn.
func adminExec(ctx context.Context, dsn, stmt string) error {
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return err
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	_, err = db.ExecContext(ctx, stmt)
	return err
}

// withDatabase returns dsn with its database replaced by name.
func withDatabase(dsn, name string) (string, error) {
	if strings.HasPrefix(dsn, "mysql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("parse mysql URL: %w", err)
		}
		u.Path, u.RawPath = "/"+name, ""
		return u.String(), nil
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "", err
	}
	cfg.DBName = name
	return cfg.FormatDSN(), nil
}
