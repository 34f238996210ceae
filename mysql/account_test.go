package mysql_test

import (
	"testing"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/mysql"
	"github.com/quanhq/quan/quantest"
)

func TestAccountStore(t *testing.T) {
	quantest.TestAccountStore(t, func(t *testing.T) quan.AccountStore {
		return mysql.NewStore(openDB(t))
	})
}
