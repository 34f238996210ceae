package main

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/cmd/quan/internal/app"
	"github.com/quanhq/quan/mysql/mysqltest"
	"github.com/quanhq/quan/sheet"
)

// buildQuan builds the quan binary for tests that run it as a process.
func buildQuan(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "quan")
	// -buildvcs=true: the revision stamped in, whatever GOFLAGS says, so
	// that `quan version` shows it.
	out, err := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// proc is a running `quan serve` process.
type proc struct {
	cmd *exec.Cmd
	url string
}

var servingRE = regexp.MustCompile(`quan (serving"? url=(http://\S+)|worker running)`)

func startProc(t *testing.T, bin string, env map[string]string) *proc {
	return startQuan(t, bin, env, "serve")
}

// quanArgs are the flags of a test's `quan serve` or `quan worker` on the
// backends env names, quick to take over a task.
func quanArgs(env map[string]string, command string) []string {
	args := []string{command, "--data", env["QUAN_DATA"], "--store", cmp.Or(env["QUAN_STORE"], "sqlite:"),
		"--task-lease", "1s", "--task-poll", "20ms", "--chunk-size", "2000"}
	for _, k := range []string{"cache", "bus", "chunk-ack-wait", "chunk-stall"} {
		if v, ok := env["QUAN_"+strings.ToUpper(strings.ReplaceAll(k, "-", "_"))]; ok {
			args = append(args, "--"+k, v)
		}
	}
	return args
}

// startQuan starts `quan serve` or `quan worker` on the backends env names
// and returns once it runs.
func startQuan(t *testing.T, bin string, env map[string]string, command string) *proc {
	t.Helper()
	args := quanArgs(env, command)
	if command == "serve" {
		args = append(args, "--addr", "127.0.0.1:0")
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "QUAN_LOG_LEVEL=info", "QUAN_ADMIN_ADDR=127.0.0.1:0", "QUAN_DRAIN_DELAY=0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	url := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := servingRE.FindStringSubmatch(sc.Text()); m != nil {
				url <- strings.Replace(m[2], "[::]", "127.0.0.1", 1)
				break
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	select {
	case u := <-url:
		return &proc{cmd: cmd, url: u}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("quan %s did not start within 30s", command)
		return nil
	}
}

func (p *proc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()
}

// TestKillExactlyOnce kills a real quan process with SIGKILL at random
// moments of one distribution, restarting it each time, and then checks
// that every row has exactly one outcome, the stock fell by exactly the
// coupons issued and nobody holds more than the limit.
func TestKillExactlyOnce(t *testing.T) {
	testKillExactlyOnce(t, testEnv(t))
}

// TestKillExactlyOnceOnMySQL is the same test with the processes sharing a
// MySQL store.
func TestKillExactlyOnceOnMySQL(t *testing.T) {
	env := testEnv(t)
	env["QUAN_STORE"] = mysqltest.URL(t)
	testKillExactlyOnce(t, env)
}

func testKillExactlyOnce(t *testing.T, env map[string]string) {
	bin := buildQuan(t)
	const rows, stock = 150_000, 140_000
	tpl := localTemplate(t, env, stock, 1)
	file := filepath.Join(t.TempDir(), "users.xlsx")
	gen, err := sheet.GenerateFile(file, sheet.GenOptions{Rows: rows, Seed: 7, DupRate: 0.02, InvalidRate: 0.01, Format: sheet.GenXLSXShared})
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(runQuan(t, env, "token --role merchant --shop 1"))

	p := startProc(t, bin, env)
	c := &apiClient{t: t, base: p.url, token: tok}
	content, _ := os.ReadFile(file)
	id := c.upload(map[string]string{"name": "kill", "templateId": fmt.Sprint(tpl.ID)}, "users.xlsx", string(content))

	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	kills, midTask := 0, 0
	for kills < 4 {
		// Let the new process resume (once the dead one's lease expires)
		// and apply some chunks, then kill it at a random moment.
		base := c.task(id).ChunksDone
		var tk *quan.Task
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			tk = c.task(id)
			if tk.Status.Done() || tk.ChunksDone > base || time.Now().After(deadline) {
				break
			}
		}
		time.Sleep(time.Duration(r.IntN(150)) * time.Millisecond)
		if tk = c.task(id); tk.Status.Done() {
			break
		}
		p.kill()
		kills++
		if tk.ChunksDone > base {
			midTask++ // killed with part of the file applied since the last start
		}
		p = startProc(t, bin, env)
		c.base = p.url
	}
	final := c.wait(id)
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.cmd.Wait()
	t.Logf("killed %d times, %d of them mid-task; task %s after %d chunks: %+v", kills, midTask, final.Status, final.ChunksDone, final.Counts)
	if midTask < 2 {
		t.Fatalf("only %d kills hit the task while it ran: make it longer", midTask)
	}

	checkExactlyOnce(t, env, id, tpl, gen, rows, stock)
}

