package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The load generator's own HTTP/1.1 client. net/http's Transport runs two
// goroutines per connection (readLoop, writeLoop) and hands every request
// and response between them and the caller over channels; under the
// bench's load that was over a third of the CPU of a process whose other
// part is the server measured. Here one goroutine per connection writes a
// request with one Write and reads its response from a reused
// bufio.Reader, allocating nothing per request: the CPU the load costs is
// left to the server.

// loadTarget is what the requests of a loadGen are made of: where to dial,
// and the bytes of every request but its Authorization header.
type loadTarget struct {
	addr     string // host:port to dial
	what     string // the requests, for errors: "POST http://host/path"
	warmWhat string // the warm-up, for errors
	head     bool   // the method is HEAD: responses have no body
	// How long a response may take. The connection's deadline is pushed
	// back when half of it is left, not on every request, which would
	// cost a timer update each: a stalled server is noticed after
	// timeout/2 to timeout.
	timeout time.Duration
	prefix  []byte // request line, Host and User-Agent
	suffix  []byte // what ends a request: Content-Length, the blank line
	warm    []byte // the whole warm-up request; nil: no warm-up
}

// loadUserAgent is the User-Agent of the load generator's requests.
const loadUserAgent = "quan-bench"

// newLoadTarget prepares requests of method to rawURL, and the GET of
// warmURL each connection sends once before them. Both must be http: URLs
// of the same host and port: the warm-up goes on the connection the
// requests then use. An empty warmURL sends no warm-up. A response may
// take timeout; 0 is loadTimeout.
func newLoadTarget(method, rawURL, warmURL string, timeout time.Duration) (*loadTarget, error) {
	if method == "" || strings.ContainsAny(method, " \r\n\t") {
		return nil, fmt.Errorf("load generator: invalid method %q", method)
	}
	u, err := parseLoadURL(rawURL)
	if err != nil {
		return nil, err
	}
	t := &loadTarget{addr: u.Host, what: method + " " + rawURL, head: method == "HEAD", timeout: cmp.Or(timeout, loadTimeout)}
	if u.Port() == "" {
		t.addr = net.JoinHostPort(u.Hostname(), "80")
	}
	t.prefix = fmt.Appendf(nil, "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: %s\r\n", method, u.RequestURI(), u.Host, loadUserAgent)
	if method == "GET" || method == "HEAD" {
		t.suffix = []byte("\r\n")
	} else {
		t.suffix = []byte("Content-Length: 0\r\n\r\n")
	}
	if warmURL != "" {
		w, err := parseLoadURL(warmURL)
		if err != nil {
			return nil, err
		}
		if w.Host != u.Host {
			return nil, fmt.Errorf("load generator: warm-up URL %s is not on the host of %s", warmURL, rawURL)
		}
		t.warmWhat = "GET " + warmURL
		t.warm = fmt.Appendf(nil, "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: %s\r\n\r\n", w.RequestURI(), w.Host, loadUserAgent)
	}
	return t, nil
}

func parseLoadURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("load generator: %w", err)
	}
	if u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("load generator: %s: want an http://host/path URL", raw)
	}
	return u, nil
}

// checkAuth refuses header values that would split a request.
func checkAuth(auth [][]string) error {
	for i, vs := range auth {
		for _, v := range vs {
			if strings.ContainsAny(v, "\r\n") {
				return fmt.Errorf("load generator: the Authorization of user %d holds a line break", i)
			}
		}
	}
	return nil
}

// appendRequest appends to b the request with auth's Authorization
// headers and, if body is not nil, body as its JSON.
func (t *loadTarget) appendRequest(b []byte, auth []string, body []byte) []byte {
	b = append(b, t.prefix...)
	for _, v := range auth {
		b = append(b, "Authorization: "...)
		b = append(b, v...)
		b = append(b, "\r\n"...)
	}
	if body == nil {
		return append(b, t.suffix...)
	}
	b = append(b, "Content-Type: application/json\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\n\r\n"...)
	return append(b, body...)
}

// loadResponse is a response a loadConn read. Status and Body are the
// connection's buffers: valid until its next round trip.
type loadResponse struct {
	Code   int
	Status []byte // "409 Conflict"
	Body   []byte // the first bytes of the body, up to the buffer's size
}

// Per-connection buffer sizes: the responses measured are small
// documents; a longer header line is refused, a longer body cut.
const (
	loadReadBuf = 4096
	loadBodyBuf = 4096
)

// loadTimeout is how long a response may take by default (loadGen.Timeout).
const loadTimeout = time.Minute

// loadConn is one keep-alive connection of the load generator, used by
// one goroutine, which dials it again when it breaks or the server closes
// it. abort, from any goroutine, closes it for good.
type loadConn struct {
	t      *loadTarget
	dialer net.Dialer
	br     *bufio.Reader
	status []byte
	body   []byte
	until  time.Time // the connection's deadline

	mu      sync.Mutex // guards conn's changes against abort
	conn    net.Conn   // nil: dial before the next request
	aborted bool
}

