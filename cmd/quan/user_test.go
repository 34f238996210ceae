package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/cmd/quan/internal/app"
	"github.com/quanhq/quan/cmd/quan/internal/cli"
)

// TestUserCommand: `quan user` adds an account with its password on
// stdin, refuses a name taken and flags that break the rules (naming the
// flag), lists the accounts, and disables, enables and sets the password
// of one, as a sign-in on the same data folder then finds.
func TestUserCommand(t *testing.T) {
	env := testEnv(t)
	run := func(stdin string, args ...string) (string, error) {
		t.Helper()
		var out, errs bytes.Buffer
		m := &Main{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errs, Getenv: func(k string) string { return env[k] }}
		err := m.Run(context.Background(), append([]string{"user"}, args...))
		return out.String() + errs.String(), err
	}
	signIn := func(name, pw string) error {
		t.Helper()
		a, err := app.Open(context.Background(), app.Config{DataDir: env["QUAN_DATA"], MetricsOff: true}, app.Local, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		_, _, _, err = a.Accounts.Login(context.Background(), name, pw, "")
		return err
	}

	out, err := run("first password\n", "add", "--role", "merchant", "--shop", "1001", "alice")
	if err != nil || !strings.Contains(out, `added merchant "alice" (id 1) of shop 1001`) {
		t.Fatalf("user add: %v\n%s", err, out)
	}
	if strings.Contains(out, "first password") {
		t.Errorf("the password was printed:\n%s", out)
	}
	if _, err := run("root password\r\n", "add", "root", "--role", "admin"); err != nil {
		t.Fatalf("user add an admin (CRLF line): %v", err)
	}
	if err := signIn("root", "root password"); err != nil {
		t.Errorf("sign in as root: %v", err)
	}

	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
		code  int
		want  string
	}{
		{"NameTaken", "other password\n", []string{"add", "--role", "merchant", "--shop", "1002", "ALICE"}, 1, `an account named "ALICE" exists already`},
		{"MerchantWithoutShop", "", []string{"add", "--role", "merchant", "bob"}, 2, "--shop: a merchant's account needs its shop"},
		{"AdminWithShop", "", []string{"add", "--role", "admin", "--shop", "5", "bob"}, 2, "--shop: an admin's account sees every shop"},
		{"UserRole", "", []string{"add", "--role", "user", "bob"}, 2, `--role: "user" is not a console role`},
		{"NoRole", "", []string{"add", "bob"}, 2, "--role: is required"},
		{"BadName", "", []string{"add", "--role", "admin", "bob smith"}, 2, "NAME: must hold only letters"},
		{"ShortPassword", "short\n", []string{"add", "--role", "admin", "bob"}, 2, "the password: must be at least 10 bytes"},
		{"NoPassword", "", []string{"add", "--role", "admin", "bob"}, 1, "no password"},
		{"NoName", "", []string{"add", "--role", "admin"}, 2, "want one NAME"},
		{"UnknownAction", "", []string{"remove", "alice"}, 2, `unknown action "remove"`},
		{"NoAction", "", nil, 2, "want an action"},
		{"DisableNobody", "", []string{"disable", "nobody"}, 1, `no account named "nobody"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(tc.stdin, tc.args...)
			if cli.ExitCode(err) != tc.code || !strings.Contains(out+errText(err), tc.want) {
				t.Errorf("user %q: exit %d, %v\n%s\nwant exit %d and %q", tc.args, cli.ExitCode(err), err, out, tc.code, tc.want)
			}
		})
	}

	out, err = run("", "list")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^1 +alice +merchant +1001 +active +\S+ +admin:command line$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^2 +root +admin +- +active `).MatchString(out) || !strings.Contains(out, "2 accounts") {
		t.Errorf("user list:\n%s", out)
	}
	if out, err := run("", "list", "--shop", "1001"); err != nil || strings.Contains(out, "root") || !strings.Contains(out, "1 accounts") {
		t.Errorf("user list --shop 1001: %v\n%s", err, out)
	}

	if out, err := run("", "disable", "Alice"); err != nil || !strings.Contains(out, `disabled "alice"`) {
		t.Fatalf("user disable: %v\n%s", err, out)
	}
	if out, _ := run("", "list"); !regexp.MustCompile(`(?m)^1 +alice +merchant +1001 +disabled `).MatchString(out) {
		t.Errorf("user list after disable:\n%s", out)
	}
	if err := signIn("alice", "first password"); quan.ErrorCode(err) != quan.EUNAUTHORIZED {
		t.Errorf("sign in to a disabled account: %v", err)
	}
	if out, err := run("", "enable", "alice"); err != nil || !strings.Contains(out, `enabled "alice"`) {
		t.Fatalf("user enable: %v\n%s", err, out)
	}
	if err := signIn("alice", "first password"); err != nil {
		t.Errorf("sign in after enable: %v", err)
	}

	if out, err := run("second password\n", "passwd", "alice"); err != nil || !strings.Contains(out, `set the password of "alice"`) {
		t.Fatalf("user passwd: %v\n%s", err, out)
	}
	if err := signIn("alice", "first password"); quan.ErrorCode(err) != quan.EUNAUTHORIZED {
		t.Errorf("sign in with the old password: %v", err)
	}
	if err := signIn("alice", "second password"); err != nil {
		t.Errorf("sign in with the new password: %v", err)
	}
	if _, err := run("short\n", "passwd", "alice"); cli.ExitCode(err) != 2 || !strings.Contains(errText(err), "the password: must be at least 10 bytes") {
		t.Errorf("user passwd with a short password: %v", err)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
