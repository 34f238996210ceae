package console_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

func TestAccountsAdmin(t *testing.T) {
	tc := newConsole(t)
	admin := tc.signedIn(t, "root")

	// Field errors next to their inputs; nothing created.
	status, _, body := admin.post("/console/accounts", url.Values{"name": {"bad name!"}, "role": {"merchant"}, "shopNo": {""}, "password": {"short"}})
	if status != http.StatusBadRequest {
		t.Fatalf("bad account: %d\n%s", status, body)
	}
	contains(t, body, `<span id="acct-name-err"><span class="field-error"`, `<span id="acct-shop-err"><span class="field-error"`,
		`<span id="acct-password-err"><span class="field-error"`, `value="bad name!"`)
	status, _, body = admin.post("/console/accounts", url.Values{"name": {"m1001"}, "role": {"merchant"}, "shopNo": {"1001"}, "password": {"long-enough-pw"}})
	if status != http.StatusConflict || !strings.Contains(body, "exists already") {
		t.Fatalf("taken name: %d\n%s", status, body)
	}

	status, _, body = admin.post("/console/accounts", url.Values{"name": {"ops2001"}, "role": {"merchant"}, "shopNo": {"2001"}, "password": {"ops2001-password"}})
	if status != http.StatusOK || !strings.Contains(body, "已创建账号 ops2001") {
		t.Fatalf("create: %d\n%s", status, body)
	}
	ops := tc.browser(t)
	if status, path, _ := ops.login("ops2001", "ops2001-password"); status != http.StatusOK || path != "/console/templates" {
		t.Fatalf("new account signs in: %d at %s", status, path)
	}
	id := regexp.MustCompile(`/console/accounts/(\d+)/disable"`).FindAllStringSubmatch(body, -1)
	var opsID string
	for _, m := range id {
		if strings.Contains(body[strings.Index(body, m[0])-600:strings.Index(body, m[0])], "ops2001") {
			opsID = m[1]
		}
	}
	if opsID == "" {
		t.Fatalf("no disable button of ops2001:\n%s", body)
	}

	// Disabling ends its session at once.
	if status, _, body := admin.post("/console/accounts/"+opsID+"/disable", nil); status != http.StatusOK || !strings.Contains(body, "已停用账号 ops2001") {
		t.Fatalf("disable: %d\n%s", status, body)
	}
	if _, path, _ := ops.get("/console/templates"); !strings.HasPrefix(path, "/console/login") {
		t.Fatalf("a disabled account's session still opens pages (%s)", path)
	}
	if status, _, _ := ops.login("ops2001", "ops2001-password"); status != http.StatusUnauthorized {
		t.Fatalf("disabled account signs in: %d", status)
	}
	admin.post("/console/accounts/"+opsID+"/enable", nil)
	if status, _, body := admin.post("/console/accounts/"+opsID+"/password", url.Values{"password": {"short"}}); status != http.StatusOK || !strings.Contains(body, `class="error"`) {
		t.Fatalf("short password: %d\n%s", status, body)
	}
	if status, _, body := admin.post("/console/accounts/"+opsID+"/password", url.Values{"password": {"a-brand-new-password"}}); status != http.StatusOK || !strings.Contains(body, "已重置 ops2001 的密码") {
		t.Fatalf("reset: %d\n%s", status, body)
	}
	if status, path, _ := ops.login("ops2001", "a-brand-new-password"); status != http.StatusOK || path != "/console/templates" {
		t.Fatalf("new password: %d at %s", status, path)
	}

	// Merchants manage no accounts.
	m := tc.signedIn(t, "m1001")
	if status, _, _ := m.get("/console/accounts"); status != http.StatusForbidden {
		t.Fatalf("merchant lists accounts: %d", status)
	}
	if status, _, _ := m.post("/console/accounts/"+opsID+"/disable", nil); status != http.StatusForbidden {
		t.Fatalf("merchant disables an account: %d", status)
	}
	if _, _, body := m.get("/console/templates"); strings.Contains(body, `href="/console/accounts"`) {
		t.Fatal("a merchant's menu links the account page")
	}
}
