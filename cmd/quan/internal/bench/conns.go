package bench

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/cmd/quan/internal/cli"
	qhttp "github.com/quanhq/quan/http"
)

// connsBench are the flags of `quan bench conns`.
type connsBench struct {
	N    int
	Hold time.Duration
	Kind string // trickle, stall or idle
	Rate int    // bytes a second each trickling connection sends
	Bin  string
	// Args are more flags for quan serve, space-separated.
	Args string
}

// conns measures what slow clients cost `quan serve` with its defaults
// (or Args): it starts a server process, opens N connections of Kind
// against it, holds them Hold while a normal client keeps asking
// /healthz, and prints the server's RSS, Go heap and stacks and
// goroutines before and with them, per connection, and how many the
// server kept open.
func (c *Command) conns(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench conns", flag.ContinueOnError)
	b := connsBench{}
	fs.IntVar(&b.N, "n", 1000, "connections to open")
	fs.DurationVar(&b.Hold, "hold", 30*time.Second, "how long to hold them (the default is past the 20s body window, so a trickle below the minimum rate is cut off within it)")
	fs.StringVar(&b.Kind, "kind", "trickle", "what each connection does: trickle (a POST body at --rate), stall (a POST whose body stops after a byte), idle (a keep-alive connection after one GET)")
	fs.IntVar(&b.Rate, "rate", 1100, "with --kind trickle: bytes a second each connection sends (the server's default minimum is 1024)")
	fs.StringVar(&b.Bin, "quan-bin", "", "the quan binary to run as the server (default: this executable)")
	fs.StringVar(&b.Args, "serve-args", "", "more flags for quan serve, space-separated (e.g. \"--max-conns 500\")")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	switch {
	case b.N < 1:
		return cli.Usagef("bench conns: -n %d: want at least 1", b.N)
	case b.Hold <= 0:
		return cli.Usagef("bench conns: --hold %v: want more than 0", b.Hold)
	case b.Kind != "trickle" && b.Kind != "stall" && b.Kind != "idle":
		return cli.Usagef("bench conns: --kind %q: use trickle, stall or idle", b.Kind)
	case b.Kind == "trickle" && b.Rate < 1:
		return cli.Usagef("bench conns: --rate %d: want at least 1 byte a second", b.Rate)
	}
	srv, err := startConnsServer(ctx, b, c.Stderr)
	if err != nil {
		return err
	}
	defer srv.stop()

	out := c.Stdout
	what := map[string]string{
		"trickle": fmt.Sprintf("trickling %d bytes a second into POST /api/v1/templates", b.Rate),
		"stall":   "each stalled after the first byte of a POST body",
		"idle":    "each idle on keep-alive after a GET /healthz",
	}[b.Kind]
	fmt.Fprintf(out, "quan bench conns: %d connections %s, held %v; quan serve %s; %d cores\n",
		b.N, what, b.Hold, cmpOr(b.Args, "with its defaults"), runtime.NumCPU())
	before, err := srv.sample(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "server before: %s\n", before)

	load := &connLoad{bench: b, addr: srv.addr, token: srv.token}
	if err := load.open(ctx); err != nil {
		load.close()
		return err
	}
	normal := load.normalClient(ctx, srv.base)
	select {
	case <-time.After(b.Hold):
	case <-ctx.Done():
	}
	held := load.stillOpen()
	during, err := srv.sample(ctx)
	load.stop()
	stats := normal()
	open, times := load.stillOpen(), load.closedTimes()
	load.close()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "server with them: %s\n", during)
	if held > 0 {
		fmt.Fprintf(out, "per connection held (%d): %s\n", held, perConn(before, during, held))
	} else {
		fmt.Fprintf(out, "per connection held: none held\n")
	}
	fmt.Fprintf(out, "open at the end: %d of %d; closed by the server: %d%s\n", open, b.N, b.N-open, times)
	fmt.Fprintf(out, "normal client meanwhile: %s\n", stats)
	return ctx.Err()
}

func cmpOr(s, or string) string {
	if s == "" {
		return or
	}
	return "with " + s
}

// connsServer is the quan serve process of the bench.
type connsServer struct {
	cmd    *exec.Cmd
	dir    string
	addr   string // host:port of the API
	base   string // its URL
	admin  string // the admin listener's URL
	token  string // a merchant's bearer token
	exited chan struct{}
}

