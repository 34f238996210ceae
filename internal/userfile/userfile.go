// Package userfile imports an uploaded .xlsx or .csv of one row per user
// (contacts, users' facts): the file is read whole and checked before
// anything is stored, then stored a batch at a time, with a report of the
// rows that failed and why.
package userfile

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/userset"
)

// Import is what an import of one row per user from an uploaded .xlsx
// or .csv needs; Run does the rest, the same for every such import.
type Import[T any] struct {
	What    string // what is imported, in messages: "contacts"
	Files   quan.FileStore
	MaxSize int64 // 0 means quan.DefaultMaxFileSize
	MaxRows int64
	Batch   int      // rows a store call takes
	Reasons []string // every reason a row may fail for
	// Open opens the saved file and returns its rows and the parser of a
	// row: its value, its user (0 if the id is bad) and why it fails, if
	// it does. An error names what is wrong with the file.
	Open func(path string) (quan.RowReader, func(quan.FileRow) (T, int64, *quan.ImportFailure), error)
	// Store stores rows in one transaction and returns how many it stored.
	Store func(ctx context.Context, rows []T) (int, error)
}

// Run saves r and imports it. The file is read to its end before anything
// is stored: a file that cannot be read (quan.EINVALID naming the field
// "file"), or holds more than MaxRows rows, imports nothing. A row whose
// user an earlier row has fails (duplicate_in_file), whatever became of
// that row. The valid rows are then stored batch at a time, a transaction
// each; if the store fails midway, the batches before stay imported.
func (im Import[T]) Run(ctx context.Context, r io.Reader) (*quan.ImportReport, error) {
	if im.Files == nil || im.Open == nil {
		return nil, quan.Errorf(quan.EINTERNAL, "%s import is not configured", im.What)
	}
	max := im.MaxSize
	if max <= 0 {
		max = quan.DefaultMaxFileSize
	}
	f, err := im.Files.Save(ctx, r, max)
	if err != nil {
		return nil, err
	}
	defer im.Files.Remove(f.Path)
	if f.Size == 0 {
		return nil, im.fileErr("the file is empty: upload an .xlsx or .csv with a header row and one user per row")
	}
	res := &quan.ImportReport{FailedByReason: map[string]int64{}, Failures: []quan.ImportFailure{}}
	for _, r := range im.Reasons {
		res.FailedByReason[r] = 0
	}
	// First pass: check every row; store nothing.
	if err := im.each(ctx, f.Path, func(_ T, fail *quan.ImportFailure) error {
		res.Rows++
		if fail == nil {
			return nil
		}
		res.Failed++
		res.FailedByReason[fail.Reason]++
		if len(res.Failures) < quan.MaxImportFailures {
			res.Failures = append(res.Failures, *fail)
		} else {
			res.FailuresTruncated = true
		}
		return nil
	}); err != nil {
		return nil, err
	}
	// Second pass: store the valid rows a batch at a time.
	batch := make([]T, 0, im.Batch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		n, err := im.Store(ctx, batch)
		res.Imported += int64(n)
		batch = batch[:0]
		if err != nil {
			return fmt.Errorf("import %s: %d rows stored before: %w", im.What, res.Imported, err)
		}
		return nil
	}
	if err := im.each(ctx, f.Path, func(v T, fail *quan.ImportFailure) error {
		if fail != nil {
			return nil
		}
		if batch = append(batch, v); len(batch) == im.Batch {
			return flush()
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return res, nil
}

// each reads the file at path and calls fn with each row, valid (fail
// nil) or not; an error of fn ends the reading.
func (im Import[T]) each(ctx context.Context, path string, fn func(T, *quan.ImportFailure) error) error {
	rows, parse, err := im.Open(path)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return im.fileErr(err.Error())
	}
	defer rows.Close()
	seen := userset.New(1 << 12)
	buf := make([]quan.FileRow, 1024)
	var n int64
	for {
		k, err := rows.Read(buf)
		for _, fr := range buf[:k] {
			if n++; n > im.MaxRows {
				return im.fileErr(fmt.Sprintf("more than %d rows: split the file", im.MaxRows))
			}
			v, user, fail := parse(fr)
			if user != 0 && !seen.Add(user) {
				fail = &quan.ImportFailure{Reason: quan.ImportDuplicateInFile, Message: "an earlier row has the same user: only the first one counts"}
			}
			if fail != nil {
				fail.Line, fail.UserID = fr.Line, quan.ClipRaw(fr.UserID)
			}
			if err := fn(v, fail); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return im.fileErr(err.Error())
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// UserID parses the user id of a row, or says why it is not one.
func UserID(fr quan.FileRow) (int64, *quan.ImportFailure) {
	id, ok := quan.ParseUserID(fr.UserID)
	switch {
	case fr.Inexact:
		return 0, &quan.ImportFailure{Reason: quan.ImportInvalidID, Message: "the number lost digits in Excel: store the column as text"}
	case !ok:
		return 0, &quan.ImportFailure{Reason: quan.ImportInvalidID, Message: "not a positive whole number of at most 19 digits"}
	}
	return id, nil
}

// fileErr is quan.EINVALID naming the field "file".
func (im Import[T]) fileErr(msg string) error {
	return &quan.Error{Code: quan.EINVALID, Message: "the " + im.What + " file cannot be imported", Fields: []quan.FieldError{{Field: "file", Message: msg}}}
}
