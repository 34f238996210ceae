package main

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/cmd/quan/internal/app"
	"github.com/quanhq/quan/mysql/mysqltest"
	"github.com/quanhq/quan/sms"
)

// TestNotifyKill queues SMS in a store that `quan worker` processes
// share, kills one with SIGKILL while the gateway (in this process)
// holds its batch, accepted but not answered, then lets two processes
// (another and the dead one restarted) finish. After the lease every
// message is delivered, none lost; the batch the dead one had out goes
// again with the same message ids, and the survivors count at least as
// many possible duplicates as the gateway saw.
func TestNotifyKill(t *testing.T) {
	testNotifyKill(t, testEnv(t))
}

// TestNotifyKillOnMySQL is the same with the processes on a MySQL store
// and, with QUAN_TEST_NATS, an external NATS bus.
func TestNotifyKillOnMySQL(t *testing.T) {
	env := testEnv(t)
	env["QUAN_STORE"] = mysqltest.URL(t)
	env["QUAN_CACHE"] = "none"
	if u := os.Getenv("QUAN_TEST_NATS"); u != "" {
		env["QUAN_BUS"] = u + "?stream=QUAN_NOTIFYKILL_" + strconv.FormatInt(time.Now().UnixNano(), 36) + "&namespace=nk" + strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	testNotifyKill(t, env)
}

// slowGateway accepts every signed request after a pause and counts the
// ids it received. Armed, it holds the next request after recording its
// ids (the provider accepted them) until released.
type slowGateway struct {
	mu    sync.Mutex
	seen  map[string]int
	n     int
	armed bool
	held  chan struct{} // closed once a request is held
	free  chan struct{} // closed to answer it
}

func (g *slowGateway) accept(ms []sms.Received) error {
	time.Sleep(30 * time.Millisecond)
	g.mu.Lock()
	for _, m := range ms {
		g.seen[m.ID]++
	}
	g.n += len(ms)
	hold := g.armed
	g.armed = false
	g.mu.Unlock()
	if hold {
		close(g.held)
		<-g.free
	}
	return nil
}

func (g *slowGateway) count() (received, distinct int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n, len(g.seen)
}

const notifyKillSecret = "kill-test-sms-secret-0123456789"

func testNotifyKill(t *testing.T, env map[string]string) {
	bin := buildQuan(t)
	const n = 20_000
	queueSMS(t, env, n)

	g := &slowGateway{seen: map[string]int{}, held: make(chan struct{}), free: make(chan struct{})}
	gw := httptest.NewServer(&sms.Receiver{Secret: notifyKillSecret, Accept: g.accept})
	defer gw.Close()
	defer func() {
		select {
		case <-g.free:
		default:
			close(g.free)
		}
	}()

	a := startDispatcher(t, bin, env, gw.URL)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if _, d := g.count(); d >= n/5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the gateway got too little within a minute")
		}
	}
	g.mu.Lock()
	g.armed = true
	g.mu.Unlock()
	select {
	case <-g.held:
	case <-time.After(time.Minute):
		t.Fatal("no request to hold within a minute")
	}
	a.kill() // its batch accepted, not answered, not recorded
	close(g.free)
	atKill, _ := g.count()
	b := startDispatcher(t, bin, env, gw.URL)
	defer b.stop()
	a = startDispatcher(t, bin, env, gw.URL)
	defer a.stop()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if _, d := g.count(); d >= n {
			break
		}
		if time.Now().After(deadline) {
			_, d := g.count()
			t.Fatalf("the gateway got %d of %d messages within 2 minutes of the kill", d, n)
		}
	}
	// The survivors record their last batches, then every message is sent.
	var counts []quan.NotificationCount
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		counts = notificationCounts(t, env, "kill:1")
		if len(counts) == 1 && counts[0].Status == quan.NotificationSent && counts[0].Count == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store holds %+v, want %d sent", counts, n)
		}
	}
	received, distinct := g.count()
	dupes := received - distinct
	const series = `quan_notification_possible_duplicates_total{channel="sms"}`
	counted := a.metric(t, series) + b.metric(t, series)
	t.Logf("%d received at the kill; in all %d received, %d distinct, %d duplicates; the survivors counted %v possible duplicates", atKill, received, distinct, dupes, counted)
	for id, k := range g.seen {
		var src string
		var user int
		if _, err := fmt.Sscanf(strings.Replace(id, "_", " ", 2), "kill.1 %d %s", &user, &src); err != nil || user < 1 || user > n || src != "sms" {
			t.Fatalf("the gateway got id %q (%d times), not one of the queued messages", id, k)
		}
	}
	if distinct != n {
		t.Fatalf("%d distinct ids delivered, want %d", distinct, n)
	}
	if dupes < 1 {
		t.Errorf("no duplicate delivered: the batch the dead process had out was not sent again")
	}
	if float64(dupes) > counted {
		t.Errorf("%d duplicates delivered, but the survivors counted only %v possible duplicates", dupes, counted)
	}
}

