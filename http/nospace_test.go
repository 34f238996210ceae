package http_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/quanhq/quan"
)

// fullDisk is a FileStore on a disk with no room left: Save reads the
// upload and fails as disk.Files does when the disk is full.
type fullDisk struct{ free int64 }

func (f fullDisk) Save(ctx context.Context, r io.Reader, max int64) (quan.StoredFile, error) {
	n, _ := io.Copy(io.Discard, r)
	return quan.StoredFile{}, quan.NoSpace("the upload", n, f.free, fmt.Errorf("save upload: %w", syscall.ENOSPC))
}
func (fullDisk) Open(string) (io.ReadCloser, error) { return nil, quan.ErrNotFound }
func (fullDisk) Remove(string) error                { return nil }

// TestUploadOnAFullDisk: an upload the data folder has no room for
// answers 507 insufficient_storage, saying how many bytes it needs and
// how many are free, and makes no task.
func TestUploadOnAFullDisk(t *testing.T) {
	ts := newServer(t, func(ts *testServer) { ts.api.Tasks.Files = fullDisk{free: 4096} })
	tok := ts.merchant(t, 1)
	tpl := ts.activeTemplate(t, tok, 10, 1)
	file := []byte("userId\n1\n2\n3\n")
	r := ts.upload(t, tok, map[string]string{"name": "full", "templateId": strconv.FormatInt(tpl.ID, 10)}, "users.csv", file)
	r.want(t, http.StatusInsufficientStorage, quan.ENOSPACE)
	if want := fmt.Sprintf("it needs %d bytes and 4096 are free", len(file)); !strings.Contains(r.Problem.Detail, want) {
		t.Errorf("detail %q, want %q", r.Problem.Detail, want)
	}
	var list struct{ Total int }
	ts.do(t, "GET", "/api/v1/tasks", tok, nil).decode(t, &list)
	if list.Total != 0 {
		t.Errorf("%d tasks made", list.Total)
	}
}
