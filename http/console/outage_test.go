package console_test

import (
	"context"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/http/console"
	"github.com/quanhq/quan/report"
)

// TestStoreDownPages: with the store down (closed), the console answers
// its pages, its sign-in and its forms 503 with Retry-After and a page
// that says the store is unavailable, never 500.
func TestStoreDownPages(t *testing.T) {
	var d distribution
	tc := newConsole(t, withTasks(&d))
	tpl := activeTemplate(t, tc, 1001, 10)
	b := tc.signedIn(t, "m1001")
	b.get("/console/templates")
	csrf := b.csrf
	tc.db.Close()

	for _, tt := range []struct {
		method, path string
		form         url.Values
	}{
		{"GET", "/console/templates", nil},
		{"GET", "/console/templates/" + itoa(tpl.ID), nil},
		{"GET", "/console/tasks", nil},
		{"GET", "/console/tasks/new", nil},
		{"GET", "/console/stats", nil},
		{"POST", "/console/templates/" + itoa(tpl.ID) + "/pause", url.Values{"csrf": {csrf}}},
	} {
		var body io.Reader
		if tt.form != nil {
			body = strings.NewReader(tt.form.Encode())
		}
		req, _ := http.NewRequest(tt.method, tc.URL+tt.path, body)
		if tt.form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", tc.URL)
		}
		res, err := b.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("%s %s: %d, want 503:\n%s", tt.method, tt.path, res.StatusCode, page)
			continue
		}
		if ra, err := strconv.Atoi(res.Header.Get("Retry-After")); err != nil || ra < 1 {
			t.Errorf("%s %s: Retry-After %q", tt.method, tt.path, res.Header.Get("Retry-After"))
		}
		if !strings.Contains(string(page), "the store is unavailable") {
			t.Errorf("%s %s: the page does not say the store is down:\n%s", tt.method, tt.path, page)
		}
	}

	// Signing in reads the account from the store.
	fresh := tc.browser(t)
	if status, _, _ := fresh.get("/console/login"); status != http.StatusOK {
		t.Fatalf("the sign-in form needs no store: %d", status)
	}
	if status, _, page := fresh.post("/console/login", url.Values{"name": {"m1001"}, "password": {"password-m1001"}, "next": {"/console/templates"}}); status != http.StatusServiceUnavailable || !strings.Contains(page, "the store is unavailable") {
		t.Errorf("sign in: %d, want 503 saying the store is down:\n%s", status, page)
	}
}

// fullDisk is a FileStore on a disk with no room left, as disk.Files
// answers then.
type fullDisk struct{}

func (fullDisk) Save(ctx context.Context, r io.Reader, max int64) (quan.StoredFile, error) {
	n, _ := io.Copy(io.Discard, r)
	return quan.StoredFile{}, quan.NoSpace("the upload", n, 2048, fmt.Errorf("save upload: %w", syscall.ENOSPC))
}
func (fullDisk) Open(string) (io.ReadCloser, error) { return nil, quan.ErrNotFound }
func (fullDisk) Remove(string) error                { return nil }

// TestUploadOnAFullDiskPage: a distribution file the data folder has no
// room for answers a 507 page saying how much room it needs.
func TestUploadOnAFullDiskPage(t *testing.T) {
	var d distribution
	tc := newConsole(t, withTasks(&d), func(t *testing.T, tc *testConsole, c *console.Console) { d.tasks.Files = fullDisk{} })
	tpl := activeTemplate(t, tc, 1001, 10)
	b := tc.signedIn(t, "m1001")
	b.get("/console/tasks/new?template=" + itoa(tpl.ID))
	file := usersFile()
	status, _, body := b.upload(uploadForm(tpl.ID, false, ""), file, true)
	if status != http.StatusInsufficientStorage || !strings.Contains(body, fmt.Sprintf("it needs %d bytes and 2048 are free", len(file))) {
		t.Fatalf("upload on a full disk: %d\n%s", status, body)
	}
}

// fullReport is a FailureReport on a disk that is full until free is
// called.
type fullReport struct {
	mu   sync.Mutex
	full bool
}

func (f *fullReport) Write(ctx context.Context, path string, t *quan.Task, rows iter.Seq2[quan.Failure, error]) error {
	f.mu.Lock()
	full := f.full
	f.mu.Unlock()
	if full {
		return quan.NoSpace("the failure report", 0, 512, syscall.ENOSPC)
	}
	return report.Failures{}.Write(ctx, path, t, rows)
}

func (f *fullReport) free() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.full = false
}

// TestTaskStalledPage: a task page says the task is stalled, since when
// and why, while its runner tries again, and no more once it moves on.
func TestTaskStalledPage(t *testing.T) {
	rep := &fullReport{full: true}
	d := distribution{report: rep}
	tc := newConsole(t, withTasks(&d))
	tpl := activeTemplate(t, tc, 1001, 5000)
	b := tc.signedIn(t, "m1001")
	b.get("/console/tasks/new?template=" + itoa(tpl.ID))
	status, page, body := b.upload(uploadForm(tpl.ID, false, ""), usersFile(), true)
	if status != http.StatusOK || !strings.HasPrefix(page, "/console/tasks/") {
		t.Fatalf("upload: %d at %s\n%s", status, page, body)
	}
	page, _, _ = strings.Cut(page, "?")
	wait := func(what string, ok func(string) bool) string {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			_, _, body := b.get(page)
			if ok(body) {
				return body
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 20 s:\n%s", what, body)
			}
		}
	}
	body = wait("the stall shown", func(body string) bool { return strings.Contains(body, `id="stalled"`) })
	contains(t, body, "起停滞，正在重试", "no room in the data folder for the failure report")
	rep.free()
	wait("the task done, the stall gone", func(body string) bool {
		return !strings.Contains(body, `id="stalled"`) && strings.Contains(body, "failures.xlsx")
	})
}
