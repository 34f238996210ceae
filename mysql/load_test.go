package mysql_test

import (
	"testing"

	"github.com/quanhq/quan/mysql"
	"github.com/quanhq/quan/quantest"
)

// TestTaskStoreByInsert runs the task store suite writing coupons by
// INSERT, as on a server that refuses LOAD DATA LOCAL INFILE.
func TestTaskStoreByInsert(t *testing.T) {
	quantest.TestTaskStore(t, func(t *testing.T) quantest.TaskStores {
		db := openDB(t)
		mysql.RefuseLoad(db)
		s := mysql.NewStore(db)
		return quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}
	})
}

// TestTaskNotificationsByInsert runs the distribution's notifications
// suite with coupons written by INSERT instead of LOAD DATA.
func TestTaskNotificationsByInsert(t *testing.T) {
	quantest.TestTaskNotifications(t, func(t *testing.T) quantest.NotifyStores {
		db := openDB(t)
		mysql.RefuseLoad(db)
		s := mysql.NewStore(db)
		return quantest.NotifyStores{TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, Notify: s, Contacts: s}
	})
}
