package http

import (
	"io"
	"mime/multipart"
	"net/http"
	"runtime"
	"testing"
)

// zeros is an endless reader of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// multipartRequest is a POST of a form with a field and a file of size
// bytes, streamed as it is read (never held whole), separated by
// boundary.
func multipartRequest(t *testing.T, boundary string, size int64) *http.Request {
	t.Helper()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	if err := mw.SetBoundary(boundary); err != nil {
		t.Fatal(err)
	}
	go func() {
		mw.WriteField("name", "big")
		fw, _ := mw.CreateFormFile("file", "big.csv")
		io.Copy(fw, io.LimitReader(zeros{}, size))
		pw.CloseWithError(mw.Close())
	}()
	r, err := http.NewRequest("POST", "/api/v1/tasks", pr)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", mw.FormDataContentType())
	return r
}

// TestFingerprintMultipartStreams: a 256 MiB upload is fingerprinted as
// it streams by, with a few hundred KiB allocated, and the same form with
// another boundary has the same fingerprint.
func TestFingerprintMultipartStreams(t *testing.T) {
	const size = 256 << 20
	sum := func(boundary string) (string, uint64) {
		r := multipartRequest(t, boundary, size)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		fp := newFingerprint(r)
		defer fp.Close()
		if _, err := io.Copy(fp, r.Body); err != nil {
			t.Fatal(err)
		}
		s := fp.Sum()
		runtime.ReadMemStats(&after)
		return s, after.TotalAlloc - before.TotalAlloc
	}
	first, alloc := sum("first-boundary")
	second, _ := sum("second-boundary")
	t.Logf("a %d MiB form fingerprinted with %d KiB allocated", size>>20, alloc>>10)
	if first != second {
		t.Errorf("one form with two boundaries has two fingerprints, %s and %s", first, second)
	}
	if alloc > 8<<20 {
		t.Errorf("fingerprinting a %d MiB form allocated %d MiB: it must stream", size>>20, alloc>>20)
	}
}
