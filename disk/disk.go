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
)

// Files keeps uploads under Dir/uploads, each under a random name.
type Files struct {
	Dir string
}

var _ quan.FileStore = (*Files)(nil)

// Save streams r to a new file while hashing it. A file over max bytes is
// removed and ErrTooLarge returned; so is a partial file on any error.
func (f *Files) Save(ctx context.Context, r io.Reader, max int64) (quan.StoredFile, error) {
	dir := filepath.Join(f.Dir, "uploads")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return quan.StoredFile{}, fmt.Errorf("create upload folder: %w", err)
	}
	name := make([]byte, 12)
	if _, err := rand.Read(name); err != nil {
		return quan.StoredFile{}, fmt.Errorf("name upload: %w", err)
	}
	path := filepath.Join(dir, hex.EncodeToString(name)+".upload")
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return quan.StoredFile{}, fmt.Errorf("create upload: %w", err)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), &ctxReader{ctx: ctx, r: io.LimitReader(r, max+1)})
	if err == nil && n > max {
		err = quan.Errorf(quan.ETOOLARGE, "the file is larger than the limit of %d bytes", max)
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		var qe *quan.Error
		if errors.As(err, &qe) {
			return quan.StoredFile{}, err
		}
		return quan.StoredFile{}, fmt.Errorf("save upload: %w", err)
	}
	return quan.StoredFile{Path: path, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
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
