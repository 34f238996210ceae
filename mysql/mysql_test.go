package mysql_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/testrig/fault"
	"github.com/quanhq/quan/mysql"
	"github.com/quanhq/quan/mysql/mysqltest"
	"github.com/quanhq/quan/quantest"
)

// newDatabase creates an empty database for t (see mysqltest) and returns
// its DSN in the driver's form.
func newDatabase(t testing.TB) string {
	t.Helper()
	return mysqltest.DSN(t)
}

// openDB opens a fresh database and closes it when t ends, before the
// database is dropped.
func openDB(t testing.TB) *mysql.DB {
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

	srv, _ := mysqltest.Server(t)
	var n, versions int
	if err := srv.QueryRowContext(t.Context(),
		"SELECT count(*), count(DISTINCT version) FROM "+cfg.DBName+".schema_migrations").Scan(&n, &versions); err != nil {
		t.Fatal(err)
	}
	files, err := os.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	if want := len(files); n != want || versions != want || want < 10 {
		t.Errorf("schema_migrations holds %d rows of %d versions, want %d of %d (one per migration)", n, versions, want, want)
	}
}

func TestOpenUnreachable(t *testing.T) {
	mysqltest.Server(t) // skips without a server to compare with
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := mysql.Open(ctx, "root@tcp(127.0.0.1:1)/quan?timeout=1s", nil); err == nil {
		t.Fatal("Open on a closed port succeeded")
	}
}

func TestDataSurvivesReopen(t *testing.T) {
	dsn := newDatabase(t)
	quantest.TestReopen(t, func(t *testing.T) (quan.TemplateStore, func() error) {
		db, err := mysql.Open(t.Context(), dsn, nil)
		if err != nil {
			t.Fatal(err)
		}
		return mysql.NewStore(db), db.Close
	})
}

func TestCouponCodes(t *testing.T) {
	dsn := newDatabase(t)
	quantest.TestCouponCodes(t, func(ctx context.Context) (quantest.TaskStores, func() error, error) {
		db, err := mysql.Open(ctx, dsn, nil)
		if err != nil {
			return quantest.TaskStores{}, nil, err
		}
		s := mysql.NewStore(db)
		return quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, db.Close, nil
	})
}

// TestClaimStore runs the claim conformance suite both ways coupon ids
// are had, from LAST_INSERT_ID (this server's settings must allow it:
// MariaDB's default) and read back, and both ways coupons are written,
// by LOAD DATA and by INSERT (as on a server with local_infile off).
func TestClaimStore(t *testing.T) {
	for _, tc := range []struct {
		name             string
		readBack, insert bool
	}{{"ConsecutiveIDs", false, false}, {"ReadBackIDs", true, false}, {"ByInsert", false, true}, {"ByInsertReadBackIDs", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			quantest.TestClaimStore(t, func(t *testing.T) quantest.ClaimStores {
				db := openDB(t)
				if !tc.readBack && !mysql.ConsecutiveIDs(db) {
					t.Fatal("the server does not hand out consecutive ids: innodb_autoinc_lock_mode 2, or an increment above 1?")
				}
				if tc.readBack {
					mysql.ReadBackIDs(db)
				}
				if tc.insert {
					mysql.RefuseLoad(db)
				}
				s := mysql.NewStore(db)
				return quantest.ClaimStores{TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, Claims: s}
			})
		})
	}
}

func TestWalletStore(t *testing.T) {
	quantest.TestWalletStore(t, func(t *testing.T) quantest.WalletStores {
		s := mysql.NewStore(openDB(t))
		return quantest.WalletStores{
			ClaimStores: quantest.ClaimStores{TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, Claims: s},
			Wallet:      s,
		}
	})
}

func TestCodeStore(t *testing.T) {
	quantest.TestCodeStore(t, func(t *testing.T) quantest.CodeStores {
		s := mysql.NewStore(openDB(t))
		return quantest.CodeStores{TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, Codes: s}
	})
}

func TestArchiver(t *testing.T) {
	quantest.TestArchiver(t, func(t *testing.T) quantest.WalletStores {
		s := mysql.NewStore(openDB(t))
		return quantest.WalletStores{
			ClaimStores: quantest.ClaimStores{TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, Claims: s},
			Wallet:      s,
		}
	}, func(s quantest.WalletStores) quan.Archiver { return s.Wallet.(quan.Archiver) })
}

func BenchmarkIssueClaims(b *testing.B) {
	quantest.BenchmarkIssueClaims(b, func(b *testing.B) quantest.ClaimStores {
		s := mysql.NewStore(openDB(b))
		return quantest.ClaimStores{TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, Claims: s}
	})
}

