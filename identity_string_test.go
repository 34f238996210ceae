package quan_test

import (
	"strings"
	"testing"

	"github.com/quanhq/quan"
)

func TestIdentityString(t *testing.T) {
	long := strings.Repeat("名", 100)
	for _, c := range []struct {
		id   quan.Identity
		want string
	}{
		{quan.Identity{Role: quan.RoleMerchant, ShopNo: 1001}, "merchant:1001"},
		{quan.Identity{Role: quan.RoleMerchant, ShopNo: 1001, Subject: "merchant:1001"}, "merchant:1001"},
		{quan.Identity{Role: quan.RoleMerchant, ShopNo: 1001, Subject: "alice"}, "merchant:1001 (alice)"},
		{quan.Identity{Role: quan.RoleMerchant, ShopNo: 7, Subject: long}, "merchant:7 (" + strings.Repeat("名", 64) + ")"},
		{quan.Identity{Role: quan.RoleUser, UserID: 42, Subject: "x"}, "user:42"},
		{quan.Identity{Role: quan.RoleAdmin, Subject: "root"}, "admin:root"},
	} {
		if got := c.id.String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.id, got, c.want)
		}
	}
}
