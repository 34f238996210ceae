package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/accounts"
	qhttp "github.com/quanhq/quan/http"
	"github.com/quanhq/quan/http/console"
)

// waits notes the waits of slowed sign-ins, which move the console's
// clock instead of sleeping.
type waits struct {
	mu sync.Mutex
	d  []time.Duration
}

func (w *waits) take() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	d := w.d
	w.d = nil
	return d
}

// behindProxy serves the console behind a trusted proxy at 127.0.0.1 (the
// test's own address) if trusted, with the staff accounts s1 … s6
// (passwords "password-" and the name) and sign-in waits noted in the
// returned waits.
func behindProxy(t *testing.T, trusted bool) (*testConsole, *waits) {
	t.Helper()
	w := &waits{}
	tc := newConsole(t, func(t *testing.T, tc *testConsole, c *console.Console) {
		if trusted {
			ps, err := qhttp.ParseProxies("127.0.0.0/8,::1")
			if err != nil {
				t.Fatal(err)
			}
			c.Proxies = ps
		}
		tc.accounts.Sleep = func(ctx context.Context, d time.Duration) error {
			w.mu.Lock()
			w.d = append(w.d, d)
			w.mu.Unlock()
			tc.advance(d)
			return nil
		}
	})
	for i := 1; i <= 6; i++ {
		name := fmt.Sprintf("s%d", i)
		if _, err := tc.accounts.Add(t.Context(), quan.Identity{Role: quan.RoleAdmin, Subject: "test"},
			accounts.NewAccount{Name: name, Role: quan.RoleMerchant, ShopNo: 1001, Password: "password-" + name}); err != nil {
			t.Fatal(err)
		}
	}
	return tc, w
}

// loginVia signs in as a browser behind a proxy that forwards for xff:
// the form, then the post, each with X-Forwarded-For. It returns the
// status, the final path, the Retry-After and the body.
func (b *browser) loginVia(xff, name, password string) (int, string, string, string) {
	b.t.Helper()
	do := func(method string, form url.Values) *http.Response {
		var body *strings.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		} else {
			body = strings.NewReader("")
		}
		req, err := http.NewRequest(method, b.tc.URL+"/console/login", body)
		if err != nil {
			b.t.Fatal(err)
		}
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		req.Header.Set("X-Forwarded-For", xff)
		resp, err := b.http.Do(req)
		if err != nil {
			b.t.Fatal(err)
		}
		return resp
	}
	b.read(do(http.MethodGet, nil))
	resp := do(http.MethodPost, url.Values{"csrf": {b.csrf}, "name": {name}, "password": {password}, "next": {"/console/templates"}})
	retry := resp.Header.Get("Retry-After")
	status, path, body := b.read(resp)
	return status, path, retry, body
}

const (
	slowedText = "此地址登录失败次数过多"
	lockedText = "已暂时锁定"
)

// TestLoginOfficeBehindTrustedProxy: the staff sign in through the
// office's proxy, all from one address. One person guesses an account's
// password thirty times and tries names that are no account: that
// account locks and the address is slowed down, but every other account
// signs in with its right password, from the same address.
func TestLoginOfficeBehindTrustedProxy(t *testing.T) {
	tc, w := behindProxy(t, true)
	const office = "203.0.113.80"
	guesser := tc.browser(t)
	for i := range 30 {
		status, _, _, body := guesser.loginVia(office, "s1", fmt.Sprintf("guess-%02d-password", i))
		if status != http.StatusUnauthorized && status != http.StatusTooManyRequests {
			t.Fatalf("guess %d: %d\n%s", i+1, status, body)
		}
	}
	for i := range accounts.DefaultMaxAddrFailures {
		guesser.loginVia(office, fmt.Sprintf("s1-%d", i), "guess-password")
	}
	// The last guess was answered as slowed: the address is past its
	// failures.
	status, _, retry, body := guesser.loginVia(office, "nobody", "guess-password")
	if status != http.StatusTooManyRequests || !strings.Contains(body, slowedText) || retry == "" {
		t.Fatalf("a guess from the office past its failures: %d, Retry-After %q\n%s", status, retry, body)
	}
	w.take()
	for _, name := range []string{"root", "m1001", "s2", "s3", "s4", "s5", "s6"} {
		status, path, _, body := tc.browser(t).loginVia(office, name, "password-"+name)
		if status != http.StatusOK || path != "/console/templates" {
			t.Fatalf("%s with the right password from the office: %d at %s\n%s", name, status, path, body)
		}
	}
	if got := w.take(); len(got) != 7 {
		t.Errorf("the staff's sign-ins waited %v, want one wait each (the address is slowed down)", got)
	}
	// The guessed account is locked, even with its right password.
	status, _, retry, body = tc.browser(t).loginVia(office, "s1", "password-s1")
	if status != http.StatusTooManyRequests || !strings.Contains(body, lockedText) || retry == "" {
		t.Fatalf("s1, guessed 30 times, with its right password: %d, Retry-After %q\n%s", status, retry, body)
	}
	// Another address behind the same proxy is not slowed: the proxy's
	// own address counts nothing.
	status, _, _, body = tc.browser(t).loginVia("198.51.100.7", "m1002", "wrong-password")
	if status != http.StatusUnauthorized {
		t.Fatalf("a wrong password from another address behind the proxy: %d, want 401\n%s", status, body)
	}
}

