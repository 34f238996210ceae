package http_test

import (
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/claims"
	qhttp "github.com/quanhq/quan/http"
	"github.com/quanhq/quan/inmem"
)

// notReplayed fails unless r is a fresh answer, not one kept under its
// Idempotency-Key.
func notReplayed(t *testing.T, r response) {
	t.Helper()
	if r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("answered %d %s replayed under its key, want a fresh answer", r.Status, r.Body)
	}
}

// TestIdempotencyNotFoundNotKept: a claim of a template that does not
// exist (yet) is refused before it runs, so the 404 is not kept under its
// Idempotency-Key: the retry once the template exists claims it.
func TestIdempotencyNotFoundNotKept(t *testing.T) {
	ts := newClaimServer(t, nil)
	m, u := ts.merchant(t, 1), ts.user(t, 1)
	claimPath := func(id int64) string { return fmt.Sprintf("/api/v1/templates/%d/claim", id) }

	t.Run("Draft", func(t *testing.T) {
		draft := ts.create(t, m, validTemplate())
		ts.doKey(t, "POST", claimPath(draft.ID), u, "claim-draft", nil).want(t, http.StatusNotFound, quan.ENOTFOUND)
		ts.do(t, "POST", loc(draft.ID)+"/activate", m, nil).want(t, http.StatusOK, "")
		r := ts.doKey(t, "POST", claimPath(draft.ID), u, "claim-draft", nil)
		r.want(t, http.StatusAccepted, "")
		notReplayed(t, r)
	})
	t.Run("NotCreatedYet", func(t *testing.T) {
		next := ts.create(t, m, validTemplate()).ID + 1
		ts.doKey(t, "POST", claimPath(next), u, "claim-next", nil).want(t, http.StatusNotFound, quan.ENOTFOUND)
		if tpl := ts.activeTemplate(t, m, 10, 1); tpl.ID != next {
			t.Fatalf("the next template is %d, not %d", tpl.ID, next)
		}
		r := ts.doKey(t, "POST", claimPath(next), u, "claim-next", nil)
		r.want(t, http.StatusAccepted, "")
		notReplayed(t, r)
	})
}

// TestIdempotencyRateLimitedNotKept: a claim over the user's rate limit is
// refused before it runs, so the 429 is not kept under its
// Idempotency-Key: the retry after its Retry-After claims.
func TestIdempotencyRateLimitedNotKept(t *testing.T) {
	ts := newClaimServer(t, func(ts *testServer) {
		ts.claims.Limits = claims.Limits{UserRate: 1.0 / 60, UserBurst: 1}
		limiter := inmem.NewRateLimiter()
		limiter.Now = ts.clock
		ts.claims.Limiter = limiter
	})
	m, u := ts.merchant(t, 1), ts.user(t, 1)
	first, second := ts.activeTemplate(t, m, 10, 1), ts.activeTemplate(t, m, 10, 1)
	ts.claim(t, u, first.ID).want(t, http.StatusAccepted, "")
	path := fmt.Sprintf("/api/v1/templates/%d/claim", second.ID)
	r := ts.doKey(t, "POST", path, u, "claim-limited", nil)
	r.want(t, http.StatusTooManyRequests, quan.ERATELIMITED)
	wait, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if err != nil || wait < 1 {
		t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
	}
	ts.setNow(testNow.Add(time.Duration(wait) * time.Second))
	r = ts.doKey(t, "POST", path, u, "claim-limited", nil)
	r.want(t, http.StatusAccepted, "")
	notReplayed(t, r)
}

// TestIdempotencyInvalidNotKept: a request refused for its input is not
// kept: the same key with the input mended runs, and runs once.
func TestIdempotencyInvalidNotKept(t *testing.T) {
	ts := newClaimServer(t, nil)
	m := ts.merchant(t, 1)
	bad := validTemplate()
	bad["stock"] = -1
	ts.doKey(t, "POST", "/api/v1/templates", m, "create-mended", bad).want(t, http.StatusBadRequest, quan.EINVALID)
	first := ts.doKey(t, "POST", "/api/v1/templates", m, "create-mended", validTemplate())
	first.want(t, http.StatusCreated, "")
	notReplayed(t, first)
	again := ts.doKey(t, "POST", "/api/v1/templates", m, "create-mended", validTemplate())
	again.want(t, http.StatusCreated, "")
	if again.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.Body, first.Body) {
		t.Fatalf("the retry of a create answered %s, want the first answer %s replayed", again.Body, first.Body)
	}
}

// postFormKey posts a multipart form under an Idempotency-Key, its parts
// in the order given, separated by boundary.
func (ts *testServer) postFormKey(t *testing.T, path, token, key, boundary string, fields [][2]string, fileName string, content []byte) response {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	if err := mw.SetBoundary(boundary); err != nil {
		t.Fatal(err)
	}
	for _, f := range fields {
		mw.WriteField(f[0], f[1])
	}
	fw, _ := mw.CreateFormFile("file", fileName)
	fw.Write(content)
	mw.Close()
	req, _ := http.NewRequest("POST", ts.URL+path, &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Idempotency-Key", key)
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

// TestIdempotentUploadNewBoundary: an upload retried under its
// Idempotency-Key, its form written afresh with another boundary (as
// curl -F and every client do), gets the first answer, the same task; the
// form is compared by its fields and its file, so another file, another
// file name or another field under the key is 422 idempotency_mismatch.
func TestIdempotentUploadNewBoundary(t *testing.T) {
	ts := newTestServer(t)
	tok := ts.merchant(t, 1)
	tpl := ts.activeTemplate(t, tok, 100, 1)
	fields := [][2]string{{"name", "retried"}, {"templateId", fmt.Sprint(tpl.ID)}}
	file := []byte("userId\n901\n902\n")
	first := ts.postFormKey(t, "/api/v1/tasks", tok, "upload-1", "boundary-of-the-first-try", fields, "users.csv", file)
	first.want(t, http.StatusCreated, "")
	again := ts.postFormKey(t, "/api/v1/tasks", tok, "upload-1", "boundary-of-the-retry", fields, "users.csv", file)
	again.want(t, http.StatusCreated, "")
	if again.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.Body, first.Body) {
		t.Fatalf("the retried upload answered %s, want the first answer %s replayed", again.Body, first.Body)
	}
	// The fields in another order are the same form.
	swapped := [][2]string{fields[1], fields[0]}
	ts.postFormKey(t, "/api/v1/tasks", tok, "upload-1", "boundary-3", swapped, "users.csv", file).want(t, http.StatusCreated, "")

	for name, c := range map[string]struct {
		fields   [][2]string
		fileName string
		file     []byte
	}{
		"AnotherFile":     {fields, "users.csv", []byte("userId\n901\n903\n")},
		"AnotherFileName": {fields, "others.csv", file},
		"AnotherField":    {[][2]string{{"name", "another"}, fields[1]}, "users.csv", file},
	} {
		t.Run(name, func(t *testing.T) {
			ts.postFormKey(t, "/api/v1/tasks", tok, "upload-1", "boundary-of-another", c.fields, c.fileName, c.file).
				want(t, http.StatusUnprocessableEntity, quan.EIDEMMISMATCH)
		})
	}
	var page struct {
		Items []qhttp.TaskView
		Total int
	}
	ts.do(t, "GET", "/api/v1/tasks", tok, nil).decode(t, &page)
	if page.Total != 1 {
		t.Fatalf("%d tasks, want 1: the upload ran once", page.Total)
	}
}
