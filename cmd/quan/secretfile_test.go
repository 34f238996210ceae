package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quanhq/quan/cmd/quan/internal/cli"
	qhttp "github.com/quanhq/quan/http"
)

// TestSecretFiles: QUAN_JWT_SECRET_FILE and QUAN_STORE_FILE name files
// whose contents, trailing newline trimmed, are the values; a variable
// and its _FILE both set, a file missing or empty, are errors that name
// the variables and never show a secret.
func TestSecretFiles(t *testing.T) {
	write := func(t *testing.T, text string) string {
		t.Helper()
		p := filepath.Join(t.TempDir(), "secret")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const secret = "file-secret-0123456789abcdef0123456789"

	t.Run("JWTSecretAndStore", func(t *testing.T) {
		env := testEnv(t)
		env["QUAN_JWT_SECRET_FILE"] = write(t, secret+"\n")
		db := filepath.Join(t.TempDir(), "from-file.db")
		env["QUAN_STORE_FILE"] = write(t, "sqlite:"+db+"\r\n")
		tok := strings.TrimSpace(runQuan(t, env, "token --role merchant --shop 7"))
		tokens, err := qhttp.NewTokens([]byte(secret), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tokens.Verify(tok); err != nil {
			t.Fatalf("a token minted with QUAN_JWT_SECRET_FILE does not verify with the file's secret: %v", err)
		}
		srv := startServe(t, env)
		if srv.App().Config.StoreURL != "sqlite:"+db {
			t.Errorf("store %q, want the file's sqlite:%s", srv.App().Config.StoreURL, db)
		}
		if _, err := os.Stat(db); err != nil {
			t.Errorf("the store QUAN_STORE_FILE names was not opened: %v", err)
		}
		if _, err := os.Stat(filepath.Join(env["QUAN_DATA"], "jwt-secret")); err == nil {
			t.Error("a secret was generated in the data folder although QUAN_JWT_SECRET_FILE gives one")
		}
	})

	for _, tt := range []struct {
		name string
		env  map[string]string
		want string
		code int
	}{
		{"BothSet", map[string]string{"QUAN_CACHE": "mem:", "QUAN_CACHE_FILE": "/nonexistent"}, "both QUAN_CACHE and QUAN_CACHE_FILE are set", 2},
		{"Missing", map[string]string{"QUAN_JWT_SECRET_FILE": "/nonexistent/secret"}, "QUAN_JWT_SECRET_FILE=/nonexistent/secret: open /nonexistent/secret: no such file", 1},
		{"Empty", map[string]string{"QUAN_JWT_SECRET_FILE": "EMPTY"}, "QUAN_JWT_SECRET_FILE=", 2},
		{"BadValue", map[string]string{"QUAN_SHUTDOWN_TIMEOUT_FILE": "BAD"}, "QUAN_SHUTDOWN_TIMEOUT_FILE=", 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := testEnv(t)
			for k, v := range tt.env {
				switch v {
				case "EMPTY":
					v = write(t, "\n")
				case "BAD":
					v = write(t, "not-a-duration-"+secret)
				}
				env[k] = v
			}
			var out bytes.Buffer
			m := &Main{Stdout: &out, Stderr: &out, Getenv: func(k string) string { return env[k] }}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err := m.Run(ctx, []string{"serve"})
			if err == nil || !strings.Contains(err.Error(), tt.want) || cli.ExitCode(err) != tt.code {
				t.Fatalf("err %v (exit %d), want %q (exit %d)", err, cli.ExitCode(err), tt.want, tt.code)
			}
			if strings.Contains(err.Error()+out.String(), secret) {
				t.Errorf("the file's contents are shown: %v %s", err, out.String())
			}
		})
	}
}
