package http_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	qhttp "github.com/quanhq/quan/http"
)

// closedWithin is how long a test waits for the server to close a
// connection it should close. It bounds the test, asserting nothing on
// speed: the deadlines under test are far shorter.
const closedWithin = 30 * time.Second

// openLimited serves ts's API on a port of its own within limits, as
// quan serve does, and returns its address.
func openLimited(t *testing.T, ts *testServer, limits qhttp.Limits) string {
	t.Helper()
	ts.api.Limits = limits
	if err := ts.api.Open("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ts.api.Close(ctx)
	})
	return strings.TrimPrefix(ts.api.URL(), "http://")
}

// dial opens a raw connection to addr.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitClosed reads c until the server closes it, and fails if it does
// not within closedWithin. It returns what was read.
func waitClosed(t *testing.T, c net.Conn, what string) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(closedWithin))
	b, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s: the server kept the connection open", what)
	}
	return string(b)
}

// get sends GET path on c and reads the answer.
func get(t *testing.T, c net.Conn, br *bufio.Reader, path string) *http.Response {
	t.Helper()
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: quan\r\n\r\n", path); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(closedWithin))
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

// TestSlowAndIdleClientsCutOff: a client that never finishes its
// headers, one that stops sending its body and a keep-alive connection
// left idle are each closed by their deadline, while a normal client is
// served meanwhile.
func TestSlowAndIdleClientsCutOff(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	addr := openLimited(t, ts, qhttp.Limits{
		HeaderTimeout: 300 * time.Millisecond,
		IdleTimeout:   300 * time.Millisecond,
		BodyMinRate:   1000,
		BodyWindow:    300 * time.Millisecond,
	})
	token := ts.merchant(t, 1001)

	headers := dial(t, addr)
	fmt.Fprint(headers, "GET /healthz HTTP/1.1\r\nHost: quan\r\n") // and never the blank line

	body := dial(t, addr)
	fmt.Fprintf(body, "POST /api/v1/templates HTTP/1.1\r\nHost: quan\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"name\":", token)

	idle := dial(t, addr)
	if res := get(t, idle, bufio.NewReader(idle), "/healthz"); res.StatusCode != http.StatusOK {
		t.Fatalf("first request of the idle connection: %d", res.StatusCode)
	}

	// A normal client, on connections of its own, is served.
	client := &http.Client{Timeout: closedWithin}
	for range 3 {
		res, err := client.Get("http://" + addr + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("normal client: %d", res.StatusCode)
		}
	}

	if got := waitClosed(t, headers, "headers never finished"); got != "" {
		t.Errorf("headers never finished: answered %q", got)
	}
	got := waitClosed(t, body, "a body that stopped")
	if !strings.HasPrefix(got, "HTTP/1.1 408 ") || !strings.Contains(got, `"code":"too_slow"`) || !strings.Contains(got, "1000 bytes a second") {
		t.Errorf("a body that stopped: answered %q, want 408 too_slow naming the minimum rate", got)
	}
	waitClosed(t, idle, "an idle keep-alive connection")
}

// pacedUpload posts a distribution of a CSV file of size bytes to
// /api/v1/tasks on a raw connection, writing it chunk bytes at a time,
// every gap. It returns the status and the problem's code, if any.
func pacedUpload(t *testing.T, addr, token string, tpl int64, size, chunk int, gap time.Duration) (int, string) {
	t.Helper()
	var csv bytes.Buffer
	csv.WriteString("userId\n")
	for i := 1; csv.Len() < size; i++ {
		fmt.Fprintf(&csv, "%d\n", i)
	}
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	mw.WriteField("name", "slow link")
	mw.WriteField("templateId", fmt.Sprint(tpl))
	mw.WriteField("dryRun", "true")
	fw, _ := mw.CreateFormFile("file", "users.csv")
	fw.Write(csv.Bytes())
	mw.Close()

	c := dial(t, addr)
	fmt.Fprintf(c, "POST /api/v1/tasks HTTP/1.1\r\nHost: quan\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n",
		token, mw.FormDataContentType(), form.Len())
	go func() {
		b := form.Bytes()
		for len(b) > 0 {
			n := min(chunk, len(b))
			if _, err := c.Write(b[:n]); err != nil {
				return // cut off
			}
			b = b[n:]
			time.Sleep(gap)
		}
	}()
	c.SetReadDeadline(time.Now().Add(closedWithin))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("read the answer: %v", err)
	}
	defer res.Body.Close()
	var p qhttp.Problem
	if res.StatusCode >= 400 {
		json.NewDecoder(res.Body).Decode(&p)
	}
	return res.StatusCode, p.Code
}

