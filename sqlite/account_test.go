package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/quantest"
	"github.com/quanhq/quan/sqlite"
)

func TestAccountStore(t *testing.T) {
	quantest.TestAccountStore(t, func(t *testing.T) quan.AccountStore {
		return sqlite.NewStore(openDB(t, filepath.Join(t.TempDir(), "quan.db")))
	})
}