func newLoadConn(t *loadTarget) *loadConn {
	return &loadConn{
		t:      t,
		dialer: net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second},
		br:     bufio.NewReaderSize(nil, loadReadBuf),
		status: make([]byte, 0, 64),
		body:   make([]byte, loadBodyBuf),
	}
}

// errLoadAborted is what a round trip returns once the connection is
// aborted.
var errLoadAborted = errors.New("load generator: connection closed")

// abort closes the connection and keeps it from dialing again: a round
// trip blocked on it returns.
func (c *loadConn) abort() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.aborted = true
	if c.conn != nil {
		c.conn.Close()
	}
}

// drop closes the connection; the next round trip dials a new one.
func (c *loadConn) drop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}

func (c *loadConn) dial(ctx context.Context) error {
	conn, err := c.dialer.DialContext(ctx, "tcp", c.t.addr)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.aborted {
		conn.Close()
		return errLoadAborted
	}
	c.conn = conn
	c.br.Reset(conn)
	c.until = time.Time{}
	return nil
}

// warm sends the target's warm-up request, if it has one, on a new
// connection and reads its response.
func (c *loadConn) warm(ctx context.Context) error {
	if c.t.warm == nil {
		return c.dial(ctx)
	}
	if _, err := c.roundTrip(ctx, c.t.warm, time.Now()); err != nil {
		return fmt.Errorf("%s: %w", c.t.warmWhat, err)
	}
	return nil
}

// roundTrip writes req, dialing first if the connection is closed, and
// reads its response. now is the time it starts. On an error the
// connection is closed, to be dialed again by the next round trip; so is
// it after a response that closes it. The error does not name the
// request: the caller does, only when it keeps the error.
func (c *loadConn) roundTrip(ctx context.Context, req []byte, now time.Time) (loadResponse, error) {
	if c.conn == nil {
		if err := c.dial(ctx); err != nil {
			return loadResponse{}, err
		}
	}
	if now.After(c.until.Add(-c.t.timeout / 2)) {
		c.until = now.Add(c.t.timeout)
		if err := c.conn.SetDeadline(c.until); err != nil {
			c.drop()
			return loadResponse{}, err
		}
	}
	if _, err := c.conn.Write(req); err != nil {
		c.drop()
		return loadResponse{}, fmt.Errorf("write the request: %w", err)
	}
	resp, closeAfter, err := c.read()
	if err != nil {
		c.drop()
		return loadResponse{}, err
	}
	if closeAfter {
		c.drop()
	}
	return resp, nil
}

// malformed is the error of a response that is not HTTP/1.x as the client
// reads it, apart from one cut short.
func malformed(format string, args ...any) error {
	return fmt.Errorf("malformed response: "+format, args...)
}

// respHead is what a response's status line and headers say of it.
type respHead struct {
	code    int
	length  int64 // Content-Length; -1: none
	chunked bool
	close   bool // the server closes the connection after the response
}

// read reads one response, skipping 1xx ones before it, and says whether
// the server closes the connection after it.
func (c *loadConn) read() (loadResponse, bool, error) {
	var h respHead
	for {
		var err error
		if h, err = c.readHead(); err != nil {
			return loadResponse{}, false, err
		}
		if h.code >= 200 {
			break
		}
		if h.code == 101 {
			return loadResponse{}, false, malformed("unexpected %s to a request that asked for no upgrade", c.status)
		}
	}
	resp := loadResponse{Code: h.code, Status: c.status}
	if c.t.head || h.code == 204 || h.code == 304 {
		return resp, h.close, nil
	}
	var (
		n   int
		err error
	)
	switch {
	case h.chunked:
		n, err = c.readChunked()
	case h.length >= 0:
		n, err = readKeep(c.br, h.length, c.body, 0)
	default: // the body ends with the connection
		n, err = c.readToEOF()
		h.close = true
	}
	resp.Body = c.body[:n]
	return resp, h.close, err
}

// readHead reads a status line and the headers after it, keeping the
// status ("409 Conflict") in c.status.
func (c *loadConn) readHead() (respHead, error) {
	h := respHead{length: -1}
	line, err := c.readLine()
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) && c.br.Buffered() == 0 && len(line) == 0 {
			return h, errors.New("the server closed the connection before a response")
		}
		return h, fmt.Errorf("read the status line: %w", err)
	}
	// HTTP/1.x NNN[ reason]
	if len(line) < 12 || string(line[:7]) != "HTTP/1." || (line[7] != '0' && line[7] != '1') ||
		line[8] != ' ' || !isDigit(line[9]) || !isDigit(line[10]) || !isDigit(line[11]) ||
		(len(line) > 12 && line[12] != ' ') || line[9] == '0' {
		return h, malformed("status line %q", clip(line))
	}
	h.code = int(line[9]-'0')*100 + int(line[10]-'0')*10 + int(line[11]-'0')
	c.status = append(c.status[:0], line[9:]...)
	http10 := line[7] == '0'
	keepAlive := false
	for {
		line, err := c.readLine()
		if err != nil {
			return h, fmt.Errorf("read the headers: %w", err)
		}
		if len(line) == 0 {
			break
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || line[0] == ' ' || line[0] == '\t' {
			return h, malformed("header line %q", clip(line))
		}
		name, value := line[:colon], trimSpace(line[colon+1:])
		switch {
		case equalFold(name, "Content-Length"):
			n, ok := parseLength(value)
			if !ok || (h.length >= 0 && h.length != n) {
				return h, malformed("Content-Length %q", clip(value))
			}
			h.length = n
		case equalFold(name, "Transfer-Encoding"):
			switch {
			case equalFold(value, "chunked"):
				h.chunked = true
			case !equalFold(value, "identity"):
				return h, malformed("unsupported Transfer-Encoding %q", clip(value))
			}
		case equalFold(name, "Connection"):
			h.close = h.close || hasToken(value, "close")
			keepAlive = keepAlive || hasToken(value, "keep-alive")
		}
	}
	if http10 && !keepAlive {
		h.close = true
	}
	return h, nil
}

