// Package fault gives tests backends they can take down and bring back:
// a redis-server or a mariadbd of their own on a loopback port, and a TCP
// proxy they can cut. A test that needs a server binary that is not
// installed skips, saying which; nothing else skips. Only tests import
// it.
package fault

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"
)

// startBound bounds how long a server may take to accept connections
// after it is started, on a busy machine.
const startBound = 60 * time.Second

// binary returns the path of a server binary, skipping t if it is not
// installed.
func binary(t testing.TB, paths ...string) string {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return p
		}
		if found, err := exec.LookPath(filepath.Base(p)); err == nil {
			return found
		}
	}
	t.Skipf("%s is not installed: the test that takes its server down cannot run", filepath.Base(paths[0]))
	return ""
}

// freePort returns a loopback port nothing listens on at the moment.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitAccepting waits until something accepts connections on addr, or
// until exited is closed (the server died) or startBound passes.
func waitAccepting(addr string, exited <-chan struct{}) error {
	deadline := time.Now().Add(startBound)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("the server exited before it accepted connections on %s", addr)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing accepts connections on %s after %v: %w", addr, startBound, err)
		}
	}
}

// process is a server process a test started.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{}
	log    *os.File
}

// start runs bin with args, its output to logPath, and waits until it
// accepts connections on addr.
func start(bin string, args []string, logPath, addr string) (*process, error) {
	log, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{}), log: log}
	go func() {
		cmd.Wait()
		close(p.exited)
	}()
	if err := waitAccepting(addr, p.exited); err != nil {
		p.stop()
		out, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("%s %v: %w\n%s", filepath.Base(bin), args, err, out)
	}
	return p, nil
}

// stop ends the process with SIGTERM, or SIGKILL if it lingers, and waits
// for it.
func (p *process) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(startBound):
		p.cmd.Process.Kill()
		<-p.exited
	}
	p.log.Close()
}

// Redis is a redis-server of one test's own on a loopback port, without
// persistence: stopped and started again, it is empty, as a Redis that
// lost its memory.
type Redis struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	proc *process
}

// StartRedis starts a redis-server for t, stopped when t ends. It skips t
// if /usr/bin/redis-server is not installed.
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	r := &Redis{t: t, bin: binary(t, "/usr/bin/redis-server"), dir: t.TempDir(), port: freePort(t)}
	r.Start()
	t.Cleanup(r.Stop)
	return r
}

// URL is the server's address as quan's --cache takes it.
func (r *Redis) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d", r.port) }

// Start starts the server again, on the same port, if it is stopped.
func (r *Redis) Start() {
	r.t.Helper()
	if r.proc != nil {
		return
	}
	args := []string{"--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", r.dir, "--protected-mode", "no"}
	p, err := start(r.bin, args, filepath.Join(r.dir, "redis.log"), r.Addr())
	if err != nil {
		r.t.Fatal(err)
	}
	r.proc = p
}

// Stop stops the server; connections to it are refused until Start.
func (r *Redis) Stop() {
	if r.proc != nil {
		r.proc.stop()
		r.proc = nil
	}
}

// Addr is the server's host:port.
func (r *Redis) Addr() string { return fmt.Sprintf("127.0.0.1:%d", r.port) }

// MariaDB is a mariadbd of a test binary's own, on a loopback port, with
// a root account without a password. Starting one takes seconds, so the
// binary shares one (SharedMariaDB) and its tests take turns: a test that
// stops it must not run in parallel with another that uses it.
type MariaDB struct {
	mu   sync.Mutex
	bin  string
	dir  string
	port int
	proc *process
	err  error
}

var shared struct {
	once sync.Once
	m    *MariaDB
}

// SharedMariaDB returns the test binary's mariadbd, made (by
// mariadb-install-db, in a temporary folder) and started the first time
// it is asked for, and started again if a test left it stopped. Call
// Shutdown from TestMain to stop it and remove its files. It skips t if
// mariadbd or mariadb-install-db is not installed.
func SharedMariaDB(t testing.TB) *MariaDB {
	t.Helper()
	bin := binary(t, "/usr/sbin/mariadbd")
	install := binary(t, "/usr/bin/mariadb-install-db")
	shared.once.Do(func() {
		m := &MariaDB{bin: bin}
		shared.m = m
		m.dir, m.err = os.MkdirTemp("", "quan-mariadb-")
		if m.err != nil {
			return
		}
		out, err := exec.Command(install, "--no-defaults", "--datadir="+filepath.Join(m.dir, "data"),
			"--auth-root-authentication-method=normal", "--skip-test-db", "--user="+currentUser()).CombinedOutput()
		if err != nil {
			m.err = fmt.Errorf("mariadb-install-db: %w\n%s", err, out)
			return
		}
		m.port = freePort(t)
	})
	m := shared.m
	if m.err != nil {
		t.Fatal(m.err)
	}
	m.Start(t)
	return m
}

