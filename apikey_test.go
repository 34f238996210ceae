package quan_test

import (
	"slices"
	"testing"

	"github.com/quanhq/quan"
)

// TestScopeSetBits: every scope has its own bit, in AllScopes' order.
func TestScopeSetBits(t *testing.T) {
	all := quan.AllScopes()
	for _, s := range all {
		set := quan.NewScopeSet(s)
		if !set.Has(s) || len(set.List()) != 1 {
			t.Errorf("set of %s: %v", s, set.List())
		}
	}
	if got := quan.NewScopeSet(all...).List(); !slices.Equal(got, all) {
		t.Errorf("set of all: %v, want %v", got, all)
	}
	if quan.NewScopeSet(quan.ScopeRedeem).Has(quan.ScopeSettlement) {
		t.Error("a redeem key has settlement")
	}
}

func TestParseScopes(t *testing.T) {
	got, err := quan.ParseScopes("scopes", " redeem,settlement,redeem ")
	if err != nil || !slices.Equal(got, []quan.KeyScope{quan.ScopeRedeem, quan.ScopeSettlement}) {
		t.Errorf("ParseScopes: %v, %v", got, err)
	}
	for _, bad := range []string{"", ",", "settlement,admin"} {
		if _, err := quan.ParseScopes("scopes", bad); quan.ErrorCode(err) != quan.EINVALID {
			t.Errorf("ParseScopes(%q): %v, want invalid", bad, err)
		}
	}
}