// queueSMS records n SMS of source kill:1 in the store env names.
func queueSMS(t *testing.T, env map[string]string, n int) {
	t.Helper()
	a, err := app.Open(context.Background(), app.Config{DataDir: env["QUAN_DATA"], StoreURL: cmp.Or(env["QUAN_STORE"], "sqlite:"), LogLevel: "warn"}, app.Local, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ns := make([]*quan.Notification, n)
	for i := range ns {
		ns[i] = &quan.Notification{Source: "kill:1", UserID: int64(i + 1), Channel: quan.NotifySMS, Address: fmt.Sprintf("+86138%08d", i+1),
			Kind: quan.MessageIssued, Vars: quan.MessageVars{TemplateName: "券"}}
	}
	if _, err := a.Backends.Store.RecordNotifications(t.Context(), time.Now(), ns); err != nil {
		t.Fatal(err)
	}
}

func notificationCounts(t *testing.T, env map[string]string, source string) []quan.NotificationCount {
	t.Helper()
	a, err := app.Open(context.Background(), app.Config{DataDir: env["QUAN_DATA"], StoreURL: cmp.Or(env["QUAN_STORE"], "sqlite:"), LogLevel: "warn"}, app.Local, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	counts, err := a.Backends.Store.NotificationCounts(t.Context(), source)
	if err != nil {
		t.Fatal(err)
	}
	return counts
}

// dispatcherProc is a `quan worker` sending SMS.
type dispatcherProc struct {
	cmd   *exec.Cmd
	admin string
}

var adminRE = regexp.MustCompile(`quan admin listening"? url=(http://\S+)`)

// startDispatcher starts `quan worker` on env's backends, sending SMS to
// gateway at most 2,000 a second in batches of 500 with a lease of 3 s,
// and returns once its admin listener is up.
func startDispatcher(t *testing.T, bin string, env map[string]string, gateway string) *dispatcherProc {
	t.Helper()
	args := []string{"worker", "--data", env["QUAN_DATA"], "--store", cmp.Or(env["QUAN_STORE"], "sqlite:"),
		"--sms-url", gateway, "--sms-rate", "2000", "--quiet-hours", "off", "--notify-lease", "3s"}
	for _, k := range []string{"cache", "bus"} {
		if v, ok := env["QUAN_"+strings.ToUpper(k)]; ok {
			args = append(args, "--"+k, v)
		}
	}
	return startAdminProc(t, bin, args, []string{"QUAN_SMS_SECRET=" + notifyKillSecret})
}

// startAdminProc starts quan with args and env added to the environment,
// logging at info with an admin listener on a free port, and returns
// once the admin listener is up.
func startAdminProc(t *testing.T, bin string, args, env []string) *dispatcherProc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), "QUAN_LOG_LEVEL=info", "QUAN_ADMIN_ADDR=127.0.0.1:0", "QUAN_DRAIN_DELAY=0"), env...)
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
			if m := adminRE.FindStringSubmatch(sc.Text()); m != nil {
				url <- strings.Replace(m[1], "[::]", "127.0.0.1", 1)
				break
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	select {
	case u := <-url:
		return &dispatcherProc{cmd: cmd, admin: u}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("quan worker did not start within 30s")
		return nil
	}
}

func (p *dispatcherProc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()
}

func (p *dispatcherProc) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.cmd.Wait()
}

// metric returns the value of the series (name and labels as scraped)
// on p's /metrics.
func (p *dispatcherProc) metric(t *testing.T, series string) float64 {
	t.Helper()
	res, err := http.Get(p.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("no %s on %s/metrics", series, p.admin)
	return 0
}
