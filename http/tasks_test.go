package http_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/quanhq/quan"
	qhttp "github.com/quanhq/quan/http"
	"github.com/xuri/excelize/v2"
)

// upload posts a task form with the file last, as browsers do.
func (ts *testServer) upload(t *testing.T, token string, fields map[string]string, fileName string, content []byte) response {
	t.Helper()
	return ts.postForm(t, "/api/v1/tasks", token, fields, fileName, content)
}

// postForm posts a multipart form of fields and, if fileName is set, a
// file part named "file" to path.
func (ts *testServer) postForm(t *testing.T, path, token string, fields map[string]string, fileName string, content []byte) response {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for k, v := range fields {
		mw.WriteField(k, v)
	}
	if fileName != "" {
		fw, _ := mw.CreateFormFile("file", fileName)
		fw.Write(content)
	}
	mw.Close()
	req, _ := http.NewRequest("POST", ts.URL+path, &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	r := response{Status: res.StatusCode, Header: res.Header, Body: b}
	if res.StatusCode >= 400 {
		r.decode(t, &r.Problem)
	}
	return r
}

// activeTemplate creates and activates a template with stock and limit.
func (ts *testServer) activeTemplate(t *testing.T, token string, stock, limit int) quan.Template {
	t.Helper()
	body := validTemplate()
	body["stock"], body["perUserLimit"] = stock, limit
	tpl := ts.create(t, token, body)
	ts.do(t, "POST", loc(tpl.ID)+"/activate", token, nil).want(t, 200, "")
	return tpl
}

// distribute uploads a file for tpl and waits for the task to end.
func (ts *testServer) distribute(t *testing.T, token string, tpl int64, name string, content []byte, extra map[string]string) qhttp.TaskView {
	t.Helper()
	fields := map[string]string{"name": "test", "templateId": fmt.Sprint(tpl)}
	for k, v := range extra {
		fields[k] = v
	}
	r := ts.upload(t, token, fields, name, content)
	r.want(t, http.StatusCreated, "")
	var task qhttp.TaskView
	r.decode(t, &task)
	return ts.waitTask(t, token, task.ID)
}

// waitTask polls a task until it has ended and its report, if any, is
// written.
func (ts *testServer) waitTask(t *testing.T, token string, id int64) qhttp.TaskView {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var task qhttp.TaskView
		ts.do(t, "GET", fmt.Sprintf("/api/v1/tasks/%d", id), token, nil).decode(t, &task)
		if task.Status.Done() && (task.Report != "" || task.Failed == 0 || task.Status == quan.TaskFailed) {
			return task
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %d did not end: %+v", id, task.Task)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// reportRows downloads a failure report and returns its data rows.
func (ts *testServer) reportRows(t *testing.T, token string, id int64) [][]string {
	t.Helper()
	r := ts.do(t, "GET", fmt.Sprintf("/api/v1/tasks/%d/failures.xlsx", id), token, nil)
	r.want(t, 200, "")
	if ct := r.Header.Get("Content-Type"); !strings.Contains(ct, "spreadsheetml") {
		t.Fatalf("report Content-Type %q", ct)
	}
	f, err := excelize.OpenReader(bytes.NewReader(r.Body))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := f.GetRows(f.GetSheetList()[0])
	if err != nil {
		t.Fatal(err)
	}
	return rows[1:]
}

// causesXLSX is a workbook with one row of each outcome; the comment of
// each row says what it must get.
func causesXLSX(t *testing.T) []byte {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	set := func(cell string, v any) {
		if err := f.SetCellValue("Sheet1", cell, v); err != nil {
			t.Fatal(err)
		}
	}
	set("A1", "phone")
	set("B1", "userId")
	set("B2", "101") // issued
	set("B3", "abc") // invalid_id
	style, _ := f.NewStyle(&excelize.Style{Fill: excelize.Fill{Type: "pattern", Color: []string{"FFFF00"}, Pattern: 1}})
	f.SetCellStyle("Sheet1", "A4", "B4", style) // a formatted but empty row: no user
	set("B5", "101")                            // duplicate_in_file
	set("B6", "900")                            // limit_reached: holds one already
	set("B7", 1234567890123456789.0)            // inexact_number: a number Excel cannot keep
	set("B8", 102)                              // issued: a small number is exact
	set("A9", "13800000000")
	set("B9", " 103 ")                    // issued: spaces are ignored
	set("B10", "104")                     // out_of_stock
	set("B11", "-5")                      // invalid_id
	set("B12", "00000000000000000000123") // invalid_id: too long
	var b bytes.Buffer
	if err := f.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestDistributeEveryCause(t *testing.T) {
	ts := newTestServer(t)
	tok := ts.merchant(t, 1001)
	tpl := ts.activeTemplate(t, tok, 4, 1)

	first := ts.distribute(t, tok, tpl.ID, "first.csv", []byte("userId\n900\n"), nil)
	if first.Status != quan.TaskSucceeded || first.Counts.Issued != 1 || first.Report != "" {
		t.Fatalf("first task: %+v", first.Task)
	}
	ts.do(t, "GET", fmt.Sprintf("/api/v1/tasks/%d/failures.xlsx", first.ID), tok, nil).want(t, 404, quan.ENOTFOUND)
	ts.do(t, "GET", fmt.Sprintf("/api/v1/tasks/%d/failures.csv", first.ID), tok, nil).want(t, 404, quan.ENOTFOUND)

	task := ts.distribute(t, tok, tpl.ID, "users.xlsx", causesXLSX(t), map[string]string{"notify": "inbox,sms"})
	c := task.Counts
	want := quan.TaskCounts{Rows: 10, Valid: 3, Issued: 3, Blank: 1, Failed: quan.FailedCounts{InvalidID: 3, Duplicate: 1, LimitReached: 1, InexactNumber: 1, OutOfStock: 1}}
	if task.Status != quan.TaskSucceeded || c != want {
		t.Fatalf("task %s, counts %+v, want %+v", task.Status, c, want)
	}
	if task.Progress.Percent != 100 || task.Failed != 7 || task.FileName != "users.xlsx" || len(task.FileSHA256) != 64 ||
		len(task.Notify) != 2 || task.ChunksDone != 3 {
		t.Fatalf("task %+v", task)
	}
	wantRows := []struct{ line, cause string }{
		{"3", "invalid_id"}, {"5", "duplicate_in_file"}, {"6", "limit_reached"}, {"7", "inexact_number"},
		{"10", "out_of_stock"}, {"11", "invalid_id"}, {"12", "invalid_id"},
	}
	rows := ts.reportRows(t, tok, task.ID)
	if len(rows) != len(wantRows) {
		t.Fatalf("report has %d rows: %v", len(rows), rows)
	}
	for i, w := range wantRows {
		if rows[i][0] != w.line || rows[i][3] != w.cause || rows[i][2] == "" {
			t.Errorf("report row %d: %v, want line %s cause %s", i, rows[i], w.line, w.cause)
		}
	}
	if rows[0][1] != "abc" || rows[1][1] != "101" || rows[6][1] != "00000000000000000000123" {
		t.Errorf("user ids as written: %v", rows)
	}
	if !strings.Contains(rows[3][4], "text") {
		t.Errorf("inexact number cause does not say to store the column as text: %q", rows[3][4])
	}
	if rows[5][2] != "用户ID无效 invalid user id" || rows[4][2] != "库存不足 out of stock" {
		t.Errorf("reasons in Chinese and English: %q, %q", rows[5][2], rows[4][2])
	}

	var got quan.Template
	ts.do(t, "GET", loc(tpl.ID), tok, nil).decode(t, &got)
	if got.Stock != 0 {
		t.Fatalf("stock %d after issuing all 4", got.Stock)
	}
	for _, user := range []int64{101, 102, 103, 900} {
		cs, err := ts.store.UserCoupons(context.Background(), user, tpl.ID)
		if err != nil || len(cs) != 1 || cs[0].Seq != 1 || cs[0].Status != quan.CouponAvailable {
			t.Fatalf("user %d coupons %v, %v", user, cs, err)
		}
	}
	if cs, _ := ts.store.UserCoupons(context.Background(), 101, tpl.ID); cs[0].TaskID != task.ID || cs[0].Source != quan.FromDistribution ||
		!cs[0].ValidEnd.Equal(testNow.Add(72*time.Hour)) {
		t.Fatalf("coupon %+v", cs[0])
	}
}

func TestDistributeDryRun(t *testing.T) {
	ts := newTestServer(t)
	tok := ts.merchant(t, 1001)
	tpl := ts.activeTemplate(t, tok, 1, 1)
	csv := "user_id,email\n1,a@x\nxyz,b@x\n2,c@x\n1,d@x\n3,e@x\n"
	task := ts.distribute(t, tok, tpl.ID, "users.csv", []byte(csv), map[string]string{"dryRun": "true"})
	want := quan.TaskCounts{Rows: 5, Valid: 3, Failed: quan.FailedCounts{InvalidID: 1, Duplicate: 1}}
	if task.Status != quan.TaskSucceeded || !task.DryRun || task.Counts != want {
		t.Fatalf("dry run %s %+v", task.Status, task.Counts)
	}
	rows := ts.reportRows(t, tok, task.ID)
	if len(rows) != 2 || rows[0][0] != "3" || rows[1][0] != "5" {
		t.Fatalf("dry-run report %v", rows)
	}
	var got quan.Template
	ts.do(t, "GET", loc(tpl.ID), tok, nil).decode(t, &got)
	stats, _ := ts.store.CouponStats(context.Background(), tpl.ID, 0)
	if got.Stock != 1 || stats.Coupons != 0 {
		t.Fatalf("dry run issued: stock %d, %d coupons", got.Stock, stats.Coupons)
	}
}

// TestBlankRowsCounted: the blank rows among a file's rows — empty rows
// and rows left out of a workbook — are counted in the task's counts
// ("blank"), neither as rows nor as failures, and make no failure report.
func TestBlankRowsCounted(t *testing.T) {
	ts := newTestServer(t)
	tok := ts.merchant(t, 1001)
	tpl := ts.activeTemplate(t, tok, 10, 1)
	f := excelize.NewFile()
	defer f.Close()
	for row, v := range map[int]string{1: "userId", 2: "1", 5: "2", 6: "3", 9: "4"} {
		f.SetCellStr("Sheet1", fmt.Sprintf("A%d", row), v)
	}
	f.SetCellStr("Sheet1", "A7", " ") // a row holding only a space is blank too
	var file bytes.Buffer
	if _, err := f.WriteTo(&file); err != nil {
		t.Fatal(err)
	}
	task := ts.distribute(t, tok, tpl.ID, "users.xlsx", file.Bytes(), nil)
	want := quan.TaskCounts{Rows: 4, Valid: 4, Issued: 4, Blank: 4}
	if task.Status != quan.TaskSucceeded || task.Counts != want || task.Failed != 0 || task.Report != "" {
		t.Fatalf("task %s %+v, failed %d, report %q; want %+v and no failure", task.Status, task.Counts, task.Failed, task.Report, want)
	}
	r := ts.do(t, "GET", fmt.Sprintf("/api/v1/tasks/%d", task.ID), tok, nil)
	if !strings.Contains(string(r.Body), `"blank":4`) {
		t.Fatalf("the task's JSON does not count its blank rows: %s", r.Body)
	}
}

func TestCreateTaskValidation(t *testing.T) {
	ts := newTestServer(t)
	tok := ts.merchant(t, 1001)
	tpl := ts.activeTemplate(t, tok, 10, 1)
	good := []byte("userId\n1\n")
	ended := ts.activeTemplate(t, tok, 10, 1)
	ts.do(t, "POST", loc(ended.ID)+"/terminate", tok, nil).want(t, 200, "")
	otherShop := ts.activeTemplate(t, ts.merchant(t, 2002), 10, 1)
	tests := []struct {
		name   string
		fields map[string]string
		file   string
		field  string
	}{
		{"NoFile", map[string]string{"name": "x", "templateId": fmt.Sprint(tpl.ID)}, "", "file"},
		{"NoName", map[string]string{"templateId": fmt.Sprint(tpl.ID)}, "u.csv", "name"},
		{"NoTemplate", map[string]string{"name": "x"}, "u.csv", "templateId"},
		{"BadTemplateID", map[string]string{"name": "x", "templateId": "seven"}, "u.csv", "templateId"},
		{"UnknownTemplate", map[string]string{"name": "x", "templateId": "99999"}, "u.csv", "templateId"},
		{"AnotherShopsTemplate", map[string]string{"name": "x", "templateId": fmt.Sprint(otherShop.ID)}, "u.csv", "templateId"},
		{"EndedTemplate", map[string]string{"name": "x", "templateId": fmt.Sprint(ended.ID)}, "u.csv", "templateId"},
		{"BadNotify", map[string]string{"name": "x", "templateId": fmt.Sprint(tpl.ID), "notify": "pigeon"}, "u.csv", "notify"},
		{"BadSendAt", map[string]string{"name": "x", "templateId": fmt.Sprint(tpl.ID), "sendAt": "tomorrow"}, "u.csv", "sendAt"},
		{"BadDryRun", map[string]string{"name": "x", "templateId": fmt.Sprint(tpl.ID), "dryRun": "perhaps"}, "u.csv", "dryRun"},
		{"UnknownField", map[string]string{"name": "x", "templateId": fmt.Sprint(tpl.ID), "colour": "red"}, "u.csv", "colour"},
		// What a store cannot keep is refused, not a 500 (MySQL) or kept
		// on one store only (SQLite); a CSV has no sheet to look for.
		{"SheetTooLong", map[string]string{"name": "x", "templateId": fmt.Sprint(tpl.ID), "sheet": strings.Repeat("页", quan.MaxSheetLen+1)}, "u.csv", "sheet"},
		{"FileNameTooLong", map[string]string{"name": "x", "templateId": fmt.Sprint(tpl.ID)}, strings.Repeat("名", quan.MaxFileNameLen) + ".csv", "file"},
		{"NameNotText", map[string]string{"name": "x\xff", "templateId": fmt.Sprint(tpl.ID)}, "u.csv", "name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var content []byte
			if tt.file != "" {
				content = good
			}
			r := ts.upload(t, tok, tt.fields, tt.file, content)
			r.want(t, 400, quan.EINVALID)
			if !r.hasField(tt.field) {
				t.Fatalf("errors %+v do not name %s", r.Problem.Errors, tt.field)
			}
		})
	}
	t.Run("NotMultipart", func(t *testing.T) {
		ts.do(t, "POST", "/api/v1/tasks", tok, `{"name":"x"}`).want(t, 400, quan.EINVALID)
	})
	t.Run("NothingKept", func(t *testing.T) {
		var page struct{ Total int }
		ts.do(t, "GET", "/api/v1/tasks", tok, nil).decode(t, &page)
		if page.Total != 0 {
			t.Fatalf("%d tasks created by invalid uploads", page.Total)
		}
		assertNoUploads(t, ts.dir)
	})
}

// xlsxWith zips the given parts into a file.
func xlsxWith(t *testing.T, parts map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for name, body := range parts {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate})
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, body)
	}
	zw.Close()
	return b.Bytes()
}

