package sqlite_test

import (
	"path/filepath"
	"testing"
	"time"

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
	db, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := sqlite.NewStore(db)
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
	if err := db.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	s = sqlite.NewStore(openDB(t, path))
	got, err := s.Template(t.Context(), 7, tpl.ID)
	if err != nil {
		t.Fatalf("after reopening: %v", err)
	}
	if got.Name != "reopened" || got.Stock != 7 || !got.CreatedAt.Equal(tpl.CreatedAt) {
		t.Errorf("after reopening: %+v, want %+v with stock 7", got, tpl)
	}
	es, err := s.TemplateHistory(t.Context(), 7, tpl.ID)
	if err != nil || len(es) != 1 {
		t.Fatalf("history after reopening: %d entries, %v; want 1", len(es), err)
	}
	// The store takes the entry's time from the template, that is from the
	// service's clock.
	if !es[0].At.Equal(tpl.CreatedAt) {
		t.Errorf("create entry at %v, want the template's creation %v", es[0].At, tpl.CreatedAt)
	}
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
