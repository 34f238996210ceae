package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/quanhq/quan/cmd/quan/internal/cli"
	"github.com/quanhq/quan/mysql/mysqltest"
)

// TestMigrate: on a new store, `quan migrate status` lists every
// migration pending; serve --migrate=false refuses to start, naming them
// and `quan migrate up`; `quan migrate up` applies them, status lists them
// applied, and serve --migrate=false then starts. On SQLite, and on MySQL
// with QUAN_TEST_MYSQL (CI sets it).
func TestMigrate(t *testing.T) {
	stores := map[string]func(t *testing.T) string{
		"SQLite": func(t *testing.T) string { return "sqlite:" },
		"MySQL":  func(t *testing.T) string { return mysqltest.URL(t) }, // skips without QUAN_TEST_MYSQL
	}
	for name, store := range stores {
		t.Run(name, func(t *testing.T) {
			env := testEnv(t)
			env["QUAN_STORE"] = store(t)
			run := func(args ...string) (string, error) {
				var out, errs bytes.Buffer
				m := &Main{Stdout: &out, Stderr: &errs, Getenv: func(k string) string { return env[k] }}
				err := m.Run(context.Background(), args)
				return out.String(), err
			}
			status := func() string {
				t.Helper()
				out, err := run("migrate", "status")
				if err != nil {
					t.Fatalf("migrate status: %v", err)
				}
				return out
			}
			out := status()
			m := regexp.MustCompile(`(?m)^0 applied, (\d+) pending$`).FindStringSubmatch(out)
			if m == nil || m[1] == "0" || !regexp.MustCompile(`0001_templates\.sql +pending`).MatchString(out) {
				t.Fatalf("status of a new store:\n%s", out)
			}
			pending := m[1]

			env["QUAN_MIGRATE"] = "false"
			var logs bytes.Buffer
			cmd := &ServeCommand{Main: &Main{Stdout: &logs, Stderr: &logs, Getenv: func(k string) string { return env[k] }}}
			if err := cmd.ParseFlags(nil); err != nil {
				t.Fatal(err)
			}
			err := cmd.Open(context.Background())
			cmd.Close()
			if err == nil || !strings.Contains(err.Error(), "migrations pending: "+pending+" (0001_templates.sql,") ||
				!strings.Contains(err.Error(), "quan migrate up") || cli.ExitCode(err) != 1 {
				t.Fatalf("serve --migrate=false on a new store: %v", err)
			}
			if out := status(); !strings.Contains(out, "0 applied, "+pending+" pending") {
				t.Fatalf("serve --migrate=false applied something:\n%s", out)
			}

			out, err = run("migrate", "up")
			if err != nil {
				t.Fatalf("migrate up: %v", err)
			}
			if !strings.Contains(out, "applied 0001_templates.sql\n") || !strings.Contains(out, pending+" migrations applied") {
				t.Fatalf("migrate up:\n%s", out)
			}
			if out := status(); !strings.Contains(out, pending+" applied, 0 pending") || regexp.MustCompile(`\.sql +pending`).MatchString(out) {
				t.Fatalf("status after up:\n%s", out)
			}
			if out, err := run("migrate", "up"); err != nil || !strings.Contains(out, "0 migrations applied") {
				t.Fatalf("migrate up again: %v\n%s", err, out)
			}
			srv := startServe(t, env) // --migrate=false, nothing pending
			if srv.URL() == "" {
				t.Fatal("serve did not start")
			}
		})
	}
	t.Run("Usage", func(t *testing.T) {
		env := testEnv(t)
		var out bytes.Buffer
		err := (&Main{Stdout: &out, Stderr: &out, Getenv: func(k string) string { return env[k] }}).Run(context.Background(), []string{"migrate", "down"})
		if cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), `unknown action "down"`) {
			t.Fatalf("migrate down: %v", err)
		}
	})
}
