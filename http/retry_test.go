package http_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/xuri/excelize/v2"

	"github.com/quanhq/quan"
	qhttp "github.com/quanhq/quan/http"
	"github.com/quanhq/quan/tasks"
)

// Users of the retry tests: 19-digit ids, which a retry must keep to the
// last digit.
const (
	userA = "1234567890123456789"
	userB = "9223372036854775807"
	userC = "9223372036854775806"
	userD = "1000000000000000001"
)

// retryXLSX is a workbook of one row of every cause for a template of
// stock 2 and limit 1 whose user 900 holds a coupon already: A and B are
// issued, C and D run out of stock, 900 is at its limit, and the rest can
// never succeed.
func retryXLSX(t *testing.T) []byte {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	rows := [][]any{
		{"userId"},
		{userA},                 // 2 issued
		{"abc"},                 // 3 invalid_id
		{userA},                 // 4 duplicate_in_file
		{"900"},                 // 5 limit_reached
		{userB},                 // 6 issued: the last of the stock
		{userC},                 // 7 out_of_stock
		{1234567890123456789.0}, // 8 inexact_number: a double's digits
		{userD},                 // 9 out_of_stock
	}
	for i, r := range rows {
		cell, _ := excelize.CoordinatesToCellName(1, i+1)
		if err := f.SetSheetRow("Sheet1", cell, &r); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	if err := f.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// retry posts a retry of task id and returns the answer. A refused
// retry must leave no file in the data folder.
func (ts *testServer) retry(t *testing.T, token string, id int64, body any) response {
	t.Helper()
	before := uploads(t, ts.dir)
	r := ts.do(t, "POST", fmt.Sprintf("/api/v1/tasks/%d/retry", id), token, body)
	if after := uploads(t, ts.dir); r.Status >= 400 && after != before {
		t.Fatalf("a refused retry (%d %s) left %d files in uploads, %d before", r.Status, r.Problem.Code, after, before)
	}
	return r
}

// uploads counts the files in the uploads folder of dir.
func uploads(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "uploads"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return len(entries)
}

// holds fails unless user holds n coupons of template tpl.
func (ts *testServer) holds(t *testing.T, user string, tpl int64, n int) {
	t.Helper()
	id, ok := quan.ParseUserID(user)
	if !ok {
		t.Fatalf("%q is not a user id", user)
	}
	cs, err := ts.store.UserCoupons(context.Background(), id, tpl)
	if err != nil || len(cs) != n {
		t.Fatalf("user %s holds %d coupons of template %d (%v), want %d", user, len(cs), tpl, err, n)
	}
}

// setupRetry makes the task of retryXLSX for shop 1001, finished, and
// returns the merchant's token, the template and the task.
func setupRetry(t *testing.T, ts *testServer) (string, quan.Template, qhttp.TaskView) {
	t.Helper()
	tok := ts.merchant(t, 1001)
	tpl := ts.activeTemplate(t, tok, 3, 1)
	ts.distribute(t, tok, tpl.ID, "first.csv", []byte("userId\n900\n"), nil)
	task := ts.distribute(t, tok, tpl.ID, "users.xlsx", retryXLSX(t), map[string]string{"name": "双十一", "notify": "inbox"})
	want := quan.TaskCounts{Rows: 8, Valid: 2, Issued: 2, Failed: quan.FailedCounts{
		InvalidID: 1, Duplicate: 1, LimitReached: 1, OutOfStock: 2, InexactNumber: 1}}
	if task.Status != quan.TaskSucceeded || task.Counts != want || task.RetryOf != 0 {
		t.Fatalf("task %s %+v retryOf %d, want succeeded %+v", task.Status, task.Counts, task.RetryOf, want)
	}
	return tok, tpl, task
}

func TestRetryTask(t *testing.T) {
	ts := newTestServer(t)
	tok, tpl, task := setupRetry(t, ts)
	ts.do(t, "POST", loc(tpl.ID)+"/stock", tok, map[string]any{"amount": 10}).want(t, 200, "")

	r := ts.retry(t, tok, task.ID, nil)
	r.want(t, http.StatusCreated, "")
	var got qhttp.RetryView
	r.decode(t, &got)
	wantSkipped := tasks.SkippedCounts{InvalidID: 1, InexactNumber: 1, Duplicate: 1}
	if got.Retried != 3 || got.Skipped != wantSkipped || got.SkippedTotal != 3 || got.RetryOf != task.ID ||
		got.TemplateID != tpl.ID || got.Name != fmt.Sprintf("双十一 (retry of task %d)", task.ID) ||
		len(got.Notify) != 1 || got.Notify[0] != quan.NotifyInbox || got.ID == task.ID {
		t.Fatalf("retry answered %s", r.Body)
	}
	if l := r.Header.Get("Location"); l != fmt.Sprintf("/api/v1/tasks/%d", got.ID) {
		t.Fatalf("Location %q", l)
	}
	if !strings.Contains(string(r.Body), fmt.Sprintf(`"retryOf":%d`, task.ID)) {
		t.Fatalf("the retry's JSON lacks retryOf: %s", r.Body)
	}

	retry := ts.waitTask(t, tok, got.ID)
	want := quan.TaskCounts{Rows: 3, Valid: 2, Issued: 2, Failed: quan.FailedCounts{LimitReached: 1}}
	if retry.Status != quan.TaskSucceeded || retry.Counts != want || retry.RetryOf != task.ID {
		t.Fatalf("retry task %s %+v retryOf %d, want succeeded %+v retrying %d", retry.Status, retry.Counts, retry.RetryOf, want, task.ID)
	}
	for _, u := range []string{userA, userB, userC, userD, "900"} {
		ts.holds(t, u, tpl.ID, 1)
	}
	rows := ts.reportRows(t, tok, retry.ID)
	if len(rows) != 1 || rows[0][1] != "900" || rows[0][3] != "limit_reached" {
		t.Fatalf("retry's report %q, want user 900 at its limit", rows)
	}

	t.Run("OntoAnotherTemplate", func(t *testing.T) {
		other := ts.activeTemplate(t, tok, 5, 1)
		r := ts.retry(t, tok, retry.ID, map[string]any{"templateId": other.ID, "name": "to the other template"})
		r.want(t, http.StatusCreated, "")
		var got qhttp.RetryView
		r.decode(t, &got)
		if got.Retried != 1 || got.Skipped.Total() != 0 || got.TemplateID != other.ID || got.Name != "to the other template" || got.RetryOf != retry.ID {
			t.Fatalf("retry answered %s", r.Body)
		}
		done := ts.waitTask(t, tok, got.ID)
		if done.Status != quan.TaskSucceeded || done.Counts.Issued != 1 || done.Counts.Rows != 1 {
			t.Fatalf("retry onto template %d: %s %+v", other.ID, done.Status, done.Counts)
		}
		ts.holds(t, "900", other.ID, 1)
	})
	t.Run("LongNameIsCut", func(t *testing.T) {
		long := strings.Repeat("长", quan.MaxNameLen)
		held := ts.distribute(t, tok, tpl.ID, "held.csv", []byte("userId\n900\n"), map[string]string{"name": long})
		r := ts.retry(t, tok, held.ID, nil)
		r.want(t, http.StatusCreated, "")
		var got qhttp.RetryView
		r.decode(t, &got)
		suffix := fmt.Sprintf(" (retry of task %d)", held.ID)
		if n := len([]rune(got.Name)); n != quan.MaxNameLen || !strings.HasSuffix(got.Name, suffix) || !strings.HasPrefix(got.Name, "长长") {
			t.Fatalf("retry of a task named with %d runes is named %q (%d runes)", quan.MaxNameLen, got.Name, n)
		}
		ts.waitTask(t, tok, got.ID)
	})
	t.Run("ListedAndReadWithRetryOf", func(t *testing.T) {
		var read qhttp.TaskView
		ts.do(t, "GET", fmt.Sprintf("/api/v1/tasks/%d", retry.ID), tok, nil).decode(t, &read)
		if read.RetryOf != task.ID {
			t.Fatalf("GET retry task: retryOf %d, want %d", read.RetryOf, task.ID)
		}
		var page struct{ Items []qhttp.TaskView }
		ts.do(t, "GET", "/api/v1/tasks", tok, nil).decode(t, &page)
		for _, it := range page.Items {
			if it.ID == retry.ID && it.RetryOf != task.ID || it.ID == task.ID && it.RetryOf != 0 {
				t.Fatalf("listed task %d with retryOf %d", it.ID, it.RetryOf)
			}
		}
	})
}

func TestRetryTaskRefused(t *testing.T) {
	ts := newTestServer(t)
	tok, tpl, task := setupRetry(t, ts)
	other := ts.merchant(t, 2002)
	otherTpl := ts.activeTemplate(t, other, 10, 1)
	user := ts.token(t, quan.Identity{Role: quan.RoleUser, UserID: 5})
	path := fmt.Sprintf("/api/v1/tasks/%d/retry", task.ID)

	t.Run("AnotherShop", func(t *testing.T) {
		ts.retry(t, other, task.ID, nil).want(t, 404, quan.ENOTFOUND)
	})
	t.Run("UserToken", func(t *testing.T) {
		ts.retry(t, user, task.ID, nil).want(t, 403, quan.EFORBIDDEN)
	})
	t.Run("NoToken", func(t *testing.T) {
		ts.do(t, "POST", path, "", nil).want(t, 401, quan.EUNAUTHORIZED)
	})
	t.Run("NoSuchTask", func(t *testing.T) {
		ts.retry(t, tok, 99999, nil).want(t, 404, quan.ENOTFOUND)
	})
	t.Run("AnotherShopsTemplate", func(t *testing.T) {
		r := ts.retry(t, tok, task.ID, map[string]any{"templateId": otherTpl.ID})
		r.want(t, 400, quan.EINVALID)
		if !r.hasField("templateId") {
			t.Fatalf("errors %+v do not name templateId", r.Problem.Errors)
		}
	})
	t.Run("AdminOntoAnotherShopsTemplate", func(t *testing.T) {
		admin := ts.token(t, quan.Identity{Role: quan.RoleAdmin, Subject: "ops"})
		r := ts.retry(t, admin, task.ID, map[string]any{"templateId": otherTpl.ID})
		r.want(t, 400, quan.EINVALID)
		if !r.hasField("templateId") || !strings.Contains(r.Problem.Errors[0].Message, "shop 1001") {
			t.Fatalf("errors %+v do not say the template is not of shop 1001", r.Problem.Errors)
		}
	})
	t.Run("EndedTemplate", func(t *testing.T) {
		ended := ts.activeTemplate(t, tok, 10, 1)
		ts.do(t, "POST", loc(ended.ID)+"/terminate", tok, nil).want(t, 200, "")
		r := ts.retry(t, tok, task.ID, map[string]any{"templateId": ended.ID})
		r.want(t, 400, quan.EINVALID)
		if !r.hasField("templateId") {
			t.Fatalf("errors %+v do not name templateId", r.Problem.Errors)
		}
	})
	t.Run("UnknownField", func(t *testing.T) {
		ts.retry(t, tok, task.ID, `{"template":1}`).want(t, 400, quan.EINVALID)
	})
	t.Run("NotFinished", func(t *testing.T) {
		later := testNow.Add(time.Hour).Format(time.RFC3339)
		r := ts.upload(t, tok, map[string]string{"name": "later", "templateId": fmt.Sprint(tpl.ID), "sendAt": later}, "u.csv", []byte("userId\n1\n"))
		r.want(t, 201, "")
		var pending qhttp.TaskView
		r.decode(t, &pending)
		r = ts.retry(t, tok, pending.ID, nil)
		r.want(t, 409, quan.ECONFLICT)
		if !strings.Contains(r.Problem.Detail, "pending") || !strings.Contains(r.Problem.Detail, "finished") {
			t.Fatalf("detail %q does not say the task has not finished", r.Problem.Detail)
		}
	})
	t.Run("NothingRetryable", func(t *testing.T) {
		bad := ts.distribute(t, tok, tpl.ID, "bad.csv", []byte("userId\nx\ny\n-1\n"), nil)
		r := ts.retry(t, tok, bad.ID, nil)
		r.want(t, 400, quan.EINVALID)
		if !strings.Contains(r.Problem.Detail, "invalid_id 3") {
			t.Fatalf("detail %q does not count the rows by cause", r.Problem.Detail)
		}
	})
	t.Run("NoFailures", func(t *testing.T) {
		ts.do(t, "POST", loc(tpl.ID)+"/stock", tok, map[string]any{"amount": 10}).want(t, 200, "")
		good := ts.distribute(t, tok, tpl.ID, "good.csv", []byte("userId\n77\n"), nil)
		r := ts.retry(t, tok, good.ID, nil)
		r.want(t, 400, quan.EINVALID)
		if !strings.Contains(r.Problem.Detail, "no failed row") {
			t.Fatalf("detail %q", r.Problem.Detail)
		}
	})
	t.Run("DryRun", func(t *testing.T) {
		dry := ts.distribute(t, tok, tpl.ID, "dry.csv", []byte("userId\n78\n"), map[string]string{"dryRun": "true"})
		r := ts.retry(t, tok, dry.ID, nil)
		r.want(t, 400, quan.EINVALID)
		if !strings.Contains(r.Problem.Detail, "dry run") {
			t.Fatalf("detail %q", r.Problem.Detail)
		}
	})
	t.Run("NoTaskCreated", func(t *testing.T) {
		var page struct {
			Items []qhttp.TaskView
		}
		ts.do(t, "GET", "/api/v1/tasks?limit=100", tok, nil).decode(t, &page)
		for _, it := range page.Items {
			if it.RetryOf != 0 {
				t.Fatalf("a refused retry created task %d", it.ID)
			}
		}
	})
}

// csvRows downloads failures.csv of a task and returns its records, the
// header first.
func (ts *testServer) csvRows(t *testing.T, token string, id int64) ([][]string, []byte) {
	t.Helper()
	r := ts.do(t, "GET", fmt.Sprintf("/api/v1/tasks/%d/failures.csv", id), token, nil)
	r.want(t, 200, "")
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") {
		t.Fatalf("failures.csv Content-Type %q", ct)
	}
	recs, err := csv.NewReader(bytes.NewReader(r.Body)).ReadAll()
	if err != nil {
		t.Fatalf("failures.csv: %v\n%s", err, r.Body)
	}
	return recs, r.Body
}

// TestFailureReportUploadedAgain downloads a task's failure report, in
// both forms, and uploads it as it is as a new task: it runs, the rows
// worth it are issued, and the others fail as before. An inexact number
// stays inexact rather than issue to the user of its rounded digits.
func TestFailureReportUploadedAgain(t *testing.T) {
	ts := newTestServer(t)
	tok, tpl, task := setupRetry(t, ts)
	ts.do(t, "POST", loc(tpl.ID)+"/stock", tok, map[string]any{"amount": 10}).want(t, 200, "")

	xlsx := ts.do(t, "GET", fmt.Sprintf("/api/v1/tasks/%d/failures.xlsx", task.ID), tok, nil)
	xlsx.want(t, 200, "")
	again := ts.distribute(t, tok, tpl.ID, "failures.xlsx", xlsx.Body, nil)
	// userC and userD get theirs now; 900 is at its limit, abc invalid, the
	// duplicate (userA, who holds one) at its limit, and the double's
	// digits inexact again.
	want := quan.TaskCounts{Rows: 6, Valid: 2, Issued: 2, Failed: quan.FailedCounts{
		InvalidID: 1, LimitReached: 2, InexactNumber: 1}}
	if again.Status != quan.TaskSucceeded || again.Counts != want {
		t.Fatalf("report uploaded again: %s %q %+v, want %+v", again.Status, again.Reason, again.Counts, want)
	}
	for _, u := range []string{userC, userD} {
		ts.holds(t, u, tpl.ID, 1)
	}
	ts.holds(t, "1234567890123456800", tpl.ID, 0)

	recs, body := ts.csvRows(t, tok, task.ID)
	ts.do(t, "POST", loc(tpl.ID)+"/stock", tok, map[string]any{"amount": 10}).want(t, 200, "")
	againCSV := ts.distribute(t, tok, tpl.ID, "failures.csv", body, nil)
	// Everyone worth it holds one now: only the limit and the unfixable.
	want = quan.TaskCounts{Rows: 6, Failed: quan.FailedCounts{InvalidID: 1, LimitReached: 4, InexactNumber: 1}}
	if againCSV.Status != quan.TaskSucceeded || againCSV.Counts != want {
		t.Fatalf("failures.csv uploaded again: %s %q %+v, want %+v", againCSV.Status, againCSV.Reason, againCSV.Counts, want)
	}
	if len(recs) != 7 || recs[6][1] != userD || recs[5][1] != "1.2345678901234568E+18" {
		t.Fatalf("failures.csv %q", recs)
	}
}

// TestFailuresCSVMatchesXLSX checks that failures.csv has the rows and
// columns of failures.xlsx, and the cause in Chinese and English in both.
func TestFailuresCSVMatchesXLSX(t *testing.T) {
	ts := newTestServer(t)
	tok, _, task := setupRetry(t, ts)
	if task.Report != fmt.Sprintf("/api/v1/tasks/%d/failures.xlsx", task.ID) || task.CSV != fmt.Sprintf("/api/v1/tasks/%d/failures.csv", task.ID) {
		t.Fatalf("task links the reports %q and %q", task.Report, task.CSV)
	}
	recs, _ := ts.csvRows(t, tok, task.ID)
	wantHeader := quan.FailureColumns()
	if strings.Join(recs[0], "|") != strings.Join(wantHeader, "|") {
		t.Fatalf("failures.csv header %q, want %q", recs[0], wantHeader)
	}
	for _, h := range recs[0] {
		if !chineseFirst(h) {
			t.Errorf("failures.csv header %q is not in Chinese, then English", h)
		}
	}
	xlsx := ts.reportRows(t, tok, task.ID)
	if len(xlsx) != len(recs)-1 {
		t.Fatalf("failures.xlsx has %d rows, failures.csv %d", len(xlsx), len(recs)-1)
	}
	labels := map[string]string{
		"invalid_id": "用户ID无效 invalid user id", "duplicate_in_file": "文件内重复 duplicate in file",
		"limit_reached": "已达领取上限 per-user limit reached", "out_of_stock": "库存不足 out of stock",
		"inexact_number": "数字精度丢失 number lost its digits",
	}
	for i, x := range xlsx {
		c := recs[i+1]
		if len(c) != 5 || len(x) != 5 {
			t.Fatalf("row %d: xlsx %q, csv %q: want 5 columns", i, x, c)
		}
		for col := range 5 {
			if col == 1 && c[3] == "inexact_number" {
				continue // a number in the workbook, its exponent form in the CSV
			}
			if x[col] != c[col] {
				t.Errorf("row %d column %d: xlsx %q, csv %q", i, col, x[col], c[col])
			}
		}
		if labels[c[3]] == "" || c[2] != labels[c[3]] {
			t.Errorf("row %d: reason %q for %s", i, c[2], c[3])
		}
		if c[4] != quan.Cause(c[3]).Describe() || !chineseFirst(c[4]) {
			t.Errorf("row %d: details %q, want what the cause means in Chinese, then in English", i, c[4])
		}
	}
	ts.do(t, "GET", fmt.Sprintf("/api/v1/tasks/%d/failures.csv", task.ID), ts.merchant(t, 2002), nil).want(t, 404, quan.ENOTFOUND)
	ts.do(t, "GET", fmt.Sprintf("/api/v1/tasks/%d/failures.csv", task.ID), ts.token(t, quan.Identity{Role: quan.RoleUser, UserID: 5}), nil).want(t, 403, quan.EFORBIDDEN)
}

// TestExactNumericIDs uploads a workbook whose ids are numeric cells: one
// written with all its 19 digits (as precise writers do) gets its coupon;
// one whose digits a double could have printed (17 significant, as Excel
// writes) fails inexact_number.
func TestExactNumericIDs(t *testing.T) {
	ts := newTestServer(t)
	tok := ts.merchant(t, 1001)
	tpl := ts.activeTemplate(t, tok, 10, 1)
	f := excelize.NewFile()
	defer f.Close()
	f.SetCellValue("Sheet1", "A1", "用户ID")
	f.SetCellValue("Sheet1", "A2", int64(1234567890123456789)) // <v>1234567890123456789</v>
	f.SetCellValue("Sheet1", "A3", 1234567890123456789.0)      // <v>1234567890123456800</v>
	f.SetCellValue("Sheet1", "A4", int64(9223372036854775807))
	var b bytes.Buffer
	if err := f.Write(&b); err != nil {
		t.Fatal(err)
	}
	task := ts.distribute(t, tok, tpl.ID, "numbers.xlsx", b.Bytes(), nil)
	want := quan.TaskCounts{Rows: 3, Valid: 2, Issued: 2, Failed: quan.FailedCounts{InexactNumber: 1}}
	if task.Status != quan.TaskSucceeded || task.Counts != want {
		t.Fatalf("task %s %+v, want %+v", task.Status, task.Counts, want)
	}
	ts.holds(t, "1234567890123456789", tpl.ID, 1)
	ts.holds(t, "9223372036854775807", tpl.ID, 1)
	ts.holds(t, "1234567890123456800", tpl.ID, 0)
	rows := ts.reportRows(t, tok, task.ID)
	if len(rows) != 1 || rows[0][0] != "3" || rows[0][3] != "inexact_number" {
		t.Fatalf("report %q", rows)
	}
}

// chineseFirst reports whether s reads in Chinese, then in English: it
// starts with a Han character and holds an English word.
func chineseFirst(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.Is(unicode.Han, r) && regexp.MustCompile(`[A-Za-z]{3,}`).MatchString(s)
}
