package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/cmd/quan/internal/app"
	"github.com/quanhq/quan/internal/integration"
	"github.com/quanhq/quan/mysql/mysqltest"
	natsbus "github.com/quanhq/quan/nats"
	"github.com/quanhq/quan/redis"
	"github.com/quanhq/quan/sheet"
)

// productionEnv names a fresh MySQL database, a Redis key prefix of its
// own and a NATS server of the test's own, listening on 127.0.0.1, which
// the test may restart. It skips without QUAN_TEST_MYSQL and
// QUAN_TEST_REDIS.
func productionEnv(t *testing.T) (map[string]string, *natsServer) {
	t.Helper()
	redisURL := integration.Need(t, integration.MySQL, integration.Redis)[1]
	env := testEnv(t)
	env["QUAN_STORE"] = mysqltest.URL(t)
	prefix := fmt.Sprintf("quantest%d:", rand.Uint32())
	env["QUAN_CACHE"] = redisURL + "?prefix=" + prefix
	t.Cleanup(func() { deleteRedisKeys(t, redisURL, prefix) })

	ns := &natsServer{t: t, dir: t.TempDir(), port: -1}
	ns.start()
	t.Cleanup(ns.stop)
	env["QUAN_BUS"] = fmt.Sprintf("nats://127.0.0.1:%d", ns.port)
	env["QUAN_CHUNK_ACK_WAIT"] = "3s"
	env["QUAN_CHUNK_STALL"] = "10s"
	return env, ns
}

// natsServer is a NATS JetStream server the test can restart on the same
// port and storage.
type natsServer struct {
	t    *testing.T
	dir  string
	port int
	srv  *natsbus.Server
}

func (n *natsServer) start() {
	n.t.Helper()
	srv, err := natsbus.StartListening(context.Background(), n.dir, n.port, nil)
	if err != nil {
		n.t.Fatal(err)
	}
	u, err := url.Parse(srv.ClientURL())
	if err != nil {
		n.t.Fatal(err)
	}
	n.port, _ = strconv.Atoi(u.Port())
	n.srv = srv
}

func (n *natsServer) stop() {
	if n.srv != nil {
		n.srv.Close()
		n.srv = nil
	}
}

// deleteRedisKeys deletes the keys a test wrote under prefix.
func deleteRedisKeys(t *testing.T, redisURL, prefix string) {
	c, err := redis.Open(context.Background(), redisURL, prefix)
	if err != nil {
		t.Error(err)
		return
	}
	defer c.Close()
	if err := c.Drop(context.Background()); err != nil {
		t.Error(err)
	}
}

// dropStreams deletes the streams a test's processes made on a shared
// NATS server.
func dropStreams(t *testing.T, natsURL, stream, namespace string) {
	b, err := natsbus.OpenConfig(context.Background(), natsURL, natsbus.Config{Stream: stream, Namespace: namespace})
	if err != nil {
		t.Error(err)
		return
	}
	defer b.Close()
	if err := b.Drop(context.Background()); err != nil {
		t.Error(err)
	}
}