// TestUploadMinimumRate: an upload below the minimum rate is cut off
// with 408; one above it completes, though it takes many windows.
func TestUploadMinimumRate(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	// 10,000 bytes in each second spent waiting for the body.
	addr := openLimited(t, ts, qhttp.Limits{BodyMinRate: 10_000, BodyWindow: time.Second})
	token := ts.merchant(t, 1001)
	tpl := ts.activeTemplate(t, token, 100_000, 1)

	// 2,000 bytes every half second: 4,000 bytes a second, below.
	if status, code := pacedUpload(t, addr, token, tpl.ID, 30_000, 2000, 500*time.Millisecond); status != http.StatusRequestTimeout || code != "too_slow" {
		t.Errorf("upload below the minimum rate: %d %q, want 408 too_slow", status, code)
	}
	assertNoUploads(t, ts.dir) // the part received was removed
	// 2,500 bytes every 100 ms: 25,000 bytes a second, above; 30,000
	// bytes take over a second, several windows.
	if status, code := pacedUpload(t, addr, token, tpl.ID, 30_000, 2500, 100*time.Millisecond); status != http.StatusCreated {
		t.Errorf("upload above the minimum rate: %d %q, want 201", status, code)
	}
}

// TestConnectionCap: past MaxConns, a new connection is answered 503
// with Retry-After at once and closed, while the connections open keep
// being served; once one closes, a new one is served again.
func TestConnectionCap(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	addr := openLimited(t, ts, qhttp.Limits{MaxConns: 3})
	type conn struct {
		c  net.Conn
		br *bufio.Reader
	}
	var open []conn
	for range 3 {
		c := dial(t, addr)
		cc := conn{c, bufio.NewReader(c)}
		if res := get(t, cc.c, cc.br, "/healthz"); res.StatusCode != http.StatusOK {
			t.Fatalf("connection within the cap: %d", res.StatusCode)
		}
		open = append(open, cc)
	}

	extra := dial(t, addr)
	fmt.Fprint(extra, "GET /healthz HTTP/1.1\r\nHost: quan\r\n\r\n")
	extra.SetReadDeadline(time.Now().Add(closedWithin))
	res, err := http.ReadResponse(bufio.NewReader(extra), nil)
	if err != nil {
		t.Fatalf("connection past the cap: %v", err)
	}
	var p qhttp.Problem
	json.NewDecoder(res.Body).Decode(&p)
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") != "1" || p.Code != "unavailable" ||
		res.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("connection past the cap: %d, Retry-After %q, %+v", res.StatusCode, res.Header.Get("Retry-After"), p)
	}
	waitClosed(t, extra, "the connection past the cap")

	for i, cc := range open {
		if res := get(t, cc.c, cc.br, "/healthz"); res.StatusCode != http.StatusOK {
			t.Fatalf("open connection %d past the cap: %d", i, res.StatusCode)
		}
	}

	// One closes; its slot is free once the server has seen it go.
	open[0].c.Close()
	deadline := time.Now().Add(closedWithin)
	for {
		c := dial(t, addr)
		res := get(t, c, bufio.NewReader(c), "/healthz")
		c.Close()
		if res.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a connection closed, and a new one still gets %d", res.StatusCode)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestHeaderCap: a request whose headers exceed MaxHeaderBytes is
// answered 431; one within it is served.
func TestHeaderCap(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	addr := openLimited(t, ts, qhttp.Limits{MaxHeaderBytes: 1024})
	client := &http.Client{Timeout: closedWithin}
	for _, tc := range []struct {
		size int
		want int
	}{
		{500, http.StatusOK},
		// net/http allows 4 KiB beyond MaxHeaderBytes.
		{8 << 10, http.StatusRequestHeaderFieldsTooLarge},
	} {
		req, _ := http.NewRequest("GET", "http://"+addr+"/healthz", nil)
		req.Header.Set("X-Padding", strings.Repeat("a", tc.size))
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tc.want {
			t.Errorf("a header of %d bytes: %d, want %d", tc.size, res.StatusCode, tc.want)
		}
	}
}
