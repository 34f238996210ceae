package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/quantest"
	"github.com/quanhq/quan/sqlite"
)

func TestTemplateStore(t *testing.T) {
	quantest.TestTemplateStore(t, func(t *testing.T) quan.TemplateStore {
		return sqlite.NewStore(openDB(t, filepath.Join(t.TempDir(), "quan.db")))
	})
}

// openDB opens the database at path and closes it when the test ends.
func openDB(t testing.TB, path string) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(t.Context(), path, nil)
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

func TestDataSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "quan.db")
	quantest.TestReopen(t, func(t *testing.T) (quan.TemplateStore, func() error) {
		db, err := sqlite.Open(t.Context(), path, nil)
		if err != nil {
			t.Fatal(err)
		}
		return sqlite.NewStore(db), db.Close
	})
}

func TestTaskStore(t *testing.T) {
	quantest.TestTaskStore(t, func(t *testing.T) quantest.TaskStores {
		s := sqlite.NewStore(openDB(t, filepath.Join(t.TempDir(), "quan.db")))
		return quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}
	})
}

func TestClaimStore(t *testing.T) {
	quantest.TestClaimStore(t, func(t *testing.T) quantest.ClaimStores {
		s := sqlite.NewStore(openDB(t, filepath.Join(t.TempDir(), "quan.db")))
		return quantest.ClaimStores{TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, Claims: s}
	})
}

func TestWalletStore(t *testing.T) {
	quantest.TestWalletStore(t, func(t *testing.T) quantest.WalletStores {
		s := sqlite.NewStore(openDB(t, filepath.Join(t.TempDir(), "quan.db")))
		return quantest.WalletStores{
			ClaimStores: quantest.ClaimStores{TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, Claims: s},
			Wallet:      s,
		}
	})
}

func TestCodeStore(t *testing.T) {
	quantest.TestCodeStore(t, func(t *testing.T) quantest.CodeStores {
		s := sqlite.NewStore(openDB(t, filepath.Join(t.TempDir(), "quan.db")))
		return quantest.CodeStores{TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, Codes: s}
	})
}

func TestArchiver(t *testing.T) {
	quantest.TestArchiver(t, func(t *testing.T) quantest.WalletStores {
		s := sqlite.NewStore(openDB(t, filepath.Join(t.TempDir(), "quan.db")))
		return quantest.WalletStores{
			ClaimStores: quantest.ClaimStores{TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, Claims: s},
			Wallet:      s,
		}
	}, func(s quantest.WalletStores) quan.Archiver { return s.Wallet.(quan.Archiver) })
}

func BenchmarkIssueClaims(b *testing.B) {
	quantest.BenchmarkIssueClaims(b, func(b *testing.B) quantest.ClaimStores {
		s := sqlite.NewStore(openDB(b, filepath.Join(b.TempDir(), "quan.db")))
		return quantest.ClaimStores{TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, Claims: s}
	})
}

func TestCouponCodes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "quan.db")
	quantest.TestCouponCodes(t, func(ctx context.Context) (quantest.TaskStores, func() error, error) {
		db, err := sqlite.Open(ctx, path, nil)
		if err != nil {
			return quantest.TaskStores{}, nil, err
		}
		s := sqlite.NewStore(db)
		return quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, db.Close, nil
	})
}

func TestMonitorStore(t *testing.T) {
	quantest.TestMonitorStore(t, func(t *testing.T) quantest.MonitorStores {
		s := sqlite.NewStore(openDB(t, filepath.Join(t.TempDir(), "quan.db")))
		return quantest.MonitorStores{
			WalletStores: quantest.WalletStores{
				ClaimStores: quantest.ClaimStores{TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, Claims: s},
				Wallet:      s,
			},
			Monitor: s,
		}
	})
}

func TestTaskNotifications(t *testing.T) {
	quantest.TestTaskNotifications(t, func(t *testing.T) quantest.NotifyStores {
		s := sqlite.NewStore(openDB(t, filepath.Join(t.TempDir(), "quan.db")))
		return quantest.NotifyStores{TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, Notify: s, Contacts: s}
	})
}

func TestNotificationStore(t *testing.T) {
	quantest.TestNotificationStore(t, func(t *testing.T) quantest.NotifyStores {
		s := sqlite.NewStore(openDB(t, filepath.Join(t.TempDir(), "quan.db")))
		return quantest.NotifyStores{TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, Notify: s, Contacts: s, Secrets: s}
	})
}

func TestStatsStore(t *testing.T) {
	quantest.TestStatsStore(t, func(t *testing.T) quantest.StatsStores {
		s := sqlite.NewStore(openDB(t, filepath.Join(t.TempDir(), "quan.db")))
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
// distributions is kept whole.
func TestLongestValues(t *testing.T) {
	quantest.TestLongestValues(t, func(t *testing.T) quantest.StatsStores {
		s := sqlite.NewStore(openDB(t, filepath.Join(t.TempDir(), "quan.db")))
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
	quantest.BenchmarkImportContacts(b, func(b *testing.B) quan.ContactStore {
		return sqlite.NewStore(openDB(b, filepath.Join(b.TempDir(), "quan.db")))
	})
}

func TestShopStore(t *testing.T) {
	quantest.TestShopStore(t, func(t *testing.T) quantest.ShopStores {
		s := sqlite.NewStore(openDB(t, filepath.Join(t.TempDir(), "quan.db")))
		return quantest.ShopStores{ClaimStores: quantest.ClaimStores{TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, Claims: s}, Shops: s}
	})
}

// TestStoreUnavailable: a closed store fails every call unavailable.
func TestStoreUnavailable(t *testing.T) {
	quantest.TestStoreUnavailable(t, func(t *testing.T) (quan.Store, func()) {
		db := openDB(t, filepath.Join(t.TempDir(), "quan.db"))
		return sqlite.NewStore(db), func() { db.Close() }
	})
}

func TestAPIKeyStore(t *testing.T) {
	quantest.TestAPIKeyStore(t, func(t *testing.T) quan.APIKeyStore {
		return sqlite.NewStore(openDB(t, filepath.Join(t.TempDir(), "quan.db")))
	})
}

func TestRefundStore(t *testing.T) {
	quantest.TestRefundStore(t, func(t *testing.T) quantest.RefundStores {
		s := sqlite.NewStore(openDB(t, filepath.Join(t.TempDir(), "quan.db")))
		return quantest.RefundStores{WalletStores: quantest.WalletStores{ClaimStores: quantest.ClaimStores{TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, Claims: s}, Wallet: s}, Refunds: s}
	})
}

func TestEventStore(t *testing.T) {
	quantest.TestEventStore(t, func(t *testing.T) quantest.EventStores {
		s := sqlite.NewStore(openDB(t, filepath.Join(t.TempDir(), "quan.db")))
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
		s := sqlite.NewStore(openDB(t, filepath.Join(t.TempDir(), "quan.db")))
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
