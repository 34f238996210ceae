package mysql_test

import (
	"testing"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/mysql"
	"github.com/quanhq/quan/quantest"
)

func TestFactsStore(t *testing.T) {
	quantest.TestFactsStore(t, func(t *testing.T) quan.FactsStore {
		return mysql.NewStore(openDB(t))
	})
}

func TestRulesStore(t *testing.T) {
	quantest.TestRulesStore(t, func(t *testing.T) quantest.RulesStores {
		s := mysql.NewStore(openDB(t))
		return quantest.RulesStores{Templates: s, Rules: s}
	})
}
