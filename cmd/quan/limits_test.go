package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/quanhq/quan/cmd/quan/internal/cli"
)

// connDeadline bounds how long these tests wait for the server to answer
// or close; it asserts nothing on speed.
const connDeadline = 30 * time.Second

// TestServeClientLimitFlags: quan serve's flags bound its clients: past
// --max-conns a connection gets 503 with Retry-After while those open
// are served; a body slower than --body-min-rate over --body-window is
// cut off with 408; a keep-alive connection idle past --idle-timeout
// and headers unfinished past --header-timeout are closed.
func TestServeClientLimitFlags(t *testing.T) {
	env := testEnv(t)
	srv := startServe(t, env, "--max-conns", "4", "--idle-timeout", "300ms", "--header-timeout", "300ms",
		"--body-min-rate", "1000", "--body-window", "300ms", "--max-header-bytes", "2048")
	token := strings.TrimSpace(runQuan(t, env, "token --role merchant --shop 7"))
	addr := strings.TrimPrefix(srv.URL(), "http://")
	dial := func() (net.Conn, *bufio.Reader) {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(connDeadline))
		return c, bufio.NewReader(c)
	}
	closed := func(c net.Conn, what string) string {
		t.Helper()
		b, err := io.ReadAll(c)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("%s: the server kept the connection open", what)
		}
		return string(b)
	}

	// Four connections, the cap: one idle after a request, two sending a
	// body too slowly (one the handler reads, one it refuses unread),
	// one never finishing its headers.
	idle, idleR := dial()
	fmt.Fprint(idle, "GET /healthz HTTP/1.1\r\nHost: quan\r\n\r\n")
	if res, err := http.ReadResponse(idleR, nil); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("first request: %v %v", res, err)
	}
	slow, _ := dial()
	fmt.Fprintf(slow, "POST /api/v1/templates HTTP/1.1\r\nHost: quan\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", token)
	unread, _ := dial()
	fmt.Fprint(unread, "POST /api/v1/templates HTTP/1.1\r\nHost: quan\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
	headers, _ := dial()
	fmt.Fprint(headers, "GET /healthz HTTP/1.1\r\nHost: quan\r\n")

	// A fourth is refused at once, unless one of them is gone already.
	extra, extraR := dial()
	fmt.Fprint(extra, "GET /healthz HTTP/1.1\r\nHost: quan\r\n\r\n")
	res, err := http.ReadResponse(extraR, nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") != "1" {
		t.Fatalf("a connection past --max-conns 4: %d, Retry-After %q", res.StatusCode, res.Header.Get("Retry-After"))
	}

	if got := closed(slow, "a body below --body-min-rate"); !strings.HasPrefix(got, "HTTP/1.1 408 ") {
		t.Errorf("a body below --body-min-rate: answered %q, want 408", got)
	}
	if got := closed(unread, "a body refused unread, below --body-min-rate"); !strings.HasPrefix(got, "HTTP/1.1 401 ") {
		t.Errorf("a body refused unread: answered %q, want 401", got)
	}
	closed(headers, "headers unfinished past --header-timeout")
	closed(idle, "a connection idle past --idle-timeout")

	// Headers over --max-header-bytes (and net/http's 4 KiB of slack).
	big, bigR := dial()
	fmt.Fprintf(big, "GET /healthz HTTP/1.1\r\nHost: quan\r\nX-Padding: %s\r\n\r\n", strings.Repeat("a", 8<<10))
	if res, err := http.ReadResponse(bigR, nil); err != nil || res.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("headers over --max-header-bytes: %v %v, want 431", res, err)
	}
}

func TestServeClientLimitFlagsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-conns", "-1"}, "--max-conns -1"},
		{[]string{"--body-window", "-1s"}, "--body-window -1s"},
		{[]string{"--trusted-proxies", "10.0.0.0/8,proxy.internal"}, `"proxy.internal" is neither a CIDR`},
	} {
		env := testEnv(t)
		var logs bytes.Buffer
		m := &Main{Stdout: &logs, Stderr: &logs, Getenv: func(k string) string { return env[k] }}
		cmd := &ServeCommand{Main: m}
		err := cmd.ParseFlags(tc.args)
		var usage *cli.UsageError
		if !errors.As(err, &usage) || !strings.Contains(err.Error()+logs.String(), tc.want) {
			t.Errorf("serve %s: %v\n%s\nwant a usage error naming %s", strings.Join(tc.args, " "), err, logs.String(), tc.want)
		}
	}
}

// TestServeTrustedProxies: with --trusted-proxies naming the proxy in
// front (here the test itself, 127.0.0.1), failed console sign-ins count
// under the address it forwards, so 21 guesses from 21 addresses slow
// none of them down; without it they would all count under the proxy's
// address, and the twentieth would be 429 (the console's tests show
// the rest).
func TestServeTrustedProxies(t *testing.T) {
	env := testEnv(t)
	env["QUAN_TRUSTED_PROXIES"] = "127.0.0.1"
	srv := startServe(t, env)
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, Timeout: connDeadline}
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	login := func(from, name string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL()+"/console/login", nil)
		req.Header.Set("X-Forwarded-For", from)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := csrf.FindSubmatch(b)
		if m == nil {
			t.Fatalf("no sign-in form:\n%s", b)
		}
		form := url.Values{"csrf": {string(m[1])}, "name": {name}, "password": {"not-the-password"}}
		req, _ = http.NewRequest(http.MethodPost, srv.URL()+"/console/login", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Forwarded-For", "1.2.3.4, "+from) // the leftmost is the client's own word
		resp, err = client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for i := range 21 {
		if status := login(fmt.Sprintf("203.0.113.%d", i+1), fmt.Sprintf("guess%d", i)); status != http.StatusUnauthorized {
			t.Fatalf("guess %d, from its own forwarded address: %d, want 401", i+1, status)
		}
	}
}
