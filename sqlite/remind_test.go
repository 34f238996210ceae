package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/quanhq/quan/quantest"
	"github.com/quanhq/quan/sqlite"
)

func TestReminderStore(t *testing.T) {
	quantest.TestReminderStore(t, func(t *testing.T) quantest.RemindStores {
		s := sqlite.NewStore(openDB(t, filepath.Join(t.TempDir(), "quan.db")))
		return quantest.RemindStores{
			NotifyStores: quantest.NotifyStores{TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, Notify: s, Contacts: s},
			Wallet:       s,
			Reminders:    s,
		}
	})
}
