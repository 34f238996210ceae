package console_test

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/xuri/excelize/v2"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/disk"
	"github.com/quanhq/quan/http/console"
	"github.com/quanhq/quan/inmem"
	"github.com/quanhq/quan/report"
	"github.com/quanhq/quan/rules"
	"github.com/quanhq/quan/sheet"
	"github.com/quanhq/quan/tasks"
)

// distribution is what withTasks gave the console: its task service and
// the data folder where uploads are kept.
type distribution struct {
	dir   string
	tasks *tasks.Service
	// report, if set before withTasks, writes the runner's failure
	// reports instead of report.Failures.
	report quan.FailureReport
}

// withTasks gives the console a tasks.Service over the test store and runs
// a real tasks.Runner with an in-process cache beside it, as quan serve
// does (the wiring of the API's tests, http/server_test.go).
func withTasks(d *distribution) func(t *testing.T, tc *testConsole, c *console.Console) {
	return func(t *testing.T, tc *testConsole, c *console.Console) {
		d.dir = t.TempDir()
		files := &disk.Files{Dir: d.dir}
		cache := inmem.NewCache()
		tc.tpls.Cache = cache
		dist := &tasks.Runner{
			Store: tc.store, Templates: tc.store, Coupons: tc.store, Cache: cache,
			Open: func(ctx context.Context, t *quan.Task) (quan.RowReader, error) {
				return sheet.OpenRows(t.FilePath, sheet.Options{Sheet: t.Sheet})
			},
			Report:       cmp.Or[quan.FailureReport](d.report, report.Failures{}),
			ReportPath:   files.ReportPath,
			Owner:        "console-test",
			PollInterval: 10 * time.Millisecond,
			Now:          tc.clock,
		}
		d.tasks = &tasks.Service{
			Tasks: tc.store, Templates: tc.store, Files: files,
			Check: func(ctx context.Context, path, fileName, name string) error {
				return sheet.Check(ctx, path, sheet.Options{Name: fileName, Sheet: name})
			},
			Count: func(ctx context.Context, path, name string) (int64, error) {
				return sheet.Count(ctx, path, sheet.Options{Sheet: name})
			},
			Wake: dist.Wake, Stalls: dist, Now: tc.clock, ChunkSize: 100, Outbox: tc.store,
			Facts: tc.store,
		}
		engine, err := rules.New(rules.Options{})
		if err != nil {
			t.Fatal(err)
		}
		d.tasks.Rules = engine
		c.Tasks = d.tasks
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			dist.Run(ctx)
		}()
		t.Cleanup(func() {
			stop()
			<-done
		})
	}
}

