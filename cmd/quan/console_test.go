package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestConsoleAsReadmeSays tries the console as the README's two commands
// set it up: quan serve, and quan user add with the password on stdin;
// then signs in with a browser's cookies and creates a template.
func TestConsoleAsReadmeSays(t *testing.T) {
	env := testEnv(t)
	srv := startServe(t, env)
	var out bytes.Buffer
	m := &Main{Stdin: strings.NewReader("merchant-1001-pw\n"), Stdout: &out, Stderr: &out, Getenv: func(k string) string { return env[k] }}
	if err := m.Run(context.Background(), []string{"user", "add", "--role", "merchant", "--shop", "1001", "ops"}); err != nil {
		t.Fatalf("user add: %v\n%s", err, out.String())
	}

	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	var token string
	do := func(method, path string, form url.Values) (int, string, string) {
		t.Helper()
		var resp *http.Response
		var err error
		if method == http.MethodGet {
			resp, err = client.Get(srv.URL() + path)
		} else {
			resp, err = client.PostForm(srv.URL()+path, form)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if m := csrf.FindSubmatch(b); m != nil {
			token = string(m[1])
		}
		return resp.StatusCode, resp.Request.URL.Path, string(b)
	}

	if status, path, _ := do(http.MethodGet, "/console", nil); status != http.StatusOK || path != "/console/login" {
		t.Fatalf("/console signed out: %d at %s", status, path)
	}
	status, path, body := do(http.MethodPost, "/console/login", url.Values{"csrf": {token}, "name": {"ops"}, "password": {"merchant-1001-pw"}})
	if status != http.StatusOK || path != "/console/templates" || !strings.Contains(body, "店铺 1001") {
		t.Fatalf("sign in: %d at %s\n%s", status, path, body)
	}
	status, path, body = do(http.MethodPost, "/console/templates", url.Values{"csrf": {token},
		"name": {"新人券"}, "kind": {"direct"}, "source": {"shop"}, "rule.amount": {"5"}, "scope.type": {"all"},
		"issueStart": {time.Now().Format("2006-01-02T15:04")}, "issueEnd": {time.Now().AddDate(0, 1, 0).Format("2006-01-02T15:04")},
		"validity.type": {"relative"}, "validity.hours": {"24"}, "perUserLimit": {"1"}, "stock": {"100"}})
	if status != http.StatusOK || !strings.HasPrefix(path, "/console/templates/") || !strings.Contains(body, "立减 5.00 元") {
		t.Fatalf("create a template: %d at %s\n%s", status, path, body)
	}
	// The API's bearer tokens still work beside the console.
	if status, _, _ := do(http.MethodGet, "/api/v1/templates", nil); status != http.StatusUnauthorized {
		t.Fatalf("the API without a token: %d; the console's cookie must not sign API calls", status)
	}
}