// rezip returns the xlsx with one part replaced.
func rezip(t *testing.T, xlsx []byte, name, body string) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(xlsx), int64(len(xlsx)))
	if err != nil {
		t.Fatal(err)
	}
	parts := map[string]string{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		parts[f.Name] = string(b)
	}
	if _, ok := parts[name]; !ok {
		t.Fatalf("no part %s", name)
	}
	parts[name] = body
	return xlsxWith(t, parts)
}

func TestBrokenFiles(t *testing.T) {
	ts := newTestServer(t)
	tok := ts.merchant(t, 1001)
	tpl := ts.activeTemplate(t, tok, 10, 1)
	valid := causesXLSX(t)
	// A zip bomb: a real workbook whose worksheet inflates from a few
	// hundred KB to 64 MB of blanks.
	bomb := rezip(t, valid, "xl/worksheets/sheet1.xml", `<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>userId</t></is></c></row>`+strings.Repeat(" ", 64<<20)+`</sheetData></worksheet>`)
	tests := []struct {
		name, file string
		content    []byte
		says       string
	}{
		{"NotASpreadsheet", "users.png", []byte("\x00\x01\x02PNG binary junk"), "not an xlsx or csv"},
		{"CorruptXLSX", "users.xlsx", []byte("\x00\x01\x02PNG binary junk"), "corrupt .xlsx: the file is named .xlsx but is not a zip archive"},
		// A web page saved under the name of the workbook it failed to
		// download reads as CSV text, but the merchant meant an .xlsx.
		{"PageNamedXLSX", "users.xlsx", []byte("<html><body>userId session expired</body></html>\n"), "corrupt .xlsx"},
		{"Truncated", "users.xlsx", valid[:len(valid)/2], "corrupt .xlsx: the archive is truncated or damaged"},
		{"NoWorksheet", "users.xlsx", xlsxWith(t, map[string]string{"[Content_Types].xml": "<Types/>", "xl/workbook.xml": "<workbook><sheets/></workbook>"}), "no worksheet"},
		{"MissingUserIDColumn", "users.csv", []byte("phone,mail\n13800000000,a@b.c\n"), "no user id column"},
		{"ZipBomb", "users.xlsx", bomb, "zip bomb"},
		{"UnknownSheet", "users.xlsx", valid, "no sheet named"},
		{"Empty", "users.csv", nil, "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fields := map[string]string{"name": "x", "templateId": fmt.Sprint(tpl.ID)}
			if tt.name == "UnknownSheet" {
				fields["sheet"] = "Nope"
			}
			r := ts.upload(t, tok, fields, tt.file, tt.content)
			r.want(t, 400, quan.EINVALID)
			if !r.hasField("file") && !r.hasField("sheet") {
				t.Fatalf("errors %+v do not name the file", r.Problem.Errors)
			}
			msg := strings.ToLower(r.Problem.Errors[0].Message)
			if len(msg) < 10 || !strings.Contains(msg, tt.says) {
				t.Fatalf("message %q does not say %q", msg, tt.says)
			}
			t.Logf("%s: %s", tt.name, msg)
		})
	}
	t.Run("TooManyRows", func(t *testing.T) {
		var csv strings.Builder
		csv.WriteString("userId\n")
		for i := range testMaxRows + 1 {
			fmt.Fprintf(&csv, "%d\n", i+1)
		}
		task := ts.distribute(t, tok, tpl.ID, "big.csv", []byte(csv.String()), nil)
		if task.Status != quan.TaskFailed || !strings.Contains(task.Reason, "too many rows") {
			t.Fatalf("task %s: %q", task.Status, task.Reason)
		}
		// What was applied before the limit is consistent: stock taken = issued.
		var got quan.Template
		ts.do(t, "GET", loc(tpl.ID), tok, nil).decode(t, &got)
		if got.TotalStock-got.Stock != task.Counts.Issued || task.Counts.Rows != task.Counts.Issued+task.Counts.FailedTotal() {
			t.Fatalf("stock %d/%d, counts %+v", got.Stock, got.TotalStock, task.Counts)
		}
	})
}

