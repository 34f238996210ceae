package disk

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/quanhq/quan"
)

// fullDisk makes f write its uploads to /dev/full, where every write
// fails with ENOSPC, as on a disk with no room left.
func fullDisk(t *testing.T, f *Files) {
	t.Helper()
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full on this system to fill a disk with")
	}
	f.create = func(string) (*os.File, error) { return os.OpenFile("/dev/full", os.O_WRONLY, 0) }
}

// uploads lists what the uploads folder holds.
func uploads(t *testing.T, f *Files) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(f.Dir, "uploads"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestSaveOnAFullDisk: an upload the disk has no room for is
// quan.ENOSPACE, whose message says how many bytes the whole upload needs
// and how many are free, the cause (ENOSPC) in the chain; nothing is kept.
func TestSaveOnAFullDisk(t *testing.T) {
	f := &Files{Dir: t.TempDir()}
	fullDisk(t, f)
	const size = 200_000 // several writes: the first fails, the rest is counted
	_, err := f.Save(t.Context(), bytes.NewReader(make([]byte, size)), 1<<20)
	if quan.ErrorCode(err) != quan.ENOSPACE || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Save: %v (code %q), want %s with ENOSPC", err, quan.ErrorCode(err), quan.ENOSPACE)
	}
	msg := quan.ErrorMessage(err)
	if !strings.Contains(msg, "it needs 200000 bytes") || !strings.Contains(msg, "are free") {
		t.Errorf("message %q: want the bytes needed and free", msg)
	}
	if got := uploads(t, f); len(got) != 0 {
		t.Errorf("left behind: %q", got)
	}
}

// TestSaveOnAFullDiskOverTheLimit: an upload over the limit is refused
// as too large, whatever the disk.
func TestSaveOnAFullDiskOverTheLimit(t *testing.T) {
	f := &Files{Dir: t.TempDir()}
	fullDisk(t, f)
	_, err := f.Save(t.Context(), bytes.NewReader(make([]byte, 5000)), 1000)
	if quan.ErrorCode(err) != quan.ETOOLARGE {
		t.Fatalf("Save: %v, want %s", err, quan.ETOOLARGE)
	}
}

// TestSaveLeavesNothingHalfWritten: an upload over the limit, and one
// whose reader fails (a client gone), keep no file; the reader's failure
// is not taken for a full disk.
func TestSaveLeavesNothingHalfWritten(t *testing.T) {
	f := &Files{Dir: t.TempDir()}
	if _, err := f.Save(t.Context(), bytes.NewReader(make([]byte, 5000)), 1000); quan.ErrorCode(err) != quan.ETOOLARGE {
		t.Fatalf("over the limit: %v", err)
	}
	broken := &failingReader{after: 3000, err: syscall.ENOSPC}
	if _, err := f.Save(t.Context(), broken, 1<<20); err == nil || quan.ErrorCode(err) == quan.ENOSPACE {
		t.Fatalf("reader failed: %v, want an error that is not the disk's", err)
	}
	if got := uploads(t, f); len(got) != 0 {
		t.Errorf("left behind: %q", got)
	}
	saved, err := f.Save(t.Context(), strings.NewReader("userId\n1\n"), 1<<20)
	if err != nil || saved.Size != 9 {
		t.Fatalf("Save: %+v, %v", saved, err)
	}
	if got := uploads(t, f); len(got) != 1 {
		t.Errorf("kept %q, want the one file", got)
	}
}

// failingReader reads zeros, then fails with err.
type failingReader struct {
	after int
	err   error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if r.after <= 0 {
		return 0, r.err
	}
	n := min(len(p), r.after)
	clear(p[:n])
	r.after -= n
	return n, nil
}

// TestProbe: the probe writes and removes a file in a data folder that
// can be written, and fails for one that is gone.
func TestProbe(t *testing.T) {
	dir := t.TempDir()
	f := &Files{Dir: dir}
	if err := f.Probe(t.Context()); err != nil {
		t.Fatalf("Probe: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the probe left %v", entries)
	}
	gone := &Files{Dir: filepath.Join(dir, "gone")}
	if err := gone.Probe(t.Context()); err == nil || !strings.Contains(err.Error(), "gone") {
		t.Errorf("Probe of a folder that is gone: %v, want an error naming it", err)
	}
}