// TestLoginBruteForceSlowed: one address trying many accounts is slowed
// down once past its failures: every wrong guess is 429 with a growing
// Retry-After and each sign-in waits that long first; one account
// guessed five times locks. A right password still signs in from it.
func TestLoginBruteForceSlowed(t *testing.T) {
	tc, w := behindProxy(t, true)
	const attacker = "198.51.100.66"
	b := tc.browser(t)
	for i := range accounts.DefaultMaxAddrFailures - 1 {
		if status, _, _, body := b.loginVia(attacker, fmt.Sprintf("user%02d", i), "guess-password"); status != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d\n%s", i+1, status, body)
		}
	}
	var retries []string
	for i := range 6 {
		status, _, retry, body := b.loginVia(attacker, fmt.Sprintf("admin%d", i), "guess-password")
		if status != http.StatusTooManyRequests || !strings.Contains(body, slowedText) {
			t.Fatalf("guess %d past the limit: %d\n%s", i+1, status, body)
		}
		retries = append(retries, retry)
	}
	if want := []string{"1", "2", "4", "8", "10", "10"}; !slices.Equal(retries, want) {
		t.Errorf("Retry-After of the guesses past the limit %q, want %q", retries, want)
	}
	// The first of them was the twentieth failure: it did not wait.
	if got, want := w.take(), []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second}; !slices.Equal(got, want) {
		t.Errorf("the guesses past the limit waited %v, want %v", got, want)
	}
	// Five guesses of one account lock it.
	for range accounts.DefaultMaxFailures {
		b.loginVia(attacker, "m1002", "guess-password")
	}
	status, _, _, body := tc.browser(t).loginVia(attacker, "m1002", "password-m1002")
	if status != http.StatusTooManyRequests || !strings.Contains(body, lockedText) {
		t.Fatalf("m1002 guessed five times, right password: %d\n%s", status, body)
	}
	status, _, _, body = tc.browser(t).loginVia("192.0.2.200", "m1002", "password-m1002")
	if status != http.StatusTooManyRequests || !strings.Contains(body, lockedText) {
		t.Fatalf("m1002 guessed five times, right password from elsewhere: %d\n%s", status, body)
	}
	// An account nobody guessed signs in from the slowed address.
	if status, path, _, body := tc.browser(t).loginVia(attacker, "m1001", "password-m1001"); status != http.StatusOK || path != "/console/templates" {
		t.Fatalf("m1001's right password from the slowed address: %d at %s\n%s", status, path, body)
	}
}

// TestLoginForwardedForFromUntrustedPeer: without the peer among the
// trusted proxies, X-Forwarded-For is ignored: guesses that each claim
// another address all count under the connection's.
func TestLoginForwardedForFromUntrustedPeer(t *testing.T) {
	tc, _ := behindProxy(t, false)
	b := tc.browser(t)
	for i := range accounts.DefaultMaxAddrFailures - 1 {
		if status, _, _, body := b.loginVia(fmt.Sprintf("203.0.113.%d", i+1), fmt.Sprintf("nobody%d", i), "guess-password"); status != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d\n%s", i+1, status, body)
		}
	}
	status, _, retry, body := b.loginVia("203.0.113.250", "nobody", "guess-password")
	if status != http.StatusTooManyRequests || !strings.Contains(body, slowedText) || retry != "1" {
		t.Fatalf("the twentieth guess, with yet another forged address: %d, Retry-After %q, want 429 slowed\n%s", status, retry, body)
	}
}