// TestKillExactlyOnceInProduction runs one `quan serve` and two `quan
// worker` on MySQL, Redis and NATS, sharing one task's chunks over the
// bus, kills a random one of them with SIGKILL at random moments of the
// task (restarting it), restarts NATS once mid-task, and checks the
// invariants of the embedded kill test, and that Redis and MySQL agree on
// the stock.
func TestKillExactlyOnceInProduction(t *testing.T) {
	env, ns := productionEnv(t)
	bin := buildQuan(t)
	const rows, stock = 150_000, 140_000
	tpl := localTemplate(t, env, stock, 1)
	file := filepath.Join(t.TempDir(), "users.xlsx")
	gen, err := sheet.GenerateFile(file, sheet.GenOptions{Rows: rows, Seed: 11, DupRate: 0.02, InvalidRate: 0.01, Format: sheet.GenXLSXShared})
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(runQuan(t, env, "token --role merchant --shop 1"))

	procs := []*proc{startQuan(t, bin, env, "serve"), startQuan(t, bin, env, "worker"), startQuan(t, bin, env, "worker")}
	defer func() {
		for _, p := range procs {
			p.cmd.Process.Signal(syscall.SIGTERM)
			p.cmd.Wait()
		}
	}()
	c := &apiClient{t: t, base: procs[0].url, token: tok}
	content, _ := os.ReadFile(file)
	id := c.upload(map[string]string{"name": "kill in production", "templateId": fmt.Sprint(tpl.ID)}, "users.xlsx", string(content))

	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	kills, midTask, natsRestarts := 0, 0, 0
	for kills < 5 {
		base := c.task(id).ChunksDone
		var tk *quan.Task
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			tk = c.task(id)
			if tk.Status.Done() || tk.ChunksDone > base || time.Now().After(deadline) {
				break
			}
		}
		time.Sleep(time.Duration(r.IntN(100)) * time.Millisecond)
		if tk = c.task(id); tk.Status.Done() {
			break
		}
		if kills == 2 && natsRestarts == 0 {
			ns.stop()
			time.Sleep(300 * time.Millisecond)
			ns.start()
			natsRestarts++
			t.Logf("restarted NATS with %d of %d chunks applied", tk.ChunksDone, tk.ChunksTotal)
		}
		i := r.IntN(len(procs))
		procs[i].kill()
		kills++
		if tk.ChunksDone > base {
			midTask++
		}
		command := "worker"
		if i == 0 {
			command = "serve"
		}
		procs[i] = startQuan(t, bin, env, command)
		c.base = procs[0].url
	}
	final := c.wait(id)
	t.Logf("killed %d times, %d of them mid-task, NATS restarted %d times; task %s after %d chunks: %+v",
		kills, midTask, natsRestarts, final.Status, final.ChunksDone, final.Counts)
	if midTask < 2 || natsRestarts != 1 {
		t.Fatalf("only %d kills and %d NATS restarts hit the task while it ran: make it longer", midTask, natsRestarts)
	}
	checkExactlyOnce(t, env, id, tpl, gen, rows, stock)
}