func TestTaskIdentity(t *testing.T) {
	ts := newTestServer(t)
	tok := ts.merchant(t, 1001)
	tpl := ts.activeTemplate(t, tok, 10, 1)
	task := ts.distribute(t, tok, tpl.ID, "u.csv", []byte("userId\nx\n"), nil)
	other := ts.merchant(t, 2002)
	user := ts.token(t, quan.Identity{Role: quan.RoleUser, UserID: 5})
	for _, path := range []string{"", "/failures.xlsx", "/failures.csv"} {
		p := fmt.Sprintf("/api/v1/tasks/%d%s", task.ID, path)
		ts.do(t, "GET", p, other, nil).want(t, 404, quan.ENOTFOUND)
		ts.do(t, "GET", p, user, nil).want(t, 403, quan.EFORBIDDEN)
		ts.do(t, "GET", p, "", nil).want(t, 401, quan.EUNAUTHORIZED)
	}
	ts.do(t, "POST", fmt.Sprintf("/api/v1/tasks/%d/cancel", task.ID), other, nil).want(t, 404, quan.ENOTFOUND)
	ts.upload(t, user, map[string]string{"name": "x"}, "u.csv", []byte("userId\n1\n")).want(t, 403, quan.EFORBIDDEN)
	var page struct {
		Items []qhttp.TaskView
		Total int
	}
	ts.do(t, "GET", "/api/v1/tasks", other, nil).decode(t, &page)
	if page.Total != 0 {
		t.Fatalf("shop 2002 lists %d tasks", page.Total)
	}
	ts.do(t, "GET", "/api/v1/tasks?status=succeeded", tok, nil).decode(t, &page)
	if page.Total != 1 || page.Items[0].ID != task.ID {
		t.Fatalf("shop 1001 lists %+v", page)
	}
	ts.do(t, "GET", "/api/v1/tasks?status=lost", tok, nil).want(t, 400, quan.EINVALID)
}