// currentUser names the user running the test, whom mariadbd runs as.
func currentUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	if os.Geteuid() == 0 {
		return "root"
	}
	return strconv.Itoa(os.Geteuid())
}

// Shutdown stops the test binary's mariadbd, if one was started, and
// removes its files. TestMain calls it after the tests.
func Shutdown() {
	m := shared.m
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc != nil {
		m.proc.stop()
		m.proc = nil
	}
	if m.dir != "" {
		os.RemoveAll(m.dir)
	}
}

// Start starts the server, on the same port and data, if it is stopped.
func (m *MariaDB) Start(t testing.TB) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc != nil {
		return
	}
	args := []string{"--no-defaults", "--datadir=" + filepath.Join(m.dir, "data"), "--socket=" + filepath.Join(m.dir, "sock"),
		"--port=" + strconv.Itoa(m.port), "--bind-address=127.0.0.1", "--user=" + currentUser(),
		"--pid-file=" + filepath.Join(m.dir, "pid"), "--skip-log-bin", "--innodb-buffer-pool-size=32M",
		"--max-connections=200"}
	p, err := start(m.bin, args, filepath.Join(m.dir, "server.log"), m.Addr())
	if err != nil {
		t.Fatal(err)
	}
	m.proc = p
}

// Stop stops the server: connections to it are refused until Start.
func (m *MariaDB) Stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc != nil {
		m.proc.stop()
		m.proc = nil
	}
}

// Addr is the server's host:port.
func (m *MariaDB) Addr() string { return fmt.Sprintf("127.0.0.1:%d", m.port) }

// Database creates an empty database on the server for t, dropped when t
// ends if the server is up then, and returns its address as a mysql://
// URL, the form of quan's --store.
func (m *MariaDB) Database(t testing.TB) string {
	t.Helper()
	name := "quan_fault_" + rand.Text()[:12]
	if err := m.exec("CREATE DATABASE " + name + " CHARACTER SET utf8mb4"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.exec("DROP DATABASE IF EXISTS " + name) })
	return fmt.Sprintf("mysql://root@%s/%s", m.Addr(), name)
}

// exec runs stmt on the server.
func (m *MariaDB) exec(stmt string) error {
	ctx, cancel := context.WithTimeout(context.Background(), startBound)
	defer cancel()
	cfg := driver.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "tcp", m.Addr()
	conn, err := driver.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	if _, err := db.ExecContext(ctx, stmt); err != nil {
		return fmt.Errorf("%s: %w", stmt, err)
	}
	return nil
}

// Proxy forwards TCP connections from a loopback port to a target, until
// it is cut: a network between quan and a backend that fails.
type Proxy struct {
	t      testing.TB
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

// NewProxy forwards a loopback port to target until t ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	p := &Proxy{t: t, target: target, conns: map[net.Conn]bool{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(func() {
		p.Cut()
		p.wg.Wait()
	})
	return p
}

// Addr is the proxy's host:port, to connect to instead of the target's.
func (p *Proxy) Addr() string { return p.addr }

// Cut closes every connection through the proxy and refuses new ones, as
// a backend that died or a network that split.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// Restore accepts connections again on the same port.
func (p *Proxy) Restore() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		return
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.serve(ln)
}

// serve accepts on ln, which p.mu guards, until it is closed.
func (p *Proxy) serve(ln net.Listener) {
	p.ln = ln
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			if p.ln != ln { // cut meanwhile
				p.mu.Unlock()
				c.Close()
				up.Close()
				return
			}
			p.conns[c], p.conns[up] = true, true
			p.mu.Unlock()
			pipe := func(dst, src net.Conn) {
				io.Copy(dst, src)
				dst.Close()
				src.Close()
			}
			p.wg.Go(func() { pipe(up, c) })
			p.wg.Go(func() { pipe(c, up) })
		}
	})
}
