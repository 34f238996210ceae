// Package mysqltest gives tests a fresh database on the MySQL server named
// by QUAN_TEST_MYSQL, in the driver's form or as a mysql:// URL:
//
//	QUAN_TEST_MYSQL='root@tcp(127.0.0.1:3306)/test' go test ./...
//
// Without it the tests skip, so that go test ./... passes on a bare
// machine; with it, an unreachable server fails them (CI sets it). Every
// database is quan_test_<random>, dropped when the test ends, so tests and
// runs may share the server.
package mysqltest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"sync"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"
	"github.com/quanhq/quan/internal/integration"
	"github.com/quanhq/quan/mysql"
)

// EnvDSN names the variable that holds the test server's address.
const EnvDSN = integration.MySQL

var admin struct {
	once sync.Once
	db   *sql.DB
	cfg  *driver.Config
	err  error
}

// Server returns a pool on the test server (for creating, inspecting and
// dropping databases) and the configuration it was opened with. It skips
// t when QUAN_TEST_MYSQL is unset and fails it when the server is down.
func Server(t testing.TB) (*sql.DB, *driver.Config) {
	t.Helper()
	dsn := integration.Need(t, EnvDSN)[0]
	admin.once.Do(func() {
		admin.cfg, admin.err = mysql.ParseDSN(dsn)
		if admin.err != nil {
			return
		}
		connector, err := driver.NewConnector(admin.cfg.Clone())
		if err != nil {
			admin.err = err
			return
		}
		admin.db = sql.OpenDB(connector)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		admin.err = admin.db.PingContext(ctx)
	})
	if admin.err != nil {
		t.Fatalf("%s=%q: the server is unreachable: %v", EnvDSN, dsn, admin.err)
	}
	return admin.db, admin.cfg
}

// database creates an empty database for t, dropped when t ends.
func database(t testing.TB) *driver.Config {
	t.Helper()
	srv, cfg := Server(t)
	var b [6]byte
	rand.Read(b[:])
	name := "quan_test_" + hex.EncodeToString(b[:])
	if _, err := srv.ExecContext(context.Background(), "CREATE DATABASE "+name+" CHARACTER SET utf8mb4"); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		if _, err := srv.ExecContext(context.Background(), "DROP DATABASE "+name); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	c := cfg.Clone()
	c.DBName = name
	return c
}

// DSN returns a fresh database's address in the driver's form.
func DSN(t testing.TB) string {
	t.Helper()
	return database(t).FormatDSN()
}

// URL returns a fresh database's address as a mysql:// URL, the form of
// quan's --store flag.
func URL(t testing.TB) string {
	t.Helper()
	c := database(t)
	user := c.User
	if c.Passwd != "" {
		user += ":" + c.Passwd
	}
	return fmt.Sprintf("mysql://%s@%s/%s", user, c.Addr, c.DBName)
}