// gatedRows holds back a file's rows after the first gateAt rows until
// release is closed, so a test can act while a task is running.
type gatedRows struct {
	quan.RowReader
	read    int
	gateAt  int
	release chan struct{}
}

func (g *gatedRows) Read(dst []quan.FileRow) (int, error) {
	if g.read >= g.gateAt {
		<-g.release
	}
	n, err := g.RowReader.Read(dst[:min(len(dst), max(1, g.gateAt-g.read))])
	g.read += n
	return n, err
}

func TestCancelRunningTask(t *testing.T) {
	ts := newTestServer(t)
	tok := ts.merchant(t, 1001)
	tpl := ts.activeTemplate(t, tok, 1000, 1)
	release := make(chan struct{})
	ts.open = func(ctx context.Context, task *quan.Task) (quan.RowReader, error) {
		r, err := openSheet(ctx, task)
		if err != nil {
			return nil, err
		}
		return &gatedRows{RowReader: r, gateAt: 10, release: release}, nil
	}
	var csv strings.Builder
	csv.WriteString("userId\n")
	for i := range 50 {
		fmt.Fprintf(&csv, "%d\n", 1000+i)
	}
	r := ts.upload(t, tok, map[string]string{"name": "x", "templateId": fmt.Sprint(tpl.ID)}, "u.csv", []byte(csv.String()))
	r.want(t, 201, "")
	var task qhttp.TaskView
	r.decode(t, &task)
	// Chunks of 4 rows: the first two chunks are applied before the gate.
	for deadline := time.Now().Add(10 * time.Second); ; {
		ts.do(t, "GET", fmt.Sprintf("/api/v1/tasks/%d", task.ID), tok, nil).decode(t, &task)
		if task.ChunksDone >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("task did not start: %+v", task.Task)
		}
		time.Sleep(5 * time.Millisecond)
	}
	ts.do(t, "POST", fmt.Sprintf("/api/v1/tasks/%d/cancel", task.ID), tok, nil).want(t, 200, "")
	close(release)
	for deadline := time.Now().Add(10 * time.Second); ; {
		ts.do(t, "GET", fmt.Sprintf("/api/v1/tasks/%d", task.ID), tok, nil).decode(t, &task)
		if task.Counts.Canceled > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("canceled rows never counted: %+v", task.Task)
		}
		time.Sleep(5 * time.Millisecond)
	}
	c := task.Counts
	if task.Status != quan.TaskCanceled || c.Issued < 8 || c.Rows+c.Canceled != 50 || c.Issued != c.Rows {
		t.Fatalf("canceled task %s %+v", task.Status, c)
	}
	var got quan.Template
	ts.do(t, "GET", loc(tpl.ID), tok, nil).decode(t, &got)
	if got.Stock != 1000-c.Issued {
		t.Fatalf("stock %d after issuing %d", got.Stock, c.Issued)
	}
	ts.do(t, "POST", fmt.Sprintf("/api/v1/tasks/%d/cancel", task.ID), tok, nil).want(t, 409, quan.ETRANSITION)
}

