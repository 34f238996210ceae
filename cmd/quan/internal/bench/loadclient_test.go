package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// loadServer starts h on a real net/http server and returns its URL and
// the count of connections it accepted.
func loadServer(t *testing.T, h http.HandlerFunc) (string, *atomic.Int64) {
	t.Helper()
	url, conns, _ := loadServerClosed(t, h)
	return url, conns
}

// loadServerClosed is loadServer that also returns a channel that gets a
// value for each connection closed.
func loadServerClosed(t *testing.T, h http.HandlerFunc) (string, *atomic.Int64, chan struct{}) {
	t.Helper()
	var conns atomic.Int64
	closed := make(chan struct{}, 1000)
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			conns.Add(1)
		case http.StateClosed, http.StateHijacked:
			select {
			case closed <- struct{}{}:
			default:
			}
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL, &conns, closed
}

// newTestLoad returns a load of n POSTs at url from users, in turn, on
// conns connections.
func newTestLoad(url string, users, n, conns int) *loadGen {
	auth := make([][]string, users)
	for i := range auth {
		auth[i] = []string{fmt.Sprintf("Bearer user-%d", i)}
	}
	order := make([]int32, n)
	for k := range order {
		order[k] = int32(k % users)
	}
	return &loadGen{URL: url + "/claim", WarmURL: url + "/healthz", Method: http.MethodPost, Auth: auth, Order: order, Conns: conns}
}

// hijack takes the connection of w's request, to write raw bytes on it.
func hijack(t *testing.T, w http.ResponseWriter) net.Conn {
	t.Helper()
	c, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		t.Error(err)
		return nil
	}
	return c
}

// loadCounts are the counts of a loadResult, to compare.
type loadCounts struct {
	Sent, Accepted, SoldOut, Limit, Conflict, RateLimited, Other, Errors int64
}

func checkCounts(t *testing.T, res *loadResult, want loadCounts) {
	t.Helper()
	got := loadCounts{Sent: res.Sent, Accepted: res.Accepted, SoldOut: res.SoldOut, Limit: res.Limit, Conflict: res.Conflict,
		RateLimited: res.RateLimited, Other: res.Other, Errors: res.Errors}
	if got != want {
		t.Errorf("counted %+v, want %+v (problem %q)", got, want, res.Problem)
	}
}

// TestLoadGenKeepAlive checks every request goes on one of Conns kept-alive
// connections, closed when the run ends, and what the server receives of
// each.
func TestLoadGenKeepAlive(t *testing.T) {
	t.Parallel()
	var bad atomic.Value
	url, conns, closed := loadServerClosed(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/healthz" {
			return
		}
		if err := checkLoadRequest(r); err != nil {
			bad.CompareAndSwap(nil, err.Error())
		}
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, `{"id":1}`)
	})
	res, err := newTestLoad(url, 7, 500, 8).run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, res, loadCounts{Sent: 500, Accepted: 500})
	if n := conns.Load(); n != 8 {
		t.Errorf("the server accepted %d connections, want 8", n)
	}
	if s := bad.Load(); s != nil {
		t.Errorf("the server received %s", s)
	}
	// The server sees the client close each connection.
	for i := range 8 {
		select {
		case <-closed:
		case <-time.After(time.Minute):
			t.Fatalf("%d of 8 connections left open a minute after the run", 8-i)
		}
	}
}

func checkLoadRequest(r *http.Request) error {
	switch {
	case r.Method != http.MethodPost || r.URL.Path != "/claim" || r.Proto != "HTTP/1.1":
		return fmt.Errorf("%s %s %s, want POST /claim HTTP/1.1", r.Method, r.URL, r.Proto)
	case !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer user-"):
		return fmt.Errorf("Authorization %q", r.Header.Get("Authorization"))
	case r.ContentLength != 0 || r.Header.Get("Content-Length") != "0":
		return fmt.Errorf("Content-Length %q", r.Header.Get("Content-Length"))
	case r.Header.Get("User-Agent") != loadUserAgent:
		return fmt.Errorf("User-Agent %q", r.Header.Get("User-Agent"))
	case r.Host == "":
		return errors.New("no Host")
	}
	return nil
}