func (d *distribution) uploads(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir(filepath.Join(d.dir, "uploads"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return len(es)
}

// activeTemplate is an active template of shop with stock coupons, one a
// user.
func activeTemplate(t *testing.T, tc *testConsole, shop, stock int64) *quan.Template {
	t.Helper()
	who := quan.Identity{Role: quan.RoleMerchant, ShopNo: shop}
	tpl := createDraft(t, tc, shop, "满100减10")
	ctx := context.Background()
	if extra := stock - tpl.Stock; extra > 0 {
		if _, err := tc.tpls.IncreaseStock(ctx, who, tpl.ID, extra); err != nil {
			t.Fatal(err)
		}
	}
	tpl, err := tc.tpls.Activate(ctx, who, tpl.ID)
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

// usersFile is a CSV of 2,000 rows: users 1…1995, three invalid ids and
// two users named a second time.
func usersFile() []byte {
	var b bytes.Buffer
	b.WriteString("userId\n")
	for i := 1; i <= 1995; i++ {
		fmt.Fprintf(&b, "%d\n", i)
		switch i {
		case 500:
			b.WriteString("abc\n")
		case 1000:
			b.WriteString("0\n1\n")
		case 1500:
			b.WriteString("-5\n2\n")
		case 700, 1200: // three blank lines: no rows, no failures
			b.WriteString(strings.Repeat("\n", i/600))
		}
	}
	return b.Bytes()
}

// upload posts the distribution form as a browser does: the CSRF token
// first (unless csrf is false), then the fields in order, the file among
// them where "file" is named.
func (b *browser) upload(fields [][2]string, file []byte, csrf bool) (int, string, string) {
	b.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	if csrf {
		mw.WriteField("csrf", b.csrf)
	}
	for _, f := range fields {
		if f[0] == "file" {
			w, _ := mw.CreateFormFile("file", f[1])
			w.Write(file)
			continue
		}
		mw.WriteField(f[0], f[1])
	}
	mw.Close()
	req, _ := http.NewRequest(http.MethodPost, b.tc.URL+"/console/tasks", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := b.http.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	return b.read(resp)
}

var taskPath = regexp.MustCompile(`^/console/tasks/(\d+)`)

// taskID is the id of the task page at path.
func taskID(t *testing.T, path string) int64 {
	t.Helper()
	m := taskPath.FindStringSubmatch(path)
	if m == nil {
		t.Fatalf("%s is no task page", path)
	}
	id, _ := strconv.ParseInt(m[1], 10, 64)
	return id
}

// taskSnap is what the task page's stream sends.
type taskSnap struct {
	Status      quan.TaskStatus   `json:"status"`
	StatusText  map[string]string `json:"statusText"`
	DryRun      bool              `json:"dryRun"`
	Done        bool              `json:"done"`
	Percent     float64           `json:"percent"`
	Counts      quan.TaskCounts   `json:"counts"`
	Failed      map[string]int64  `json:"failed"`
	RowsTotal   string            `json:"rowsTotal"`
	RowsPerSec  float64           `json:"rowsPerSecond"`
	FailedTotal int64             `json:"failedTotal"`
}

// events reads task id's stream, as EventSource does, until its end
// event, and returns the snapshots.
func (b *browser) events(id int64) []taskSnap {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/console/tasks/%d/events", b.tc.URL, id), nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := b.http.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		body, _ := io.ReadAll(resp.Body)
		b.t.Fatalf("events of task %d: %d %s", id, resp.StatusCode, body)
	}
	var snaps []taskSnap
	var event, data string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data += strings.TrimPrefix(line, "data: ")
		case line == "":
			switch event {
			case "end":
				return snaps
			case "snapshot":
				var s taskSnap
				if err := json.Unmarshal([]byte(data), &s); err != nil {
					b.t.Fatalf("snapshot %s: %v", data, err)
				}
				snaps = append(snaps, s)
			}
			event, data = "", ""
		}
	}
	b.t.Fatalf("the stream of task %d ended without an end event: %v", id, sc.Err())
	return nil
}

func (b *browser) download(path string) (int, http.Header, []byte) {
	b.t.Helper()
	resp, err := b.http.Get(b.tc.URL + path)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, body
}

func uploadForm(tpl int64, dry bool, sendAt string) [][2]string {
	f := [][2]string{{"templateId", itoa(tpl)}, {"name", "双十一老客"}, {"file", "users.csv"}, {"sheet", ""},
		{"sendAt", sendAt}, {"notify", "inbox"}}
	if dry {
		f = append(f, [2]string{"dryRun", "1"})
	}
	return f
}

var admin = quan.Identity{Role: quan.RoleAdmin, Subject: "test"}

func TestTaskDryRunThenForReal(t *testing.T) {
	var d distribution
	tc := newConsole(t, withTasks(&d))
	tpl := activeTemplate(t, tc, 1001, 1990)
	b := tc.signedIn(t, "m1001")
	ctx := context.Background()

	status, _, body := b.get("/console/tasks/new?template=" + itoa(tpl.ID))
	if status != http.StatusOK {
		t.Fatalf("upload form: %d\n%s", status, body)
	}
	contains(t, body, `enctype="multipart/form-data"`, fmt.Sprintf(`<option value="%d" selected>`, tpl.ID),
		`name="dryRun" value="1" checked`, `type="datetime-local"`, `value="sms"`, `<label for="file">`)

	// A dry run: every row checked and counted by cause, nothing issued.
	status, path, body := b.upload(uploadForm(tpl.ID, true, "2026-11-11T20:00"), usersFile(), true)
	if status != http.StatusOK || !strings.Contains(path, "done=created") {
		t.Fatalf("upload: %d at %s\n%s", status, path, body)
	}
	dryID := taskID(t, path)
	contains(t, body, "这是预览", `data-events="/console/tasks/`+itoa(dryID)+`/events"`)
	snaps := b.events(dryID)
	last := snaps[len(snaps)-1]
	if !last.Done || last.Status != quan.TaskSucceeded || last.Percent != 100 || !last.DryRun {
		t.Fatalf("dry run ended as %+v", last)
	}
	if last.Counts.Rows != 2000 || last.Counts.Valid != 1995 || last.Counts.Issued != 0 || last.Counts.Blank != 3 ||
		last.Failed["invalid_id"] != 3 || last.Failed["duplicate_in_file"] != 2 || last.RowsTotal != "2000" {
		t.Fatalf("dry run counts %+v failed %v", last.Counts, last.Failed)
	}
	if got, _ := tc.tpls.Get(ctx, admin, tpl.ID); got.Stock != 1990 {
		t.Fatalf("a dry run took stock: %d left", got.Stock)
	}
	status, _, body = b.get("/console/tasks/" + itoa(dryID) + "?sendAt=2026-11-11T20%3A00")
	if status != http.StatusOK {
		t.Fatalf("dry run page: %d", status)
	}
	contains(t, body, `id="cause-invalid_id">3<`, `id="cause-duplicate_in_file">2<`, `data-field="counts.valid">1995<`,
		`data-field="counts.blank">3<`, "空行（已跳过，不算失败）",
		`action="/console/tasks/`+itoa(dryID)+`/real"`, `value="2026-11-11T20:00"`, "正式发放", "100.0%")
	if strings.Contains(body, "data-reload-on-end") {
		t.Error("a finished task's page would reload at its stream's end, for ever")
	}

	// For real, now, from the same file.
	status, path, body = b.post("/console/tasks/"+itoa(dryID)+"/real", url.Values{"sendAt": {""}})
	if status != http.StatusOK || !strings.Contains(path, "done=real") {
		t.Fatalf("distribute for real: %d at %s\n%s", status, path, body)
	}
	realID := taskID(t, path)
	if realID == dryID || strings.Contains(body, "这是预览") {
		t.Fatalf("real task %d page:\n%s", realID, body)
	}
	snaps = b.events(realID)
	last = snaps[len(snaps)-1]
	if !last.Done || last.Status != quan.TaskSucceeded || last.Percent != 100 || last.DryRun || last.StatusText["en"] != "Succeeded" {
		t.Fatalf("real run ended as %+v", last)
	}
	for _, s := range snaps[:len(snaps)-1] {
		if s.Percent >= 100 || s.Done {
			t.Errorf("a snapshot before the end: %+v", s)
		}
	}
	if last.Counts.Issued != 1990 || last.Failed["out_of_stock"] != 5 || last.Failed["invalid_id"] != 3 || last.Failed["duplicate_in_file"] != 2 {
		t.Fatalf("real run counts %+v failed %v", last.Counts, last.Failed)
	}
	if got, _ := tc.tpls.Get(ctx, admin, tpl.ID); got.Stock != 0 {
		t.Fatalf("stock left %d", got.Stock)
	}

	// The failure report, as CSV and as the workbook the runner wrote.
	want := map[string]string{"abc": "invalid_id", "0": "invalid_id", "-5": "invalid_id", "1": "duplicate_in_file", "2": "duplicate_in_file"}
	for u := 1991; u <= 1995; u++ {
		want[strconv.Itoa(u)] = "out_of_stock"
	}
	check := func(kind string, rows [][]string) {
		t.Helper()
		if len(rows) != 11 {
			t.Fatalf("%s has %d rows, want a header and 10:\n%v", kind, len(rows), rows)
		}
		// Every column reads in Chinese, then in English: the headers,
		// the reason and what it means.
		for i, h := range rows[0] {
			if !chineseFirst(h) {
				t.Errorf("%s: header %d %q is not in Chinese, then English", kind, i, h)
			}
		}
		for _, r := range rows[1:] {
			if !chineseFirst(r[2]) || !chineseFirst(r[4]) {
				t.Errorf("%s: row %q: its reason or details are not in Chinese, then English", kind, r)
			}
		}
		got := map[string]string{}
		for _, r := range rows[1:] {
			user := strings.TrimPrefix(r[1], "'")
			if _, dup := got[user]; dup && user != "1" && user != "2" {
				t.Errorf("%s: user %s twice", kind, user)
			}
			got[user] = r[3]
		}
		for u, c := range want {
			if got[u] != c {
				t.Errorf("%s: user %q failed %q, want %q", kind, u, got[u], c)
			}
		}
	}
	status, h, raw := b.download(fmt.Sprintf("/console/tasks/%d/failures.csv", realID))
	if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/csv") {
		t.Fatalf("failures.csv: %d %s", status, raw)
	}
	rows, err := csv.NewReader(bytes.NewReader(raw)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	check("failures.csv", rows)
	status, h, raw = b.download(fmt.Sprintf("/console/tasks/%d/failures.xlsx", realID))
	if status != http.StatusOK || !strings.Contains(h.Get("Content-Disposition"), "failures.xlsx") {
		t.Fatalf("failures.xlsx: %d %s", status, raw)
	}
	x, err := excelize.OpenReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	rows, err = x.GetRows(x.GetSheetName(0))
	if err != nil {
		t.Fatal(err)
	}
	check("failures.xlsx", rows)

	// The page offers to retry the five rows that ran out of stock, and
	// shows the notifications.
	status, _, body = b.get("/console/tasks/" + itoa(realID))
	if status != http.StatusOK {
		t.Fatalf("task page: %d", status)
	}
	contains(t, body, `action="/console/tasks/`+itoa(realID)+`/retry"`, "重试可重试的 5 行", "failures.xlsx", "failures.csv", "通知", "站内信")
	if strings.Contains(body, "/cancel") {
		t.Error("a finished task offers to cancel")
	}
	if _, err := tc.tpls.IncreaseStock(ctx, admin, tpl.ID, 10); err != nil {
		t.Fatal(err)
	}
	status, path, body = b.post("/console/tasks/"+itoa(realID)+"/retry", nil)
	if status != http.StatusOK || !strings.Contains(path, "done=retry") {
		t.Fatalf("retry: %d at %s\n%s", status, path, body)
	}
	retryID := taskID(t, path)
	retry, err := d.tasks.Get(ctx, admin, retryID)
	if err != nil || retry.RetryOf != realID {
		t.Fatalf("retry task %+v, %v", retry, err)
	}
	snaps = b.events(retryID)
	last = snaps[len(snaps)-1]
	if last.Status != quan.TaskSucceeded || last.Counts.Rows != 5 || last.Counts.Issued != 5 {
		t.Fatalf("retry ended as %+v", last)
	}
	// The dry run's page offers no retry: it issued nothing.
	if _, _, body := b.get("/console/tasks/" + itoa(dryID)); strings.Contains(body, "/retry") {
		t.Error("a dry run offers a retry")
	}

	status, _, body = b.get("/console/tasks")
	if status != http.StatusOK {
		t.Fatalf("task list: %d", status)
	}
	contains(t, body, `href="/console/tasks/`+itoa(retryID)+`"`, `href="/console/tasks/`+itoa(dryID)+`"`, "预览", "100.0%", "已完成")
	if strings.Index(body, "/console/tasks/"+itoa(retryID)+`"`) > strings.Index(body, "/console/tasks/"+itoa(dryID)+`"`) {
		t.Error("the list is not newest first")
	}
}

func TestTaskCancel(t *testing.T) {
	var d distribution
	tc := newConsole(t, withTasks(&d))
	tpl := activeTemplate(t, tc, 1001, 1000)
	b := tc.signedIn(t, "m1001")
	b.get("/console/tasks/new")
	// Scheduled for later (Shanghai time; the clock stands at 16:00 there).
	status, path, body := b.upload(uploadForm(tpl.ID, false, "2026-11-01T20:00"), []byte("userId\n1\n2\n3\n"), true)
	if status != http.StatusOK {
		t.Fatalf("upload: %d\n%s", status, body)
	}
	id := taskID(t, path)
	task, _ := d.tasks.Get(context.Background(), admin, id)
	if task.Status != quan.TaskPending || !task.SendAt.Equal(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)) {
		t.Fatalf("scheduled task %s at %s", task.Status, task.SendAt)
	}
	contains(t, body, `action="/console/tasks/`+itoa(id)+`/cancel"`, "data-reload-on-end", "待执行")
	status, path, body = b.post("/console/tasks/"+itoa(id)+"/cancel", nil)
	if status != http.StatusOK || !strings.Contains(path, "done=canceled") {
		t.Fatalf("cancel: %d at %s", status, path)
	}
	contains(t, body, "任务已取消", `id="cause-canceled">3<`)
	snaps := b.events(id)
	if last := snaps[len(snaps)-1]; last.Status != quan.TaskCanceled || last.Failed["canceled"] != 3 {
		t.Fatalf("canceled task streams %+v", last)
	}
	// Twice: the page says why not.
	status, _, body = b.post("/console/tasks/"+itoa(id)+"/cancel", nil)
	if status != http.StatusOK || !strings.Contains(body, `class="error"`) {
		t.Fatalf("cancel twice: %d\n%s", status, body)
	}
}

