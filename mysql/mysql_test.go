package mysql_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"
	"github.com/quanhq/quan"
	"github.com/quanhq/quan/mysql"
	"github.com/quanhq/quan/quantest"
)

// The tests run against a real server named by QUAN_TEST_MYSQL, in the
// driver's form or as a mysql:// URL:
//
//	QUAN_TEST_MYSQL='root@tcp(127.0.0.1:3306)/test' go test -race ./mysql/
//
// Without it they skip, so that go test ./... passes on a bare machine;
// with it, an unreachable server fails them (CI sets it). Every store a
// test makes gets a database of its own, quan_test_<random>, dropped when
// the test ends, so tests and runs may share the server.
const envDSN = "QUAN_TEST_MYSQL"

var admin struct {
	once sync.Once
	db   *sql.DB
	cfg  *driver.Config
	err  error
}

// server returns a pool on the test server, for creating and dropping
// databases, and the configuration it was opened with.
func server(t *testing.T) (*sql.DB, *driver.Config) {
	t.Helper()
	dsn := os.Getenv(envDSN)
	if dsn == "" {
		t.Skipf("set %s to run the MySQL tests, e.g. %s='root@tcp(127.0.0.1:3306)/test' go test ./mysql/", envDSN, envDSN)
	}
	admin.once.Do(func() {
		admin.cfg, admin.err = mysql.ParseDSN(dsn)
		if admin.err != nil {
			return
		}
		var c *driver.Config = admin.cfg.Clone()
		connector, err := driver.NewConnector(c)
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
		t.Fatalf("%s=%q: the server is unreachable: %v", envDSN, dsn, admin.err)
	}
	return admin.db, admin.cfg
}

// newDatabase creates an empty database for t, dropped when t ends, and
// returns its DSN in the driver's form.
func newDatabase(t *testing.T) string {
	t.Helper()
	srv, cfg := server(t)
	var b [6]byte
	rand.Read(b[:])
	name := "quan_test_" + hex.EncodeToString(b[:])
	if _, err := srv.ExecContext(t.Context(), "CREATE DATABASE "+name+" CHARACTER SET utf8mb4"); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		if _, err := srv.ExecContext(context.Background(), "DROP DATABASE "+name); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	c := cfg.Clone()
	c.DBName = name
	return c.FormatDSN()
}

// openDB opens a fresh database and closes it when t ends, before the
// database is dropped.
func openDB(t *testing.T) *mysql.DB {
	t.Helper()
	dsn := newDatabase(t)
	db, err := mysql.Open(t.Context(), dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	})
	return db
}

func TestTemplateStore(t *testing.T) {
	quantest.TestTemplateStore(t, func(t *testing.T) quan.TemplateStore {
		return mysql.NewStore(openDB(t))
	})
}

func TestTaskStore(t *testing.T) {
	quantest.TestTaskStore(t, func(t *testing.T) quantest.TaskStores {
		s := mysql.NewStore(openDB(t))
		return quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}
	})
}

func TestParseDSN(t *testing.T) {
	for _, c := range []struct {
		dsn                    string
		user, pass, addr, name string
		timeout                time.Duration
	}{
		{"root@tcp(127.0.0.1:3306)/quan", "root", "", "127.0.0.1:3306", "quan", 0},
		{"mysql://root@127.0.0.1:3306/quan", "root", "", "127.0.0.1:3306", "quan", 0},
		{"mysql://quan:p%40ss%3Aw0rd@db.internal/coupons?timeout=5s", "quan", "p@ss:w0rd", "db.internal:3306", "coupons", 5 * time.Second},
		{"mysql://u:pw@[::1]:3307/q", "u", "pw", "[::1]:3307", "q", 0},
	} {
		cfg, err := mysql.ParseDSN(c.dsn)
		if err != nil {
			t.Errorf("ParseDSN(%q): %v", c.dsn, err)
			continue
		}
		if cfg.User != c.user || cfg.Passwd != c.pass || cfg.Addr != c.addr || cfg.DBName != c.name || cfg.Timeout != c.timeout {
			t.Errorf("ParseDSN(%q) = user %q pass %q addr %q db %q timeout %v; want %q %q %q %q %v",
				c.dsn, cfg.User, cfg.Passwd, cfg.Addr, cfg.DBName, cfg.Timeout, c.user, c.pass, c.addr, c.name, c.timeout)
		}
		if !cfg.ParseTime || cfg.Loc != time.UTC || !cfg.InterpolateParams || cfg.MultiStatements {
			t.Errorf("ParseDSN(%q): parseTime %v, loc %v, interpolateParams %v, multiStatements %v; want true, UTC, true, false",
				c.dsn, cfg.ParseTime, cfg.Loc, cfg.InterpolateParams, cfg.MultiStatements)
		}
	}
	for _, dsn := range []string{"root@tcp(127.0.0.1:3306)/", "mysql://root@127.0.0.1:3306", "mysql://%zz"} {
		if _, err := mysql.ParseDSN(dsn); err == nil {
			t.Errorf("ParseDSN(%q) = nil error, want one", dsn)
		}
	}
}

