package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/quantest"
	"github.com/quanhq/quan/sqlite"
)

func TestFactsStore(t *testing.T) {
	quantest.TestFactsStore(t, func(t *testing.T) quan.FactsStore {
		return sqlite.NewStore(openDB(t, filepath.Join(t.TempDir(), "quan.db")))
	})
}

func TestRulesStore(t *testing.T) {
	quantest.TestRulesStore(t, func(t *testing.T) quantest.RulesStores {
		s := sqlite.NewStore(openDB(t, filepath.Join(t.TempDir(), "quan.db")))
		return quantest.RulesStores{Templates: s, Rules: s}
	})
}
