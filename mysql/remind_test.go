package mysql_test

import (
	"testing"

	"github.com/quanhq/quan/mysql"
	"github.com/quanhq/quan/quantest"
)

func TestReminderStore(t *testing.T) {
	quantest.TestReminderStore(t, func(t *testing.T) quantest.RemindStores {
		s := mysql.NewStore(openDB(t))
		return quantest.RemindStores{
			NotifyStores: quantest.NotifyStores{TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, Notify: s, Contacts: s},
			Wallet:       s,
			Reminders:    s,
		}
	})
}