// TestOpenTwiceAtOnce starts two processes' worth of Opens on one new
// database at the same time: the migration lock lets each migration run
// once, and both end up with the whole schema.
func TestOpenTwiceAtOnce(t *testing.T) {
	dsn := newDatabase(t)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	// The URL form, so that it is exercised against a server too.
	url := "mysql://" + cfg.User + ":" + cfg.Passwd + "@" + cfg.Addr + "/" + cfg.DBName
	var (
		wg   sync.WaitGroup
		dbs  [4]*mysql.DB
		errs [4]error
	)
	for i := range dbs {
		wg.Go(func() {
			d := dsn
			if i%2 == 1 {
				d = url
			}
			dbs[i], errs[i] = mysql.Open(t.Context(), d, nil)
		})
	}
	wg.Wait()
	for i, db := range dbs {
		if errs[i] != nil {
			t.Fatalf("Open %d: %v", i, errs[i])
		}
		if err := db.Ping(t.Context()); err != nil {
			t.Error(err)
		}
		if err := db.Close(); err != nil {
			t.Error(err)
		}
		if err := db.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	}

	srv, _ := server(t)
	var n, versions int
	if err := srv.QueryRowContext(t.Context(),
		"SELECT count(*), count(DISTINCT version) FROM "+cfg.DBName+".schema_migrations").Scan(&n, &versions); err != nil {
		t.Fatal(err)
	}
	if n != 2 || versions != 2 {
		t.Errorf("schema_migrations holds %d rows of %d versions, want 2 of 2", n, versions)
	}
}

func TestOpenUnreachable(t *testing.T) {
	server(t) // skips without a server to compare with
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := mysql.Open(ctx, "root@tcp(127.0.0.1:1)/quan?timeout=1s", nil); err == nil {
		t.Fatal("Open on a closed port succeeded")
	}
}

func TestDataSurvivesReopen(t *testing.T) {
	dsn := newDatabase(t)
	db, err := mysql.Open(t.Context(), dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := mysql.NewStore(db)
	now := time.Date(2030, 1, 2, 3, 4, 5, 678901234, time.UTC)
	svc := &quan.TemplateService{Store: s, Now: func() time.Time { return now }}
	merchant := quan.Identity{Role: quan.RoleMerchant, ShopNo: 7}
	tpl, err := svc.Create(t.Context(), merchant, quan.NewTemplate{
		TemplateSpec: quan.TemplateSpec{
			Name:         "reopened",
			Kind:         quan.KindDirect,
			Rule:         quan.Rule{Amount: 300},
			Source:       quan.SourceShop,
			Scope:        quan.Scope{Kind: quan.ScopeAll},
			IssueStart:   now,
			IssueEnd:     now.AddDate(0, 1, 0),
			Validity:     quan.Validity{Kind: quan.ValidRelative, Hours: 24},
			PerUserLimit: 1,
		},
		Stock: 10,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AdjustStock(t.Context(), tpl.ID, -3); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = mysql.Open(t.Context(), dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s = mysql.NewStore(db)
	got, err := s.Template(t.Context(), 7, tpl.ID)
	if err != nil {
		t.Fatalf("after reopening: %v", err)
	}
	if got.Name != "reopened" || got.Stock != 7 || !got.CreatedAt.Equal(tpl.CreatedAt) {
		t.Errorf("after reopening: %+v, want %+v with stock 7", got, tpl)
	}
	if _, err := s.Template(t.Context(), 8, tpl.ID); !errors.Is(err, quan.ErrNotFound) {
		t.Errorf("another shop's template: %v, want ErrNotFound", err)
	}
}