// checkExactlyOnce checks on the store that every row of task id has
// exactly one outcome, the stock fell by exactly the coupons issued and
// nobody holds more than the limit of 1; with a cache, that the cache
// agrees with the store on the stock.
func checkExactlyOnce(t *testing.T, env map[string]string, id int64, tpl *quan.Template, gen sheet.GenStats, rows, stock int64) {
	t.Helper()
	data := env["QUAN_DATA"]
	// Check the invariants on the store itself.
	a, err := app.Open(context.Background(), app.Config{DataDir: data, StoreURL: cmp.Or(env["QUAN_STORE"], "sqlite:"), CacheURL: env["QUAN_CACHE"], BusURL: env["QUAN_BUS"], LogLevel: "warn"}, app.Local, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx := context.Background()
	task, err := a.Tasks.Get(ctx, app.CLI, id)
	if err != nil {
		t.Fatal(err)
	}
	cnt := task.Counts
	if task.Status != quan.TaskSucceeded || cnt.Rows != rows || cnt.Issued+cnt.FailedTotal() != rows {
		t.Fatalf("task %s: %+v", task.Status, cnt)
	}
	valid := int64(gen.Unique)
	if cnt.Issued != min(valid, stock) || cnt.Failed.OutOfStock != max(0, valid-stock) ||
		cnt.Failed.Duplicate != int64(gen.Duplicates) || cnt.Failed.InvalidID != int64(gen.Invalid) {
		t.Fatalf("counts %+v for a file of %+v", cnt, gen)
	}
	got, err := a.Templates.Get(ctx, app.CLI, tpl.ID)
	if err != nil {
		t.Fatal(err)
	}
	stats, err := a.Tasks.Tasks.(quan.CouponStore).CouponStats(ctx, tpl.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got.TotalStock-got.Stock != cnt.Issued || stats.Coupons != cnt.Issued || stats.Users != cnt.Issued || stats.MaxPerUser > 1 {
		t.Fatalf("stock %d of %d, coupons %+v, issued %d", got.Stock, got.TotalStock, stats, cnt.Issued)
	}
	var n, last int64
	for {
		page, err := a.Tasks.Tasks.Failures(ctx, id, last, 5000)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range page {
			if f.Line <= last {
				t.Fatalf("failure lines out of order: %d after %d", f.Line, last)
			}
			last = f.Line
			n++
		}
		if len(page) < 5000 {
			break
		}
	}
	if n != cnt.FailedTotal() {
		t.Fatalf("%d failure rows recorded, %d counted", n, cnt.FailedTotal())
	}
	if c := a.Distributor.Cache; c != nil && strings.HasPrefix(env["QUAN_CACHE"], "redis") { // a shared cache, not this process's own
		// The runner reconciles the cache with the store as the task ends,
		// and a worker whose reload of the cache was under way then does
		// once it is done: the two agree within a few seconds, not at once.
		first, seen := int64(0), false
		start := time.Now()
		for deadline := start.Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			st, err := c.State(ctx, tpl.ID)
			if err != nil {
				t.Fatalf("cache state: %v", err)
			}
			if !seen {
				first, seen = st.Stock, true
			}
			if st.Stock == got.Stock {
				if first != got.Stock {
					t.Logf("the cache held a stock of %d when first read, %d (the store's) %v later", first, got.Stock, time.Since(start).Round(time.Millisecond))
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the cache holds a stock of %d, the store %d, %v after the task ended", st.Stock, got.Stock, time.Since(start).Round(time.Millisecond))
			}
		}
	}
}
