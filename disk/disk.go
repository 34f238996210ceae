// Package disk keeps uploaded files and reports in the data folder.
package disk

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/diskfree"
)

// Files keeps uploads under Dir/uploads, each under a random name.
type Files struct {
	Dir string

	// create opens a new file for writing; nil is os.OpenFile's exclusive
	// create. A test points it at /dev/full to fill the disk.
	create func(name string) (*os.File, error)
}

var _ quan.FileStore = (*Files)(nil)

// Save streams r to a new file while hashing it. A file over max bytes is
// removed and ErrTooLarge returned; so is a partial file on any error. A
// disk that fills up is quan.ENOSPACE, saying how many bytes the upload
// needs (the rest of r is read, not kept, to count them) and how many are
// free, once the partial file is gone.
func (f *Files) Save(ctx context.Context, r io.Reader, max int64) (quan.StoredFile, error) {
	dir := filepath.Join(f.Dir, "uploads")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return quan.StoredFile{}, f.writeError("create upload folder", err, 0)
	}
	name := make([]byte, 12)
	if _, err := rand.Read(name); err != nil {
		return quan.StoredFile{}, fmt.Errorf("name upload: %w", err)
	}
	path := filepath.Join(dir, hex.EncodeToString(name)+".upload")
	create := f.create
	if create == nil {
		create = func(name string) (*os.File, error) {
			return os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		}
	}
	out, err := create(path)
	if err != nil {
		return quan.StoredFile{}, f.writeError("create upload", err, 0)
	}
	h := sha256.New()
	in := &countingReader{r: &ctxReader{ctx: ctx, r: io.LimitReader(r, max+1)}}
	dst := &writeSide{w: out}
	n, err := io.Copy(io.MultiWriter(dst, h), in)
	if err == nil && n > max {
		err = quan.Errorf(quan.ETOOLARGE, "the file is larger than the limit of %d bytes", max)
	}
	if err == nil {
		err = out.Sync()
		dst.err = err
	}
	if cerr := out.Close(); err == nil && cerr != nil {
		err, dst.err = cerr, cerr
	}
	if err != nil {
		os.Remove(path)
		var qe *quan.Error
		switch {
		case errors.As(err, &qe):
			return quan.StoredFile{}, err
		case dst.err != nil && diskfree.Full(dst.err):
			// The rest of the upload is read, within the limit, to tell
			// the client how much room it needs.
			io.Copy(io.Discard, in)
			if in.n > max {
				return quan.StoredFile{}, quan.Errorf(quan.ETOOLARGE, "the file is larger than the limit of %d bytes", max)
			}
			return quan.StoredFile{}, f.writeError("save upload", dst.err, in.n)
		}
		return quan.StoredFile{}, fmt.Errorf("save upload: %w", err)
	}
	return quan.StoredFile{Path: path, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// writeError is err, of a write to the data folder for op, as
// quan.ENOSPACE when the disk is full (needed bytes, 0 if unknown), else
// wrapped with op.
func (f *Files) writeError(op string, err error, needed int64) error {
	if diskfree.Full(err) {
		return quan.NoSpace("the upload", needed, diskfree.Free(f.Dir), fmt.Errorf("%s: %w", op, err))
	}
	return fmt.Errorf("%s: %w", op, err)
}

// Probe writes a small file to Dir and removes it: an error says the data
// folder cannot be written (gone, read-only, its disk full: quan.ENOSPACE),
// for readiness probes.
func (f *Files) Probe(ctx context.Context) error {
	name := make([]byte, 6)
	if _, err := rand.Read(name); err != nil {
		return fmt.Errorf("probe data folder: %w", err)
	}
	path := filepath.Join(f.Dir, ".probe-"+hex.EncodeToString(name))
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return f.probeError(err)
	}
	_, err = out.Write([]byte("quan\n"))
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if rerr := os.Remove(path); err == nil {
		err = rerr
	}
	if err != nil {
		return f.probeError(err)
	}
	return nil
}

func (f *Files) probeError(err error) error {
	if diskfree.Full(err) {
		return quan.NoSpace("a small file", 0, diskfree.Free(f.Dir), fmt.Errorf("probe data folder %s: %w", f.Dir, err))
	}
	return fmt.Errorf("probe data folder %s: %w", f.Dir, err)
}

// Open reads a saved file; ENOTFOUND if it is gone.
func (f *Files) Open(path string) (io.ReadCloser, error) {
	r, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, quan.Errorf(quan.ENOTFOUND, "the file %s is missing from the data folder", filepath.Base(path))
	}
	if err != nil {
		return nil, fmt.Errorf("open upload: %w", err)
	}
	return r, nil
}

// Remove deletes a saved file; a missing file is not an error.
func (f *Files) Remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove upload: %w", err)
	}
	return nil
}

// ReportPath is where the failure report of task id is kept.
func (f *Files) ReportPath(t *quan.Task) string {
	return filepath.Join(f.Dir, "reports", fmt.Sprintf("task-%d-failures.xlsx", t.ID))
}

// writeSide passes writes to w and keeps its error: the disk's, apart
// from the reader's.
type writeSide struct {
	w   io.Writer
	err error
}

func (w *writeSide) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err != nil {
		w.err = err
	}
	return n, err
}

// countingReader counts the bytes read from r.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// ctxReader stops a long copy when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
