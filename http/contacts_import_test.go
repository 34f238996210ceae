package http_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/disk"
	qhttp "github.com/quanhq/quan/http"
	"github.com/quanhq/quan/notify"
	"github.com/quanhq/quan/sheet"
	"github.com/quanhq/quan/sqlite"
	"github.com/quanhq/quan/templates"
)

const contactsPath = "/api/v1/contacts/import"

// importContacts posts a contacts file as admin and returns the answer.
func (ts *testServer) importContacts(t *testing.T, token, name string, content []byte) notify.ContactImport {
	t.Helper()
	r := ts.postForm(t, contactsPath, token, nil, name, content)
	r.want(t, http.StatusOK, "")
	var res notify.ContactImport
	r.decode(t, &res)
	return res
}

func (ts *testServer) contact(t *testing.T, admin string, user int64) quan.Contact {
	t.Helper()
	var c quan.Contact
	ts.do(t, "GET", fmt.Sprintf("/api/v1/users/%d/contact", user), admin, nil).decode(t, &c)
	return c
}

// TestContactsImport: an admin imports a CSV of contacts; the good rows
// are on file, the bad ones come back with their line, user id as written
// and reason, counted by reason; the same file again changes nothing and
// keeps an opt-out; a distribution with notify=sms then texts the
// imported numbers.
func TestContactsImport(t *testing.T) {
	ts := newTestServer(t)
	admin := ts.token(t, quan.Identity{Role: quan.RoleAdmin, Subject: "ops"})
	file := []byte("userId,手机号,邮箱,lang\n" +
		"1,138 0000 0001,One@Example.COM,EN\n" + // line 2
		"2,13900000002,,\n" + // line 3: no mail, no language
		"x,13800000000,,\n" + // line 4: invalid_id
		"3,12345,,\n" + // line 5: invalid_contact phone
		"4,,not-a-mail,\n" + // line 6: invalid_contact mail
		"2,13900000099,,\n" + // line 7: duplicate_in_file
		"5,,,\n" + // line 8: no_contact
		"6,,,fr\n" + // line 9: invalid_contact lang
		"7,+447911123456,,\n") // line 10
	wantFailures := []importFailure{
		{4, "x", quan.ImportInvalidID, ""},
		{5, "3", notify.ImportInvalidContact, "phone"},
		{6, "4", notify.ImportInvalidContact, "mail"},
		{7, "2", quan.ImportDuplicateInFile, ""},
		{8, "5", notify.ImportNoContact, ""},
		{9, "6", notify.ImportInvalidContact, "lang"},
	}
	wantContacts := map[int64]quan.Contact{
		1: {Phone: "+8613800000001", Mail: "One@example.com", Lang: quan.LangEN},
		2: {Phone: "+8613900000002", Lang: quan.LangZH},
		7: {Phone: "+447911123456", Lang: quan.LangZH, OptOut: []quan.NotifyType{quan.NotifyEmail}},
	}
	// User 7 has a mail and opted out of email before the import: the
	// import's blank mail keeps the one, and nothing touches the other.
	ts.do(t, "PUT", "/api/v1/users/7/contact", admin, map[string]any{"mail": "seven@example.com", "optOut": []string{"email"}}).want(t, http.StatusOK, "")
	wantContacts[7] = quan.Contact{Phone: "+447911123456", Mail: "seven@example.com", Lang: quan.LangZH, OptOut: []quan.NotifyType{quan.NotifyEmail}}

	for round := range 2 { // the same file again: the same answer and contacts
		res := ts.importContacts(t, admin, "contacts.csv", file)
		wantBy := map[string]int64{quan.ImportInvalidID: 1, notify.ImportInvalidContact: 3, quan.ImportDuplicateInFile: 1, notify.ImportNoContact: 1}
		checkImport(t, &res, 9, 3, wantBy, wantFailures)
		for u, w := range wantContacts {
			c := ts.contact(t, admin, u)
			if c.Phone != w.Phone || c.Mail != w.Mail || c.Lang != w.Lang || !slices.Equal(c.OptOut, append([]quan.NotifyType{}, w.OptOut...)) {
				t.Errorf("round %d: user %d has %+v, want %+v", round, u, c, w)
			}
		}
		for _, u := range []int64{3, 4, 5, 6} {
			if c := ts.contact(t, admin, u); c.Phone != "" || c.Mail != "" || !c.UpdatedAt.IsZero() {
				t.Errorf("round %d: user %d of a failed row has %+v", round, u, c)
			}
		}
	}

	// A distribution with notify=sms texts the numbers imported; user 8
	// has none.
	m := ts.merchant(t, 1001)
	tpl := ts.activeTemplate(t, m, 100, 1)
	task := ts.distribute(t, m, tpl.ID, "users.csv", []byte("userId\n1\n2\n7\n8\n"), map[string]string{"notify": "sms"})
	if task.Status != quan.TaskSucceeded || task.Counts.Issued != 4 {
		t.Fatalf("task %s, issued %d; want succeeded with 4", task.Status, task.Counts.Issued)
	}
	for u, want := range map[int64]string{1: "+8613800000001", 2: "+8613900000002", 7: "+447911123456"} {
		n, err := ts.store.Notification(t.Context(), quan.TaskSource(task.ID), u, quan.NotifySMS)
		if err != nil || n.Address != want || n.Status != quan.NotificationQueued {
			t.Errorf("user %d's SMS: %+v, %v; want queued to %s", u, n, err, want)
		}
	}
	if n, err := ts.store.Notification(t.Context(), quan.TaskSource(task.ID), 8, quan.NotifySMS); err != nil || n.Reason != quan.ReasonNoContact {
		t.Errorf("user 8's SMS: %+v, %v; want failed no_contact", n, err)
	}
}