func TestTaskOtherShop(t *testing.T) {
	var d distribution
	tc := newConsole(t, withTasks(&d))
	tpl := activeTemplate(t, tc, 1001, 1000)
	b := tc.signedIn(t, "m1001")
	b.get("/console/tasks/new")
	_, path, _ := b.upload(uploadForm(tpl.ID, false, ""), []byte("userId\n1\nx\n"), true)
	id := taskID(t, path)
	b.events(id) // finished, with a failure report

	other := tc.signedIn(t, "m1002")
	for _, p := range []string{"", "/events", "/failures.csv", "/failures.xlsx"} {
		if status, _, _ := other.download(fmt.Sprintf("/console/tasks/%d%s", id, p)); status != http.StatusNotFound {
			t.Errorf("another shop's task%s: %d", p, status)
		}
	}
	other.get("/console/tasks")
	for _, p := range []string{"/cancel", "/retry", "/real"} {
		if status, _, _ := other.post(fmt.Sprintf("/console/tasks/%d%s", id, p), nil); status != http.StatusNotFound {
			t.Errorf("POST another shop's task%s: %d", p, status)
		}
	}
	if _, _, body := other.get("/console/tasks"); strings.Contains(body, fmt.Sprintf("/console/tasks/%d\"", id)) {
		t.Error("another shop's task is listed")
	}
	// Nor can it distribute with the first shop's template.
	before := d.uploads(t)
	status, _, body := other.upload(uploadForm(tpl.ID, false, ""), []byte("userId\n1\n"), true)
	if status != http.StatusBadRequest || !strings.Contains(body, `<span id="templateId-err"><span class="field-error"`) {
		t.Fatalf("another shop's template: %d\n%s", status, body)
	}
	if d.uploads(t) != before {
		t.Error("a refused upload kept its file")
	}
}