// TestLoadGenStatus checks the responses are counted by status and, for a
// 409, by the code its body names; the first refusal is the problem noted.
func TestLoadGenStatus(t *testing.T) {
	t.Parallel()
	url, _ := loadServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get("Authorization") {
		case "Bearer user-0", "":
			w.WriteHeader(http.StatusAccepted)
		case "Bearer user-1":
			http.Error(w, `{"code":"rate"}`, http.StatusTooManyRequests)
		case "Bearer user-2":
			http.Error(w, `{"code":"sold_out"}`, http.StatusConflict)
		case "Bearer user-3":
			http.Error(w, `{"code":"limit_reached"}`, http.StatusConflict)
		case "Bearer user-4":
			http.Error(w, `{"code":"conflict"}`, http.StatusConflict)
		default:
			http.Error(w, "boom", http.StatusInternalServerError)
		}
	})
	// One connection: the requests go in Order, so the first noted is
	// user 1's.
	res, err := newTestLoad(url, 6, 60, 1).run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, res, loadCounts{Sent: 60, Accepted: 10, RateLimited: 10, SoldOut: 10, Limit: 10, Conflict: 10, Other: 10})
	if want := `429 Too Many Requests: {"code":"rate"}`; res.Problem != want {
		t.Errorf("problem %q, want %q", res.Problem, want)
	}
}

// TestLoadGenChunked checks chunked bodies are read to their end, the
// refusal codes found across chunks, and the connections kept alive.
func TestLoadGenChunked(t *testing.T) {
	t.Parallel()
	url, conns := loadServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			return
		}
		f := w.(http.Flusher)
		if r.Header.Get("Authorization") == "Bearer user-0" {
			w.WriteHeader(http.StatusConflict)
			for _, s := range []string{`{"code":"so`, `ld_o`, `ut"}`} {
				io.WriteString(w, s)
				f.Flush()
			}
			return
		}
		w.WriteHeader(http.StatusAccepted)
		f.Flush()
		// Longer than the body buffer: the rest is read and dropped.
		for range 3 {
			io.WriteString(w, strings.Repeat("x", 3000))
			f.Flush()
		}
	})
	res, err := newTestLoad(url, 2, 200, 4).run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, res, loadCounts{Sent: 200, Accepted: 100, SoldOut: 100})
	if n := conns.Load(); n != 4 {
		t.Errorf("the server accepted %d connections, want 4", n)
	}
}

// TestLoadGenConnectionClose checks a response with Connection: close has
// the next request go on a new connection, every request answered.
func TestLoadGenConnectionClose(t *testing.T) {
	t.Parallel()
	url, conns := loadServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusAccepted)
		}
	})
	res, err := newTestLoad(url, 3, 100, 4).run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, res, loadCounts{Sent: 100, Accepted: 100})
	if n := conns.Load(); n != 4+100 { // the warm-ups', then one a request
		t.Errorf("the server accepted %d connections, want 104", n)
	}
}

// TestLoadGenServerCloses checks a connection the server closes before its
// response is whole counts as an error, and the run goes on on a new one.
func TestLoadGenServerCloses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, write, problem string
	}{
		{"MidBody", "HTTP/1.1 202 Accepted\r\nContent-Length: 40\r\n\r\n{\"id\"", "read the body: unexpected EOF"},
		{"MidHeaders", "HTTP/1.1 202 Accepted\r\nContent-Len", "read the headers: unexpected EOF"},
		{"BeforeResponse", "", "the server closed the connection before a response"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var posts atomic.Int64
			url, _ := loadServer(t, func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost && posts.Add(1)%5 == 0 {
					if c := hijack(t, w); c != nil {
						io.WriteString(c, tc.write)
						c.Close()
					}
					return
				}
				w.WriteHeader(http.StatusAccepted)
			})
			res, err := newTestLoad(url, 3, 200, 4).run(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			checkCounts(t, res, loadCounts{Sent: 200, Accepted: 160, Errors: 40})
			if want := "POST " + url + "/claim: " + tc.problem; !strings.HasPrefix(res.Problem, want) {
				t.Errorf("problem %q, want it to start %q", res.Problem, want)
			}
		})
	}
}

