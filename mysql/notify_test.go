package mysql_test

import (
	"testing"

	"github.com/quanhq/quan/mysql"
	"github.com/quanhq/quan/quantest"
)

func TestTaskNotifications(t *testing.T) {
	quantest.TestTaskNotifications(t, func(t *testing.T) quantest.NotifyStores {
		s := mysql.NewStore(openDB(t))
		return quantest.NotifyStores{TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, Notify: s, Contacts: s}
	})
}

func TestNotificationStore(t *testing.T) {
	quantest.TestNotificationStore(t, func(t *testing.T) quantest.NotifyStores {
		s := mysql.NewStore(openDB(t))
		return quantest.NotifyStores{TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, Notify: s, Contacts: s, Secrets: s}
	})
}