func TestCancelScheduledTask(t *testing.T) {
	ts := newTestServer(t)
	tok := ts.merchant(t, 1001)
	tpl := ts.activeTemplate(t, tok, 10, 1)
	later := testNow.Add(time.Hour).Format(time.RFC3339)
	r := ts.upload(t, tok, map[string]string{"name": "x", "templateId": fmt.Sprint(tpl.ID), "sendAt": later}, "u.csv", []byte("userId\n1\n2\n3\n"))
	r.want(t, 201, "")
	var task qhttp.TaskView
	r.decode(t, &task)
	if task.Status != quan.TaskPending || !task.SendAt.Equal(testNow.Add(time.Hour)) {
		t.Fatalf("scheduled task %+v", task.Task)
	}
	ts.do(t, "POST", fmt.Sprintf("/api/v1/tasks/%d/cancel", task.ID), tok, nil).decode(t, &task)
	if task.Status != quan.TaskCanceled || task.Counts.Canceled != 3 || task.Counts.Issued != 0 {
		t.Fatalf("canceled before start: %s %+v", task.Status, task.Counts)
	}
	ts.setNow(testNow.Add(2 * time.Hour)) // past sendAt: the runner must not start it
	time.Sleep(100 * time.Millisecond)
	tok = ts.merchant(t, 1001)
	ts.do(t, "GET", fmt.Sprintf("/api/v1/tasks/%d", task.ID), tok, nil).decode(t, &task)
	if task.Status != quan.TaskCanceled || task.Counts.Issued != 0 {
		t.Fatalf("canceled task ran: %+v", task.Task)
	}
}