// TestLoadGenMalformed checks a response that is not HTTP counts as an
// error, noted with what was wrong with it.
func TestLoadGenMalformed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, write, problem string
	}{
		{"StatusLine", "HTTP/1.1 2x2 Accepted\r\n\r\n", `malformed response: status line "HTTP/1.1 2x2 Accepted"`},
		{"NotHTTP", "SSH-2.0-OpenSSH_9.6\r\n", `malformed response: status line "SSH-2.0-OpenSSH_9.6"`},
		{"ContentLength", "HTTP/1.1 202 Accepted\r\nContent-Length: ten\r\n\r\n", `malformed response: Content-Length "ten"`},
		{"ChunkSize", "HTTP/1.1 202 Accepted\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", `malformed response: chunk size "zz"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url, _ := loadServer(t, func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost {
					if c := hijack(t, w); c != nil {
						io.WriteString(c, tc.write)
						c.Close()
					}
				}
			})
			res, err := newTestLoad(url, 1, 20, 2).run(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			checkCounts(t, res, loadCounts{Sent: 20, Errors: 20})
			if !strings.Contains(res.Problem, tc.problem) {
				t.Errorf("problem %q, want it to say %q", res.Problem, tc.problem)
			}
		})
	}
}

// TestLoadGenCancel checks the run returns when its context ends with
// every connection waiting on a response that never comes.
func TestLoadGenCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	var waiting atomic.Int64
	url, _ := loadServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			return
		}
		if waiting.Add(1) == 4 {
			cancel()
		}
		<-r.Context().Done() // the client closed the connection
	})
	gen := newTestLoad(url, 1, 100, 4)
	gen.Timeout = time.Hour // only the cancel ends the reads
	type result struct {
		res *loadResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := gen.run(ctx)
		done <- result{res, err}
	}()
	var res *loadResult
	var err error
	select {
	case r := <-done:
		res, err = r.res, r.err
	case <-time.After(time.Minute):
		t.Fatal("run still blocked a minute after its context ended")
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("run: %v, want context.Canceled", err)
	}
	if res.Sent != 4 || res.Errors != 0 {
		t.Errorf("sent %d, errors %d: want 4 and 0", res.Sent, res.Errors)
	}
}

// TestLoadGenWarmUp checks a load whose connections cannot be warmed up
// fails before it starts.
func TestLoadGenWarmUp(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	_, err = newTestLoad(url, 1, 10, 2).run(t.Context())
	if err == nil || !strings.HasPrefix(err.Error(), "warm up the connections: GET "+url+"/healthz: dial tcp ") {
		t.Errorf("run: %v, want a warm-up error", err)
	}
}

// TestLoadConnRead reads responses of every framing, and refuses broken
// ones with what is wrong with them.
func TestLoadConnRead(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("y", loadBodyBuf+100)
	for _, tc := range []struct {
		name, in   string
		code       int
		status     string
		body       string
		closeAfter bool
		err        string
	}{
		{name: "ContentLength", in: "HTTP/1.1 202 Accepted\r\nContent-Length: 5\r\n\r\nhello", code: 202, status: "202 Accepted", body: "hello"},
		{name: "BareLF", in: "HTTP/1.1 200 OK\ncontent-length: 2\n\nhi", code: 200, status: "200 OK", body: "hi"},
		{name: "NoReason", in: "HTTP/1.1 409\r\nContent-Length: 0\r\n\r\n", code: 409, status: "409"},
		{name: "Chunked", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\nA\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n", code: 200, status: "200 OK", body: "abc0123456789"},
		{name: "ChunkedOverLength", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\nContent-Length: 99\r\n\r\n1\r\nz\r\n0\r\n\r\n", code: 200, status: "200 OK", body: "z"},
		{name: "LongBody", in: "HTTP/1.1 200 OK\r\nContent-Length: " + fmt.Sprint(len(long)) + "\r\n\r\n" + long, code: 200, status: "200 OK", body: long[:loadBodyBuf]},
		{name: "ConnectionClose", in: "HTTP/1.1 202 Accepted\r\nConnection: keep-alive, Close\r\nContent-Length: 0\r\n\r\n", code: 202, status: "202 Accepted", closeAfter: true},
		{name: "UntilEOF", in: "HTTP/1.1 200 OK\r\n\r\nall of it", code: 200, status: "200 OK", body: "all of it", closeAfter: true},
		{name: "HTTP10", in: "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", code: 200, status: "200 OK", body: "x", closeAfter: true},
		{name: "HTTP10KeepAlive", in: "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx", code: 200, status: "200 OK", body: "x"},
		{name: "Continue", in: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\nok", code: 202, status: "202 Accepted", body: "ok"},
		{name: "NoContent", in: "HTTP/1.1 204 No Content\r\n\r\n", code: 204, status: "204 No Content"},

		{name: "ErrEmpty", in: "", err: "the server closed the connection before a response"},
		{name: "ErrStatusLine", in: "HTTP/1.1 20 OK\r\n\r\n", err: `malformed response: status line "HTTP/1.1 20 OK"`},
		{name: "ErrHTTP2", in: "HTTP/2 200\r\n\r\n", err: `malformed response: status line "HTTP/2 200"`},
		{name: "ErrHeaderLine", in: "HTTP/1.1 200 OK\r\nno colon\r\n\r\n", err: `malformed response: header line "no colon"`},
		{name: "ErrFolded", in: "HTTP/1.1 200 OK\r\nA: b\r\n c\r\n\r\n", err: `malformed response: header line " c"`},
		{name: "ErrContentLengths", in: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nx", err: `malformed response: Content-Length "2"`},
		{name: "ErrTransferEncoding", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", err: `malformed response: unsupported Transfer-Encoding "gzip"`},
		{name: "ErrChunkTooLong", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nzz\r\n0\r\n\r\n", err: "malformed response: chunk data longer than its size 1"},
		{name: "ErrChunkCut", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc", err: "read the body: unexpected EOF"},
		{name: "ErrBodyCut", in: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", err: "read the body: unexpected EOF"},
		{name: "ErrLongLine", in: "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", loadReadBuf) + "\r\n\r\n", err: "malformed response: a line longer than 4096 bytes"},
		{name: "ErrSwitchingProtocols", in: "HTTP/1.1 101 Switching Protocols\r\n\r\n", err: "malformed response: unexpected 101 Switching Protocols"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newLoadConn(&loadTarget{})
			c.br.Reset(strings.NewReader(tc.in))
			resp, closeAfter, err := c.read()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("read: %v, want an error saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if resp.Code != tc.code || string(resp.Status) != tc.status || string(resp.Body) != tc.body || closeAfter != tc.closeAfter {
				t.Errorf("read %d %q %.40q close %v, want %d %q %.40q close %v",
					resp.Code, resp.Status, resp.Body, closeAfter, tc.code, tc.status, tc.body, tc.closeAfter)
			}
		})
	}
}

// TestLoadConnAllocs checks building a request and reading its response
// allocate nothing.
func TestLoadConnAllocs(t *testing.T) {
	target, err := newLoadTarget(http.MethodPost, "http://127.0.0.1:1/claim", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	c := newLoadConn(target)
	c.br.Reset(&repeatReader{b: []byte("HTTP/1.1 409 Conflict\r\nContent-Type: application/json\r\nContent-Length: 22\r\n\r\n{\"code\":\"sold_out\"...}" +
		"HTTP/1.1 202 Accepted\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\n\r\n")})
	auth := []string{"Bearer " + strings.Repeat("t", 200)}
	req := make([]byte, 0, 512)
	allocs := testing.AllocsPerRun(1000, func() {
		req = target.appendRequest(req[:0], auth, nil)
		if _, _, err := c.read(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations a request, want 0", allocs)
	}
}

// repeatReader reads b over and over.
type repeatReader struct {
	b   []byte
	off int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := copy(p, r.b[r.off:])
	r.off = (r.off + n) % len(r.b)
	return n, nil
}
