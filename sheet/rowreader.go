package sheet

import (
	"context"
	"errors"
	"io"

	"github.com/quanhq/quan"
)

// RowReader serves a Reader's rows as the quan.RowReader a distribution
// reads: the user id, phone and mail columns, and inexact user ids
// (ErrInexactNumber) flagged. Opened with Options.Others, it is a
// quan.OthersReader.
type RowReader struct {
	r   *Reader
	buf []Row
}

var _ quan.OthersReader = (*RowReader)(nil)

// OpenRows opens path like Open, as a quan.RowReader.
func OpenRows(path string, opt Options) (*RowReader, error) {
	r, err := Open(path, opt)
	if err != nil {
		return nil, err
	}
	return &RowReader{r: r}, nil
}

// Read fills dst with the next rows, like Reader.Read.
func (rr *RowReader) Read(dst []quan.FileRow) (int, error) {
	if cap(rr.buf) < len(dst) {
		rr.buf = make([]Row, len(dst))
	}
	n, err := rr.r.Read(rr.buf[:len(dst)])
	for i, row := range rr.buf[:n] {
		dst[i] = quan.FileRow{Line: row.Line, BlankBefore: row.BlankBefore, UserID: row.UserID, Inexact: errors.Is(row.Err, ErrInexactNumber),
			Phone: row.Phone, Mail: row.Mail, Lang: row.Lang, Others: row.Others}
	}
	return n, err
}

// Others names the columns of quan.FileRow.Others, like Reader.Others.
func (rr *RowReader) Others() []string { return rr.r.Others() }

// Progress reports the bytes consumed and in all, like Reader.Progress.
func (rr *RowReader) Progress() (read, total int64) { return rr.r.Progress() }

// Close closes the Reader.
func (rr *RowReader) Close() error { return rr.r.Close() }

// Check opens path, reads its header and first rows and closes it: what it
// returns is what is wrong with the file, in words a merchant can act on.
func Check(ctx context.Context, path string, opt Options) error {
	r, err := Open(path, opt)
	if err != nil {
		return err
	}
	defer r.Close()
	if _, err := r.Read(make([]Row, 256)); err != nil && err != io.EOF {
		return err
	}
	return nil
}

// Count reads the whole file at path and returns its number of data rows.
func Count(ctx context.Context, path string, opt Options) (int64, error) {
	r, err := Open(path, opt)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	buf := make([]Row, 1024)
	var n int64
	for {
		k, err := r.Read(buf)
		n += int64(k)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if err := ctx.Err(); err != nil {
			return n, err
		}
	}
}