func mapsEqual(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestContactsImportXLSX: the columns of a workbook are found by their
// Chinese names, and numbers stored as numbers are read as written.
func TestContactsImportXLSX(t *testing.T) {
	ts := newTestServer(t)
	admin := ts.token(t, quan.Identity{Role: quan.RoleAdmin, Subject: "ops"})
	f := excelize.NewFile()
	defer f.Close()
	for i, row := range [][]any{
		{"用户ID", "手机号", "邮箱", "语言"},
		{int64(11), int64(13800000011), "a@example.com", "en"},
		{"12", "", "b@example.com", ""},
		{"-1", "13800000000", "", ""},
	} {
		cell, _ := excelize.CoordinatesToCellName(1, i+1)
		if err := f.SetSheetRow("Sheet1", cell, &row); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := f.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	res := ts.importContacts(t, admin, "contacts.xlsx", buf.Bytes())
	if res.Imported != 2 || res.Failed != 1 || len(res.Failures) != 1 || res.Failures[0].Line != 4 || res.Failures[0].Reason != quan.ImportInvalidID {
		t.Errorf("answer %+v", res)
	}
	if c := ts.contact(t, admin, 11); c.Phone != "+8613800000011" || c.Mail != "a@example.com" || c.Lang != quan.LangEN {
		t.Errorf("user 11: %+v", c)
	}
	if c := ts.contact(t, admin, 12); c.Phone != "" || c.Mail != "b@example.com" || c.Lang != quan.LangZH {
		t.Errorf("user 12: %+v", c)
	}
}

// TestContactsImportFailuresCapped: the answer lists the first
// MaxImportFailures failed rows and counts them all.
func TestContactsImportFailuresCapped(t *testing.T) {
	ts := newTestServer(t)
	admin := ts.token(t, quan.Identity{Role: quan.RoleAdmin, Subject: "ops"})
	var b strings.Builder
	b.WriteString("userId,phone\n1,13800000001\n")
	bad := quan.MaxImportFailures + 5
	for i := range bad {
		fmt.Fprintf(&b, "%d,123\n", i+2)
	}
	res := ts.importContacts(t, admin, "contacts.csv", []byte(b.String()))
	if res.Imported != 1 || res.Failed != int64(bad) || res.FailedByReason[notify.ImportInvalidContact] != int64(bad) ||
		len(res.Failures) != quan.MaxImportFailures || !res.FailuresTruncated ||
		res.Failures[0].Line != 3 || res.Failures[len(res.Failures)-1].Line != int64(quan.MaxImportFailures+2) {
		t.Errorf("imported %d, failed %d (%v), %d listed, truncated %v", res.Imported, res.Failed, res.FailedByReason, len(res.Failures), res.FailuresTruncated)
	}
}

// TestContactsImportRefused: only an admin imports; a file that cannot
// be read, or no file, is 400 naming the field, and nothing is imported.
func TestContactsImportRefused(t *testing.T) {
	ts := newTestServer(t)
	admin := ts.token(t, quan.Identity{Role: quan.RoleAdmin, Subject: "ops"})
	file := []byte("userId,phone\n1,13800000001\n")
	for name, token := range map[string]string{
		"merchant": ts.merchant(t, 1001),
		"user":     ts.user(t, 1),
	} {
		if r := ts.postForm(t, contactsPath, token, nil, "contacts.csv", file); r.Status != http.StatusForbidden || r.Problem.Code != quan.EFORBIDDEN {
			t.Errorf("%s: %d %s, want 403 forbidden", name, r.Status, r.Problem.Code)
		}
	}
	if r := ts.postForm(t, contactsPath, "", nil, "contacts.csv", file); r.Status != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", r.Status)
	}
	for name, tc := range map[string]struct {
		fields  map[string]string
		file    string
		content []byte
		field   string
	}{
		"NoUserIDColumn": {nil, "contacts.csv", []byte("phone\n13800000001\n"), "file"},
		"Empty":          {nil, "contacts.csv", nil, "file"},
		"NoFile":         {nil, "", nil, "file"},
		"UnknownField":   {map[string]string{"sheet": "x"}, "contacts.csv", file, "sheet"},
	} {
		r := ts.postForm(t, contactsPath, admin, tc.fields, tc.file, tc.content)
		if r.Status != http.StatusBadRequest || !r.hasField(tc.field) {
			t.Errorf("%s: %d %s, want 400 naming %s", name, r.Status, r.Body, tc.field)
		}
	}
	if c := ts.contact(t, admin, 1); c.Phone != "" {
		t.Errorf("a refused import stored %+v", c)
	}
	assertNoUploads(t, ts.dir)
}

// BenchmarkContactsImport posts a generated CSV of 100,000 contacts (a
// phone and a mail each) to POST /contacts/import on an SQLite store, as
// the embedded default runs it, and reports the rows imported a second.
// Every round imports the file over the last one's contacts.
func BenchmarkContactsImport(b *testing.B) {
	const rows = 100_000
	dir := b.TempDir()
	db, err := sqlite.Open(b.Context(), filepath.Join(dir, "quan.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	store := sqlite.NewStore(db)
	tokens, err := qhttp.NewTokens(testSecret, time.Now)
	if err != nil {
		b.Fatal(err)
	}
	api := &qhttp.Server{
		Templates: &templates.Service{Store: store},
		Tokens:    tokens,
		Notices: &notify.Service{Store: store, Contacts: store, Files: &disk.Files{Dir: dir},
			OpenRows: func(path string) (quan.RowReader, error) { return sheet.OpenRows(path, sheet.Options{}) }},
	}
	srv := httptest.NewServer(api.Handler())
	b.Cleanup(srv.Close)
	admin, err := tokens.Mint(quan.Identity{Role: quan.RoleAdmin, Subject: "ops"}, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	var csv bytes.Buffer
	csv.WriteString("userId,phone,mail\n")
	for u := range rows {
		fmt.Fprintf(&csv, "%d,138%08d,user%d@example.com\n", 1_000_000+u, u, u)
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "contacts.csv")
	fw.Write(csv.Bytes())
	mw.Close()
	b.ResetTimer()
	for b.Loop() {
		req, _ := http.NewRequest("POST", srv.URL+contactsPath, bytes.NewReader(body.Bytes()))
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("Authorization", "Bearer "+admin)
		res, err := srv.Client().Do(req)
		if err != nil {
			b.Fatal(err)
		}
		var out notify.ContactImport
		err = json.NewDecoder(res.Body).Decode(&out)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK || out.Imported != rows {
			b.Fatalf("status %d, %+v, %v", res.StatusCode, out, err)
		}
	}
	b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/import")
}
