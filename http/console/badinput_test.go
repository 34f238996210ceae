package console_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/quanhq/quan"
)

// TestConsoleBadInput: the console's forms and lists answer bad input as
// the API does, 400 naming the input, and store nothing: a template time
// out of range (year 0000), a name that is not UTF-8, a goods id with a
// tab; a list's page that is not a whole number from 1; a statistics
// range out of range; a task's send time out of range.
func TestConsoleBadInput(t *testing.T) {
	var d distribution
	var env statsEnv
	tc := newConsole(t, withTasks(&d), withStats(&env))
	tpl := activeTemplate(t, tc, 1001, 10)
	b := tc.signedIn(t, "m1001")
	ctx := context.Background()
	count := func() int {
		_, n, err := tc.tpls.List(ctx, admin, quan.TemplateFilter{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := count()
	for _, tc := range []struct {
		name, input, value, want string
	}{
		{"IssueStartYear0", "issueStart", "0000-01-01T10:00", `<span id="issueStart-err"><span class="field-error" role="alert">`},
		{"IssueEndYear10000", "issueEnd", "9999-12-31T23:59", ""}, // Shanghai's 23:59 is 15:59 UTC: in range
		{"NameNotUTF8", "name", "满100\xff减10", `<span id="name-err"><span class="field-error" role="alert">is not valid UTF-8`},
		{"GoodsIDTab", "scope.ids", "sku\t1", `scope.ids[0]: must not contain U&#43;0009`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := templateForm()
			f.Set(tc.input, tc.value)
			if tc.input == "scope.ids" {
				f.Set("scope.type", "goods")
			}
			status, _, body := b.post("/console/templates", f)
			if tc.want == "" {
				if status != http.StatusOK {
					t.Fatalf("%s=%q: %d\n%s", tc.input, tc.value, status, body)
				}
				before++
				return
			}
			if status != http.StatusBadRequest {
				t.Fatalf("%s=%q: %d, want 400\n%s", tc.input, tc.value, status, body)
			}
			contains(t, body, tc.want)
		})
	}
	if n := count(); n != before {
		t.Fatalf("%d templates stored, %d before", n, before)
	}
	for _, path := range []string{"/console/templates?page=abc", "/console/templates?page=0", "/console/tasks?page=-1",
		"/console/tasks?page=99999999999999999999", "/console/templates?q=a%00b"} {
		t.Run("List"+path, func(t *testing.T) {
			status, _, body := b.get(path)
			if status != http.StatusBadRequest {
				t.Fatalf("%d, want 400\n%s", status, body)
			}
			param := "page "
			if strings.Contains(path, "q=") {
				param = "name "
			}
			contains(t, body, param)
		})
	}
	t.Run("AccountsPage", func(t *testing.T) {
		status, _, body := tc.signedIn(t, "root").get("/console/accounts?page=x")
		if status != http.StatusBadRequest {
			t.Fatalf("%d, want 400\n%s", status, body)
		}
		contains(t, body, "page ")
	})
	t.Run("StatsYear0", func(t *testing.T) {
		status, _, body := b.get("/console/stats?from=0000-01-01&to=0000-01-02")
		if status != http.StatusBadRequest {
			t.Fatalf("%d, want 400\n%s", status, body)
		}
		contains(t, body, "out of range")
	})
	t.Run("TaskSendAtYear0", func(t *testing.T) {
		b.get("/console/tasks/new")
		status, _, body := b.upload(uploadForm(tpl.ID, false, "0000-01-01T10:00"), usersFile(), true)
		if status != http.StatusBadRequest {
			t.Fatalf("%d, want 400\n%s", status, body)
		}
		contains(t, body, `<span id="sendAt-err"><span class="field-error" role="alert">`, "out of range")
		if ts, n, _ := d.tasks.List(ctx, admin, quan.TaskFilter{}); n != 0 {
			t.Fatalf("tasks stored: %+v", ts)
		}
		if n := d.uploads(t); n != 0 {
			t.Fatalf("%d uploads left", n)
		}
	})
}

// TestConsoleUploadCutShort: the distribution form, cut short in the
// middle of its file (the browser gone) or without its closing boundary,
// is shown again with 400 and the file's error; no task is stored and no
// upload is left.
func TestConsoleUploadCutShort(t *testing.T) {
	var d distribution
	tc := newConsole(t, withTasks(&d))
	tpl := activeTemplate(t, tc, 1001, 2000)
	b := tc.signedIn(t, "m1001")
	b.get("/console/tasks/new")
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	mw.WriteField("csrf", b.csrf)
	for _, f := range uploadForm(tpl.ID, false, "") {
		if f[0] != "file" {
			mw.WriteField(f[0], f[1])
		}
	}
	fw, _ := mw.CreateFormFile("file", "users.csv")
	fw.Write(usersFile())
	mw.Close()
	whole := form.Bytes()
	closing := bytes.LastIndex(whole, []byte("--\r\n"))
	for _, c := range []struct {
		name   string
		body   []byte
		length int
	}{
		{"BrowserGoneInFile", whole[:len(whole)/2], len(whole)},
		{"NoClosingBoundary", whole[:closing], closing},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, body := b.rawPost("/console/tasks", mw.Boundary(), c.length, c.body)
			if status != http.StatusBadRequest {
				t.Fatalf("%d, want 400\n%s", status, body)
			}
			contains(t, body, `<span id="file-err"><span class="field-error" role="alert">the upload ended before its end`)
			if ts, n, _ := d.tasks.List(context.Background(), admin, quan.TaskFilter{}); n != 0 {
				t.Fatalf("tasks stored: %+v", ts)
			}
			if n := d.uploads(t); n != 0 {
				t.Fatalf("%d uploads left", n)
			}
		})
	}
}

// rawPost sends a multipart POST of body with the browser's cookies over
// a connection of its own, Content-Length length; if that promises more
// than body, the browser then stops writing, gone. It returns the status
// and the page.
func (b *browser) rawPost(path, boundary string, length int, body []byte) (int, string) {
	b.t.Helper()
	u, _ := url.Parse(b.tc.URL + path)
	var cookies []string
	for _, c := range b.http.Jar.Cookies(u) {
		cookies = append(cookies, c.Name+"="+c.Value)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		b.t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nCookie: %s\r\nContent-Type: multipart/form-data; boundary=%s\r\nContent-Length: %d\r\n\r\n",
		path, u.Host, strings.Join(cookies, "; "), boundary, length)
	conn.Write(body)
	if length > len(body) {
		conn.(*net.TCPConn).CloseWrite()
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		b.t.Fatalf("POST %s cut short: no answer: %v", path, err)
	}
	defer res.Body.Close()
	page, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(page)
}