var (
	servingLine = regexp.MustCompile(`msg="quan serving" url=(\S+)`)
	adminLine   = regexp.MustCompile(`msg="quan admin listening" url=(\S+)`)
)

// startConnsServer starts quan serve on free ports in a temporary data
// folder and returns once it serves.
func startConnsServer(ctx context.Context, b connsBench, stderr io.Writer) (*connsServer, error) {
	bin := b.Bin
	if bin == "" {
		var err error
		if bin, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("bench conns: %w", err)
		}
	}
	dir, err := os.MkdirTemp("", "quan-bench-conns-")
	if err != nil {
		return nil, fmt.Errorf("bench conns: %w", err)
	}
	secret := make([]byte, 32)
	rand.Read(secret)
	s := &connsServer{dir: dir, exited: make(chan struct{})}
	tokens, err := qhttp.NewTokens([]byte(hex.EncodeToString(secret)), nil)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if s.token, err = tokens.Mint(quan.Identity{Role: quan.RoleMerchant, ShopNo: 1}, 24*time.Hour); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// At info, for the lines naming the listeners; the access log's
	// lines are dropped below.
	args := []string{"serve", "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--data", dir,
		"--jwt-secret", hex.EncodeToString(secret), "--drain-delay", "0", "--log-level", "info", "--log-format", "text"}
	args = append(args, strings.Fields(b.Args)...)
	s.cmd = exec.Command(bin, args...)
	pipe, err := s.cmd.StderrPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("bench conns: start %s: %w", bin, err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if m := adminLine.FindStringSubmatch(line); m != nil {
				s.admin = m[1]
				continue
			}
			if m := servingLine.FindStringSubmatch(line); m != nil {
				s.base = m[1]
				s.addr = strings.TrimPrefix(s.base, "http://")
				close(ready)
				continue
			}
			if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
				fmt.Fprintln(stderr, "quan serve:", line)
			}
		}
		io.Copy(io.Discard, pipe)
	}()
	go func() {
		s.cmd.Wait()
		close(s.exited)
	}()
	select {
	case <-ready:
		return s, nil
	case <-s.exited:
		err = fmt.Errorf("bench conns: quan serve exited at start: %v", s.cmd.ProcessState)
	case <-time.After(60 * time.Second):
		err = errors.New("bench conns: quan serve did not start within 60s")
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.stop()
	return nil, err
}

// stop ends the server and removes its data folder.
func (s *connsServer) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
	}
	os.RemoveAll(s.dir)
}

// memSample is the server's memory at one moment, after a GC.
type memSample struct {
	rss, heap, stacks int64 // bytes
	goroutines        int64
}

func (m memSample) String() string {
	return fmt.Sprintf("RSS %s, Go heap in use %s, stacks %s, %d goroutines",
		mib(m.rss), mib(m.heap), mib(m.stacks), m.goroutines)
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func perConn(a, b memSample, n int) string {
	per := func(x, y int64) string { return fmt.Sprintf("%.1f KiB", float64(y-x)/float64(n)/1024) }
	return fmt.Sprintf("RSS %s, heap %s, stacks %s, heap+stacks %s, %.2f goroutines",
		per(a.rss, b.rss), per(a.heap, b.heap), per(a.stacks, b.stacks),
		per(a.heap+a.stacks, b.heap+b.stacks), float64(b.goroutines-a.goroutines)/float64(n))
}

// sample collects garbage in the server (pprof's heap profile with
// gc=1), then reads its RSS from /proc and its Go memory from /metrics.
func (s *connsServer) sample(ctx context.Context) (memSample, error) {
	var m memSample
	if s.admin == "" {
		return m, errors.New("bench conns: the server has no admin listener")
	}
	get := func(path string) (string, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.admin+path, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", fmt.Errorf("bench conns: %s: %w", path, err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		return string(b), err
	}
	if _, err := get("/debug/pprof/heap?gc=1"); err != nil {
		return m, err
	}
	metrics, err := get("/metrics")
	if err != nil {
		return m, err
	}
	for _, line := range strings.Split(metrics, "\n") {
		name, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		switch name {
		case "go_memstats_heap_inuse_bytes":
			m.heap = int64(v)
		case "go_memstats_stack_inuse_bytes":
			m.stacks = int64(v)
		case "go_goroutines":
			m.goroutines = int64(v)
		case "process_resident_memory_bytes":
			m.rss = int64(v)
		}
	}
	if rss, err := procRSS(s.cmd.Process.Pid); err == nil {
		m.rss = rss
	}
	return m, nil
}

// procRSS reads VmRSS from /proc/PID/status.
func procRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				return kb << 10, err
			}
		}
	}
	return 0, errors.New("no VmRSS")
}