func TestDistributePausedTemplate(t *testing.T) {
	ts := newTestServer(t)
	tok := ts.merchant(t, 1001)
	tpl := ts.activeTemplate(t, tok, 10, 1)
	ts.do(t, "POST", loc(tpl.ID)+"/pause", tok, nil).want(t, 200, "")
	task := ts.distribute(t, tok, tpl.ID, "u.csv", []byte("userId\n1\n2\nx\n"), nil)
	want := quan.TaskCounts{Rows: 3, Failed: quan.FailedCounts{TemplateInactive: 2, InvalidID: 1}}
	if task.Status != quan.TaskSucceeded || task.Counts != want {
		t.Fatalf("task %s %+v", task.Status, task.Counts)
	}
	rows := ts.reportRows(t, tok, task.ID)
	if len(rows) != 3 || rows[0][3] != "template_inactive" || rows[0][1] != "1" || rows[2][3] != "invalid_id" {
		t.Fatalf("report %v", rows)
	}
}

func TestUploadTooLarge(t *testing.T) {
	ts := newTestServer(t)
	tok := ts.merchant(t, 1001)
	tpl := ts.activeTemplate(t, tok, 10, 1)
	ts.api.Tasks.MaxFileSize = 64
	r := ts.upload(t, tok, map[string]string{"name": "x", "templateId": fmt.Sprint(tpl.ID)}, "u.csv", []byte("userId\n"+strings.Repeat("1234567\n", 20)))
	r.want(t, http.StatusRequestEntityTooLarge, quan.ETOOLARGE)
	if !strings.Contains(r.Problem.Detail, "64 bytes") {
		t.Fatalf("detail %q does not name the limit", r.Problem.Detail)
	}
	assertNoUploads(t, ts.dir)
}