// TestCacheLossDuringDistribution runs `quan distribute` on MySQL, Redis
// and NATS while the test deletes every Redis key of quan three times (a
// FLUSHALL or a restart of a Redis that keeps nothing on disk, as quan
// sees it) and a burst of concurrent stock increases goes on. Nothing is
// oversold, every coupon the stock allows is issued, and at the end Redis
// and MySQL agree on the stock.
func TestCacheLossDuringDistribution(t *testing.T) {
	env, _ := productionEnv(t)
	redisURL, prefix, _ := strings.Cut(env["QUAN_CACHE"], "?prefix=")
	const rows, stock, bursts, add = 200_000, 90_000, 40, 250
	tpl := localTemplate(t, env, stock, 1)
	file := filepath.Join(t.TempDir(), "users.csv")
	gen, err := sheet.GenerateFile(file, sheet.GenOptions{Rows: rows, Seed: 5, DupRate: 0.01, InvalidRate: 0.01, Format: sheet.GenCSV})
	if err != nil {
		t.Fatal(err)
	}

	// A second process's view of the same backends: it changes the stock
	// as a merchant would, through the template use case.
	cfg := app.Config{DataDir: env["QUAN_DATA"], StoreURL: env["QUAN_STORE"], CacheURL: env["QUAN_CACHE"], BusURL: env["QUAN_BUS"], LogLevel: "warn"}
	cfg.Runner.ChunkSize = 1000
	a, err := app.Open(t.Context(), cfg, app.Local, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx := context.Background()

	done := make(chan error, 1)
	go func() {
		var out, errOut syncBuffer
		dm := &Main{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return env[k] }}
		err := dm.Run(ctx, []string{"distribute", "--template", fmt.Sprint(tpl.ID), "--chunk-size", "1000", "--store", env["QUAN_STORE"],
			"--cache", env["QUAN_CACHE"], "--bus", env["QUAN_BUS"], "--data", env["QUAN_DATA"], file})
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, errOut.String())
		}
		done <- err
	}()

	// Wait for the task, then lose the cache three times while its chunks
	// apply, and increase the stock from many goroutines meanwhile.
	var task *quan.Task
	for deadline := time.Now().Add(30 * time.Second); task == nil || task.ChunksDone < 1; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no task applied a chunk in 30s: %+v", task)
		}
		ts, _, err := a.Tasks.List(ctx, app.CLI, quan.TaskFilter{ShopNo: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(ts) > 0 {
			task = ts[0]
		}
	}
	// Each increase says how many rows had been refused for want of stock
	// when it was done: none, or the stock it adds may have come too late
	// for the rows it was meant for.
	type increase struct {
		err        error
		outOfStock int64
	}
	burst := make(chan increase, bursts)
	for range bursts {
		go func() {
			time.Sleep(time.Duration(rand.IntN(100)) * time.Millisecond)
			_, err := a.Templates.IncreaseStock(ctx, app.CLI, tpl.ID, add)
			if err != nil {
				burst <- increase{err: err}
				return
			}
			cur, err := a.Tasks.Get(ctx, app.CLI, task.ID)
			if err != nil {
				burst <- increase{err: err}
				return
			}
			burst <- increase{outOfStock: cur.Counts.Failed.OutOfStock}
		}()
	}
	losses := 0
	for losses < 3 {
		cur, err := a.Tasks.Get(ctx, app.CLI, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		if cur.Status.Done() {
			break
		}
		deleteRedisKeys(t, redisURL, prefix)
		losses++
		time.Sleep(time.Duration(50+rand.IntN(100)) * time.Millisecond)
	}
	// Every increase came before the stock ran out, so every coupon of
	// the final stock was there to be issued.
	for range bursts {
		inc := <-burst
		if inc.err != nil {
			t.Fatalf("increase stock: %v", inc.err)
		}
		if inc.outOfStock > 0 {
			t.Fatalf("the stock ran out before an increase was done (%d rows refused): make the file longer", inc.outOfStock)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("quan distribute: %v", err)
	}
	if losses < 2 {
		t.Fatalf("the cache was lost only %d times before the task ended: make it longer", losses)
	}
	total := int64(stock + bursts*add)
	final, err := a.Tasks.Get(ctx, app.CLI, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.Templates.Get(ctx, app.CLI, tpl.ID)
	if err != nil {
		t.Fatal(err)
	}
	stats, err := a.Tasks.Tasks.(quan.CouponStore).CouponStats(ctx, tpl.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	cnt := final.Counts
	t.Logf("cache lost %d times; task %s: %+v; stock %d of %d", losses, final.Status, cnt, got.Stock, got.TotalStock)
	if final.Status != quan.TaskSucceeded || got.TotalStock != total {
		t.Fatalf("task %s, total stock %d; want succeeded, %d", final.Status, got.TotalStock, total)
	}
	if cnt.Issued != min(int64(gen.Unique), total) || stats.Coupons != cnt.Issued || got.Stock != total-cnt.Issued || stats.MaxPerUser != 1 {
		t.Fatalf("issued %d coupons (%+v) from a stock of %d with %d left, for %d valid users; want every coupon the stock allows and no more",
			cnt.Issued, stats, total, got.Stock, gen.Unique)
	}
	st, err := a.Distributor.Cache.State(ctx, tpl.ID)
	if err != nil {
		t.Fatalf("cache state after the task: %v", err)
	}
	if st.Stock != got.Stock {
		t.Fatalf("the cache holds a stock of %d, the store %d", st.Stock, got.Stock)
	}
}

// TestReadmeProduction runs the README's production walk-through as a
// user would paste it: the database it creates is a fresh one of the
// test's, Redis keys get a prefix of their own and the NATS stream a name
// of its own, the data folder is a temporary one and the server listens
// on a free port; everything else runs as written, once, in order, with
// `quan serve` and two `quan worker` as processes of their own started
// in the background and not waited for: the README waits for the server.
func TestReadmeProduction(t *testing.T) {
	natsURL := integration.Need(t, integration.MySQL, integration.Redis, integration.NATS)[2]
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := readmeBlocks(t, string(readme), "production")
	if len(blocks) != 1 {
		t.Fatalf("README has %d production blocks, want 1", len(blocks))
	}
	prod, _ := productionEnv(t)
	id := rand.Uint32()
	bin := buildQuan(t)
	env := map[string]string{"QUAN_LOG_LEVEL": "warn"}
	sh := newReadmeShell(t, env)
	var procs []*proc
	defer func() {
		for _, p := range procs {
			p.cmd.Process.Signal(syscall.SIGTERM)
			p.cmd.Wait()
		}
	}()
	for _, c := range splitCommands(blocks[0]) {
		var words []string
		if c.expect == "" && c.assign == "" {
			words = shellWords(t, c.text, sh.vars)
		}
		switch {
		case len(words) == 0:
		case strings.HasPrefix(c.text, "mysql -uroot -e 'CREATE DATABASE quan'"):
			// productionEnv made a fresh database; the export below uses it.
			continue
		case words[0] == "export":
			for _, w := range words[1:] {
				k, v, _ := strings.Cut(w, "=")
				switch k {
				case "QUAN_STORE":
					if v != "mysql://root@127.0.0.1:3306/quan" {
						t.Fatalf("README exports QUAN_STORE=%s, not the database it created", v)
					}
					v = prod["QUAN_STORE"]
				case "QUAN_CACHE":
					v += "?prefix=" + strings.SplitN(prod["QUAN_CACHE"], "?prefix=", 2)[1]
				case "QUAN_BUS":
					v = fmt.Sprintf("%s?stream=README%d&namespace=readme%d", natsURL, id, id)
					t.Cleanup(func() { dropStreams(t, natsURL, fmt.Sprintf("README%d", id), fmt.Sprintf("readme%d", id)) })
				case "QUAN_DATA":
					v = t.TempDir()
				}
				env[k] = v
			}
			continue
		case c.text == "go run ./cmd/quan serve &":
			p := launchQuan(t, bin, env, "serve")
			procs = append(procs, p)
			sh.base = p.url
			continue
		case strings.HasPrefix(c.text, "go run ./cmd/quan worker --admin-addr ") && strings.HasSuffix(c.text, " &"):
			// Each on an admin port of its own, as the README's: a free one
			// here (launchQuan).
			procs = append(procs, launchQuan(t, bin, env, "worker"))
			continue
		}
		if !sh.run(c) {
			t.Fatalf("README command not understood by the test: %q", c.text)
		}
	}
	sh.endBlock()
	if len(procs) != 3 {
		t.Fatalf("the walk-through started %d processes, want a server and two workers", len(procs))
	}
	if !slices.Contains(sh.last, "localhost:8080/api/v1/tasks/1") {
		t.Fatal("the walk-through does not end by reading the task")
	}
}

// launchQuan starts `quan serve` or `quan worker` on the backends env
// names, serve on a free port, and returns at once, as `go run ... &`
// does: the process may not serve yet.
func launchQuan(t *testing.T, bin string, env map[string]string, command string) *proc {
	t.Helper()
	args := quanArgs(env, command)
	url := ""
	if command == "serve" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		args = append(args, "--addr", addr)
		url = "http://" + addr
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "QUAN_LOG_LEVEL=warn", "QUAN_ADMIN_ADDR=127.0.0.1:0", "QUAN_DRAIN_DELAY=0")
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("quan %s printed:\n%s", command, logs.String())
		}
	})
	return &proc{cmd: cmd, url: url}
}

// TestBackendFlagErrors: a backend combination that cannot work is
// refused at start with a message that says what to use instead.
func TestBackendFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args, want string
	}{
		{"--cache bogus:", `--cache "bogus:": unknown cache (use mem:, redis://HOST:PORT or none)`},
		{"--bus kafka://x", `--bus "kafka://x": unknown bus (use embedded: or nats://HOST:PORT)`},
		{"--bus nats://127.0.0.1:1", "needs a store they share: use --store mysql://"},
		{"--cache redis://127.0.0.1:1", "--cache redis://127.0.0.1:1:"},
	} {
		env := testEnv(t)
		var stderr syncBuffer
		m := &Main{Stdout: &syncBuffer{}, Stderr: &stderr, Getenv: func(k string) string { return env[k] }}
		err := m.Run(t.Context(), append([]string{"worker", "--data", env["QUAN_DATA"]}, strings.Fields(c.args)...))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("quan worker %s: %v; want an error with %q", c.args, err, c.want)
		}
	}
}