// readLine reads a line, without its CRLF (or bare LF), from c.br's
// buffer: valid until the next read. A line longer than the buffer is
// malformed; a line cut by the end of the connection, io.ErrUnexpectedEOF.
func (c *loadConn) readLine() ([]byte, error) {
	line, err := c.br.ReadSlice('\n')
	switch {
	case err == bufio.ErrBufferFull:
		return nil, malformed("a line longer than %d bytes: %q...", loadReadBuf, clip(line))
	case err == io.EOF:
		return line, io.ErrUnexpectedEOF
	case err != nil:
		return line, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// readChunked reads a chunked body into c.body, keeping what fits, and
// the trailers after it.
func (c *loadConn) readChunked() (int, error) {
	n := 0
	for {
		line, err := c.readLine()
		if err != nil {
			return n, fmt.Errorf("read a chunk: %w", err)
		}
		size, ok := parseChunkSize(line)
		if !ok {
			return n, malformed("chunk size %q", clip(line))
		}
		if size == 0 {
			for { // trailers, up to the blank line
				line, err := c.readLine()
				if err != nil {
					return n, fmt.Errorf("read the trailers: %w", err)
				}
				if len(line) == 0 {
					return n, nil
				}
			}
		}
		if n, err = readKeep(c.br, size, c.body, n); err != nil {
			return n, err
		}
		line, err = c.readLine()
		if err != nil {
			return n, fmt.Errorf("read a chunk: %w", err)
		}
		if len(line) != 0 {
			return n, malformed("chunk data longer than its size %d", size)
		}
	}
}

// readToEOF reads a body that ends with the connection.
func (c *loadConn) readToEOF() (int, error) {
	n := 0
	for n < len(c.body) {
		m, err := c.br.Read(c.body[n:])
		n += m
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("read the body: %w", err)
		}
	}
	if _, err := c.br.WriteTo(io.Discard); err != nil {
		return n, fmt.Errorf("read the body: %w", err)
	}
	return n, nil
}

// readKeep reads size bytes of a body from br, copying into buf from
// buf[n:] as many as fit, and returns how many buf holds.
func readKeep(br *bufio.Reader, size int64, buf []byte, n int) (int, error) {
	keep := int(min(size, int64(len(buf)-n)))
	m, err := io.ReadFull(br, buf[n:n+keep])
	n += m
	if err == nil && size > int64(keep) {
		_, err = br.Discard(int(size - int64(keep)))
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return n, fmt.Errorf("read the body: %w", err)
	}
	return n, nil
}

// parseLength parses a Content-Length: decimal digits, at most 1 TB.
func parseLength(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 12 {
		return 0, false
	}
	var n int64
	for _, d := range b {
		if !isDigit(d) {
			return 0, false
		}
		n = n*10 + int64(d-'0')
	}
	return n, true
}

// parseChunkSize parses a chunk's size line: hex digits, then maybe
// extensions after a ';', which it ignores.
func parseChunkSize(line []byte) (int64, bool) {
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i]
	}
	line = trimSpace(line)
	if len(line) == 0 || len(line) > 10 {
		return 0, false
	}
	var n int64
	for _, d := range line {
		var v byte
		switch {
		case isDigit(d):
			v = d - '0'
		case 'a' <= d && d <= 'f':
			v = d - 'a' + 10
		case 'A' <= d && d <= 'F':
			v = d - 'A' + 10
		default:
			return 0, false
		}
		n = n<<4 | int64(v)
	}
	return n, true
}

func isDigit(b byte) bool { return '0' <= b && b <= '9' }

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// equalFold reports whether b is s, ASCII case aside.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// hasToken reports whether the comma-separated list v names token.
func hasToken(v []byte, token string) bool {
	for len(v) > 0 {
		item := v
		if i := bytes.IndexByte(v, ','); i >= 0 {
			item, v = v[:i], v[i+1:]
		} else {
			v = nil
		}
		if equalFold(trimSpace(item), token) {
			return true
		}
	}
	return false
}

// clip cuts what an error quotes of a response to 100 bytes.
func clip(b []byte) []byte { return b[:min(len(b), 100)] }