func TestTaskUploadRefused(t *testing.T) {
	var d distribution
	tc := newConsole(t, withTasks(&d))
	tpl := activeTemplate(t, tc, 1001, 1000)
	b := tc.signedIn(t, "m1001")
	b.get("/console/tasks/new")

	// Without the CSRF token first: refused before the file is read.
	status, _, _ := b.upload(uploadForm(tpl.ID, false, ""), usersFile(), false)
	if status != http.StatusForbidden {
		t.Fatalf("upload without the CSRF part: %d", status)
	}
	withLate := append([][2]string{{"file", "users.csv"}, {"csrf", b.csrf}}, uploadForm(tpl.ID, false, "")[:2]...)
	if status, _, _ := b.upload(withLate, usersFile(), false); status != http.StatusForbidden {
		t.Fatalf("upload with the CSRF part after the file: %d", status)
	}
	if n := d.uploads(t); n != 0 {
		t.Fatalf("refused uploads stored %d files", n)
	}

	// No file, and a time that is none: each said next to its input, the
	// rest kept.
	form := uploadForm(tpl.ID, false, "next friday")
	form[2] = [2]string{"other", ""} // no file part at all
	form = append(form, [2]string{"file", ""})
	status, _, body := b.upload(form, nil, true)
	if status != http.StatusBadRequest {
		t.Fatalf("bad form: %d\n%s", status, body)
	}
	contains(t, body, `<span id="sendAt-err"><span class="field-error" role="alert">&#34;next friday&#34; is not a date and time`,
		`value="双十一老客"`, `value="next friday"`)
	status, _, body = b.upload(append(uploadForm(tpl.ID, false, "")[:2], [2]string{"file", ""}), nil, true)
	if status != http.StatusBadRequest {
		t.Fatalf("no file: %d\n%s", status, body)
	}
	contains(t, body, `<span id="file-err"><span class="field-error" role="alert">is required`)
	// A file that is no list of users.
	status, _, body = b.upload(uploadForm(tpl.ID, false, ""), []byte{0x00, 0x01, 0xff}, true)
	if status != http.StatusBadRequest || !strings.Contains(body, `<span id="file-err"><span class="field-error"`) {
		t.Fatalf("a binary file: %d\n%s", status, body)
	}
	if n := d.uploads(t); n != 0 {
		t.Fatalf("refused uploads stored %d files", n)
	}
	if _, n, _ := d.tasks.List(context.Background(), admin, quan.TaskFilter{}); n != 0 {
		t.Fatalf("refused forms created %d tasks", n)
	}
}

// chineseFirst reports whether s reads in Chinese, then in English: it
// starts with a Han character and holds an English word.
func chineseFirst(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.Is(unicode.Han, r) && englishWord.MatchString(s)
}

var englishWord = regexp.MustCompile(`[A-Za-z]{3,}`)