// connLoad is the bench's connections.
type connLoad struct {
	bench connsBench
	addr  string
	token string

	conns   []net.Conn
	opened  time.Time
	closed  []atomic.Int64 // ns after opened when the server closed it; 0 while open
	done    chan struct{}
	writers sync.WaitGroup
	once    sync.Once
}

// open opens every connection and starts what it does.
func (l *connLoad) open(ctx context.Context) error {
	l.done = make(chan struct{})
	l.closed = make([]atomic.Int64, l.bench.N)
	l.opened = time.Now()
	var d net.Dialer
	for i := range l.bench.N {
		c, err := d.DialContext(ctx, "tcp", l.addr)
		if err != nil {
			return fmt.Errorf("bench conns: connection %d: %w", i+1, err)
		}
		l.conns = append(l.conns, c)
		br := bufio.NewReader(c)
		switch l.bench.Kind {
		case "idle":
			fmt.Fprint(c, "GET /healthz HTTP/1.1\r\nHost: quan\r\n\r\n")
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				return fmt.Errorf("bench conns: connection %d: %w", i+1, err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		default:
			// Under 1 MiB, the API's largest JSON body: read in full by
			// the handler, which never sees its end.
			fmt.Fprintf(c, "POST /api/v1/templates HTTP/1.1\r\nHost: quan\r\nAuthorization: Bearer %s\r\n"+
				"Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{", l.token)
		}
		l.writers.Go(func() {
			// Whatever comes back, the server answered or closed: the
			// connection is no longer held.
			br.ReadByte()
			l.closed[i].Store(max(int64(time.Since(l.opened)), 1))
		})
	}
	if l.bench.Kind == "trickle" {
		l.writers.Go(l.trickle)
	}
	return nil
}

// trickle sends Rate bytes a second on every connection, each second.
func (l *connLoad) trickle() {
	chunk := []byte(strings.Repeat(" ", l.bench.Rate))
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-l.done:
			return
		case <-tick.C:
		}
		for i, c := range l.conns {
			if l.closed[i].Load() != 0 {
				continue
			}
			c.SetWriteDeadline(time.Now().Add(time.Second))
			c.Write(chunk)
		}
	}
}

// normalClient asks GET /healthz once a second on fresh connections
// until the returned function is called, which reports.
func (l *connLoad) normalClient(ctx context.Context, base string) func() string {
	var (
		ok, failed int
		slowest    time.Duration
		stop       = make(chan struct{})
		done       = make(chan struct{})
	)
	go func() {
		defer close(done)
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			start := time.Now()
			res, err := client.Get(base + "/healthz")
			took := time.Since(start)
			if err == nil {
				res.Body.Close()
			}
			if err != nil || res.StatusCode != http.StatusOK {
				failed++
				continue
			}
			ok++
			slowest = max(slowest, took)
		}
	}()
	return func() string {
		close(stop)
		<-done
		return fmt.Sprintf("%d GET /healthz answered 200, %d failed, slowest %v", ok, failed, slowest.Round(10*time.Microsecond))
	}
}

// stop stops the trickle.
func (l *connLoad) stop() { l.once.Do(func() { close(l.done) }) }

// stillOpen is how many connections the server has not closed.
func (l *connLoad) stillOpen() int {
	n := 0
	for i := range l.conns {
		if l.closed[i].Load() == 0 {
			n++
		}
	}
	return n
}

// closedTimes says when the server closed the connections it closed.
func (l *connLoad) closedTimes() string {
	var ts []time.Duration
	for i := range l.conns {
		if ns := l.closed[i].Load(); ns != 0 {
			ts = append(ts, time.Duration(ns))
		}
	}
	if len(ts) == 0 {
		return ""
	}
	slices.Sort(ts)
	return fmt.Sprintf(", %v to %v after they opened", ts[0].Round(100*time.Millisecond), ts[len(ts)-1].Round(100*time.Millisecond))
}

// close closes every connection and waits for the goroutines.
func (l *connLoad) close() {
	l.stop()
	for _, c := range l.conns {
		c.Close()
	}
	l.writers.Wait()
}