// TestTaskNotifyIsAnArray checks that a task's notify is a JSON array
// wherever the API shows it, [] when the task notifies nobody.
func TestTaskNotifyIsAnArray(t *testing.T) {
	ts := newTestServer(t)
	m := ts.merchant(t, 1001)
	tpl := ts.activeTemplate(t, m, 100, 1)
	type notifyOnly struct {
		ID     int64
		Notify json.RawMessage
	}
	want := map[int64]string{}
	for _, notify := range []string{"", "inbox,sms"} {
		fields := map[string]string{"name": "notify " + notify, "templateId": fmt.Sprint(tpl.ID), "notify": notify}
		r := ts.upload(t, m, fields, "users.csv", []byte("userId\n1\n"))
		r.want(t, http.StatusCreated, "")
		var created notifyOnly
		r.decode(t, &created)
		want[created.ID] = `[]`
		if notify != "" {
			want[created.ID] = `["inbox","sms"]`
		}
		if string(created.Notify) != want[created.ID] {
			t.Errorf("created task %d: notify %s, want %s", created.ID, created.Notify, want[created.ID])
		}
		ts.waitTask(t, m, created.ID)
		var read notifyOnly
		ts.do(t, "GET", fmt.Sprintf("/api/v1/tasks/%d", created.ID), m, nil).decode(t, &read)
		if string(read.Notify) != want[created.ID] {
			t.Errorf("read task %d: notify %s, want %s", created.ID, read.Notify, want[created.ID])
		}
	}
	var page struct{ Items []notifyOnly }
	ts.do(t, "GET", "/api/v1/tasks", m, nil).decode(t, &page)
	if len(page.Items) != len(want) {
		t.Fatalf("listed %d tasks, want %d", len(page.Items), len(want))
	}
	for _, task := range page.Items {
		if string(task.Notify) != want[task.ID] {
			t.Errorf("listed task %d: notify %s, want %s", task.ID, task.Notify, want[task.ID])
		}
	}
}