func TestMonitorStore(t *testing.T) {
	quantest.TestMonitorStore(t, func(t *testing.T) quantest.MonitorStores {
		s := mysql.NewStore(openDB(t))
		return quantest.MonitorStores{
			WalletStores: quantest.WalletStores{
				ClaimStores: quantest.ClaimStores{TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, Claims: s},
				Wallet:      s,
			},
			Monitor: s,
		}
	})
}

func TestStatsStore(t *testing.T) {
	quantest.TestStatsStore(t, func(t *testing.T) quantest.StatsStores {
		db := openDB(t)
		s := mysql.NewStore(db)
		if strings.HasSuffix(t.Name(), "/SwapCoupons/ConcurrentOrdersOfOneTemplate") {
			// Once a coupon's lock has made its template's rows, at least
			// its release (no hour) counts in the coupon's own UPDATE; most
			// swaps do, bar the first of each template and hour.
			t.Cleanup(func() {
				n := mysql.CountedSwaps(db)
				if n == 0 {
					t.Error("no swap written with its counters in one statement")
				}
				t.Logf("%d of the 60 swaps written with their counters in one statement", n)
			})
		}
		return quantest.StatsStores{
			WalletStores: quantest.WalletStores{
				ClaimStores: quantest.ClaimStores{TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, Claims: s},
				Wallet:      s,
			},
			Codes: s, Archiver: s, Stats: s,
		}
	})
}

// TestLongestValues: the longest valid text of the claims and the
// distributions fits MySQL's columns, and is kept whole.
func TestLongestValues(t *testing.T) {
	quantest.TestLongestValues(t, func(t *testing.T) quantest.StatsStores {
		s := mysql.NewStore(openDB(t))
		return quantest.StatsStores{
			WalletStores: quantest.WalletStores{
				ClaimStores: quantest.ClaimStores{TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, Claims: s},
				Wallet:      s,
			},
			Codes: s, Archiver: s, Stats: s,
		}
	})
}

func BenchmarkImportContacts(b *testing.B) {
	quantest.BenchmarkImportContacts(b, func(b *testing.B) quan.ContactStore { return mysql.NewStore(openDB(b)) })
}

func TestShopStore(t *testing.T) {
	quantest.TestShopStore(t, func(t *testing.T) quantest.ShopStores {
		s := mysql.NewStore(openDB(t))
		return quantest.ShopStores{ClaimStores: quantest.ClaimStores{TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, Claims: s}, Shops: s}
	})
}

// TestStoreUnavailable: every call fails unavailable on a store whose
// server went away (its connections cut, new ones refused: the server
// reached through a proxy the test cuts) and on a closed store.
func TestStoreUnavailable(t *testing.T) {
	t.Run("ServerGone", func(t *testing.T) {
		quantest.TestStoreUnavailable(t, func(t *testing.T) (quan.Store, func()) {
			cfg, err := mysql.ParseDSN(newDatabase(t))
			if err != nil {
				t.Fatal(err)
			}
			proxy := fault.NewProxy(t, cfg.Addr)
			cfg.Addr = proxy.Addr()
			db, err := mysql.Open(t.Context(), cfg.FormatDSN(), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return mysql.NewStore(db), proxy.Cut
		})
	})
	t.Run("Closed", func(t *testing.T) {
		quantest.TestStoreUnavailable(t, func(t *testing.T) (quan.Store, func()) {
			db := openDB(t)
			return mysql.NewStore(db), func() { db.Close() }
		})
	})
}

func TestAPIKeyStore(t *testing.T) {
	quantest.TestAPIKeyStore(t, func(t *testing.T) quan.APIKeyStore { return mysql.NewStore(openDB(t)) })
}

func TestRefundStore(t *testing.T) {
	quantest.TestRefundStore(t, func(t *testing.T) quantest.RefundStores {
		s := mysql.NewStore(openDB(t))
		return quantest.RefundStores{WalletStores: quantest.WalletStores{ClaimStores: quantest.ClaimStores{TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, Claims: s}, Wallet: s}, Refunds: s}
	})
}

func TestEventStore(t *testing.T) {
	quantest.TestEventStore(t, func(t *testing.T) quantest.EventStores {
		s := mysql.NewStore(openDB(t))
		return quantest.EventStores{
			WalletStores: quantest.WalletStores{
				ClaimStores: quantest.ClaimStores{TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, Claims: s},
				Wallet:      s,
			},
			Events: s,
		}
	})
}

func TestCouponSearcher(t *testing.T) {
	quantest.TestCouponSearcher(t, func(t *testing.T) quantest.SearchStores {
		s := mysql.NewStore(openDB(t))
		return quantest.SearchStores{
			EventStores: quantest.EventStores{
				WalletStores: quantest.WalletStores{
					ClaimStores: quantest.ClaimStores{TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, Claims: s},
					Wallet:      s,
				},
				Events: s,
			},
			Search: s,
		}
	})
}
