package http_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/quanhq/quan"
)

// multipartForm is a form of fields then a file part named "file", as a
// browser writes it, and its boundary.
func multipartForm(fields [][2]string, fileName string, content []byte, after [][2]string) ([]byte, string) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for _, f := range fields {
		mw.WriteField(f[0], f[1])
	}
	fw, _ := mw.CreateFormFile("file", fileName)
	fw.Write(content)
	for _, f := range after {
		mw.WriteField(f[0], f[1])
	}
	mw.Close()
	return b.Bytes(), mw.Boundary()
}

// rawPost sends a POST of body over a connection of its own, as written:
// Content-Length says length, which may promise more than body holds;
// then the client stops writing (it is gone) and the answer is read from
// the half-open connection.
func (ts *testServer) rawPost(t *testing.T, path, token, boundary string, length int, body []byte) response {
	t.Helper()
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: quan\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: multipart/form-data; boundary=%s\r\nContent-Length: %d\r\n\r\n", path, token, boundary, length)
	if _, err := conn.Write(body); err != nil {
		t.Fatal(err)
	}
	if length > len(body) {
		if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("POST %s cut short: no answer: %v", path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := response{Status: res.StatusCode, Header: res.Header, Body: b}
	if res.StatusCode >= 400 {
		if err := json.Unmarshal(b, &r.Problem); err != nil {
			t.Fatalf("POST %s: %d %s", path, res.StatusCode, b)
		}
	}
	return r
}

// cuts are the ways a multipart upload ends early, applied to a whole
// form: the body, the Content-Length sent, and the field to be named.
var cuts = []struct {
	name string
	cut  func(form []byte, boundary string) ([]byte, int)
}{
	// The client went away in the middle of the file: fewer bytes came
	// than it announced.
	{"ClientGoneInFile", func(form []byte, boundary string) ([]byte, int) {
		end := bytes.Index(form, []byte("\r\n--"+boundary+"--"))
		return form[:end-3], len(form)
	}},
	// The body is whole as HTTP goes, but ends inside the file: no
	// boundary after it.
	{"BodyEndsInFile", func(form []byte, boundary string) ([]byte, int) {
		end := bytes.Index(form, []byte("\r\n--"+boundary+"--"))
		return form[:end-3], end - 3
	}},
	// The file is whole, but the closing boundary never comes: the
	// body ends with the delimiter that opens no part.
	{"NoClosingBoundary", func(form []byte, boundary string) ([]byte, int) {
		end := bytes.LastIndex(form, []byte("--\r\n"))
		return form[:end], end
	}},
}

// TestUploadCutShort: a task's form, or a contacts or attributes import,
// whose body ends before its closing boundary (the client gone in the
// middle of the file, a body ending inside the file, a closing boundary
// that never came) is 400 naming the field "file" and saying the upload
// ended before its end; no task, contact or fact is stored and no upload
// is left in the data folder.
func TestUploadCutShort(t *testing.T) {
	ts := newTestServer(t)
	m := ts.merchant(t, 1)
	admin := ts.token(t, quan.Identity{Role: quan.RoleAdmin})
	tpl := ts.activeTemplate(t, m, 100, 1)
	users := []byte("userId\n501\n502\n503\n504\n505\n506\n507\n508\n")
	contacts := []byte("userId,phone,mail\n501,13800138000,a@example.com\n502,13800138001,b@example.com\n")
	facts := []byte("userId,level,tags\n501,3,vip\n502,2,new\n")
	for _, c := range cuts {
		t.Run(c.name, func(t *testing.T) {
			t.Run("Task", func(t *testing.T) {
				form, boundary := multipartForm([][2]string{{"name", "双十一"}, {"templateId", fmt.Sprint(tpl.ID)}}, "users.csv", users, nil)
				body, length := c.cut(form, boundary)
				r := ts.rawPost(t, "/api/v1/tasks", m, boundary, length, body)
				wantCutShort(t, r, "file")
				var page struct{ Total int }
				ts.do(t, "GET", "/api/v1/tasks", m, nil).decode(t, &page)
				if page.Total != 0 {
					t.Fatalf("%d tasks stored from a form cut short", page.Total)
				}
				assertNoUploads(t, ts.dir)
			})
			t.Run("ContactsImport", func(t *testing.T) {
				form, boundary := multipartForm(nil, "contacts.csv", contacts, nil)
				body, length := c.cut(form, boundary)
				wantCutShort(t, ts.rawPost(t, "/api/v1/contacts/import", admin, boundary, length, body), "file")
				if got := ts.contact(t, admin, 501); got.Phone != "" || got.Mail != "" {
					t.Fatalf("contact %+v stored from a form cut short", got)
				}
				assertNoUploads(t, ts.dir)
			})
			t.Run("AttributesImport", func(t *testing.T) {
				form, boundary := multipartForm(nil, "facts.csv", facts, nil)
				body, length := c.cut(form, boundary)
				wantCutShort(t, ts.rawPost(t, "/api/v1/attributes/import", admin, boundary, length, body), "file")
				if got := ts.facts(t, admin, 501); got.Level != 0 || len(got.Tags) != 0 {
					t.Fatalf("facts %+v stored from a form cut short", got)
				}
				assertNoUploads(t, ts.dir)
			})
		})
	}
	// A field after the file, cut short: the field is named, and the
	// file, whole, is not kept.
	t.Run("ClientGoneInFieldAfterFile", func(t *testing.T) {
		form, boundary := multipartForm([][2]string{{"templateId", fmt.Sprint(tpl.ID)}}, "users.csv", users, [][2]string{{"name", "双十一 distribution"}})
		end := bytes.Index(form, []byte("双十一 distribution"))
		r := ts.rawPost(t, "/api/v1/tasks", m, boundary, len(form), form[:end+3])
		wantCutShort(t, r, "name")
		assertNoUploads(t, ts.dir)
	})
	// A part after an import's file is refused by its name, and the
	// file not imported.
	t.Run("PartAfterImportFile", func(t *testing.T) {
		form, boundary := multipartForm(nil, "contacts.csv", contacts, [][2]string{{"note", "x"}})
		r := ts.rawPost(t, "/api/v1/contacts/import", admin, boundary, len(form), form)
		r.want(t, http.StatusBadRequest, quan.EINVALID)
		if !r.hasField("note") {
			t.Fatalf("errors %+v do not name note", r.Problem.Errors)
		}
		if got := ts.contact(t, admin, 501); got.Phone != "" {
			t.Fatalf("contact %+v stored from a form with a part after the file", got)
		}
		assertNoUploads(t, ts.dir)
	})
	// The same forms, whole, are taken: the cuts alone are refused.
	t.Run("WholeFormsTaken", func(t *testing.T) {
		form, boundary := multipartForm([][2]string{{"name", "双十一"}, {"templateId", fmt.Sprint(tpl.ID)}}, "users.csv", users, nil)
		ts.rawPost(t, "/api/v1/tasks", m, boundary, len(form), form).want(t, http.StatusCreated, "")
		form, boundary = multipartForm(nil, "contacts.csv", contacts, nil)
		ts.rawPost(t, "/api/v1/contacts/import", admin, boundary, len(form), form).want(t, http.StatusOK, "")
		if got := ts.contact(t, admin, 501); got.Phone == "" {
			t.Fatalf("contact %+v not imported from a whole form", got)
		}
	})
}

// wantCutShort fails unless r is 400 naming field with the words of a
// form cut short.
func wantCutShort(t *testing.T, r response, field string) {
	t.Helper()
	r.want(t, http.StatusBadRequest, quan.EINVALID)
	for _, f := range r.Problem.Errors {
		if f.Field == field && strings.Contains(f.Message, "the upload ended before its end") {
			return
		}
	}
	t.Fatalf("errors %+v do not say the upload of %q ended before its end", r.Problem.Errors, field)
}
