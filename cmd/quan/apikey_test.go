package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/cmd/quan/internal/app"
	"github.com/quanhq/quan/cmd/quan/internal/cli"
)

// TestAPIKeyCommand: `quan apikey create` prints the key alone on its
// last line, with the warning that it is shown once; the key then
// authenticates on the same data folder with its owner and scopes; list
// shows it without its secret; revoke makes it refused; bad flags are
// usage errors naming the flag.
func TestAPIKeyCommand(t *testing.T) {
	env := testEnv(t)
	run := func(args ...string) (string, error) {
		t.Helper()
		var out, errs bytes.Buffer
		m := &Main{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errs, Getenv: func(k string) string { return env[k] }}
		err := m.Run(context.Background(), append([]string{"apikey"}, args...))
		return out.String() + errs.String(), err
	}
	authenticate := func(key string) (quan.Identity, error) {
		t.Helper()
		a, err := app.Open(context.Background(), app.Config{DataDir: env["QUAN_DATA"], MetricsOff: true}, app.Local, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		return a.Keys.Authenticate(context.Background(), key)
	}

	out, err := run("create", "--name", "pos 门店 1001", "--scopes", "redeem, coupons:read", "--shop", "1001")
	if err != nil {
		t.Fatalf("apikey create: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	key := lines[len(lines)-1]
	if !strings.HasPrefix(key, "qk_") || strings.Contains(key, " ") || !strings.Contains(out, "shown this once") {
		t.Fatalf("apikey create printed:\n%s\nwant the warning, and the key alone on the last line", out)
	}
	id, err := authenticate(key)
	if err != nil || id.ShopNo != 1001 || !id.HasScope(quan.ScopeRedeem) || !id.HasScope(quan.ScopeCouponsRead) || id.HasScope(quan.ScopeSettlement) {
		t.Fatalf("the key authenticates as %+v, %v", id, err)
	}

	out, err = run("list")
	if err != nil || !strings.Contains(out, "pos 门店 1001") || !strings.Contains(out, "shop 1001") || !strings.Contains(out, key[:7]+"…") ||
		strings.Contains(out, key) || !strings.Contains(out, "1 keys") {
		t.Fatalf("apikey list: %v\n%s", err, out)
	}

	out, err = run("revoke", "1")
	if err != nil || !strings.Contains(out, "revoked service key 1") {
		t.Fatalf("apikey revoke: %v\n%s", err, out)
	}
	if _, err := authenticate(key); quan.ErrorCode(err) != quan.EUNAUTHORIZED {
		t.Errorf("a revoked key: %v, want unauthorized", err)
	}

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"NoScopes", []string{"create", "--name", "x"}, 2, "--scopes: name at least one scope"},
		{"BadScope", []string{"create", "--name", "x", "--scopes", "admin"}, 2, `--scopes: "admin" is not a scope`},
		{"NoName", []string{"create", "--scopes", "tasks"}, 2, "--name: must be 1 to 100 bytes"},
		{"ShopClaims", []string{"create", "--name", "x", "--scopes", "claims", "--shop", "3"}, 2, "--scopes: claims is the platform's"},
		{"RevokeNothing", []string{"revoke", "99"}, 1, "no service key 99"},
		{"RevokeNotAnID", []string{"revoke", "abc"}, 2, "want a key's id"},
		{"UnknownAction", []string{"delete", "1"}, 2, `unknown action "delete"`},
		{"NoAction", nil, 2, "want an action"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(tc.args...)
			if cli.ExitCode(err) != tc.code || !strings.Contains(out+errText(err), tc.want) {
				t.Errorf("apikey %q: exit %d, %v\n%s\nwant exit %d and %q", tc.args, cli.ExitCode(err), err, out, tc.code, tc.want)
			}
		})
	}
}
