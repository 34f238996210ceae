package quan

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// MaxImportFailures is how many failed rows an import's answer lists;
// FailedByReason counts them all.
const MaxImportFailures = 1000

// Reasons a row of an import fails, whatever the import.
const (
	ImportInvalidID       = "invalid_id"        // the user id is not a positive whole number that fits 64 bits, or lost digits in Excel
	ImportDuplicateInFile = "duplicate_in_file" // an earlier row of the file has the same user
)

// ImportFailure is a row of an imported file that was not imported.
type ImportFailure struct {
	Line   int64  `json:"line"`   // the row number in Excel, or the CSV line
	UserID string `json:"userId"` // as written (cut to MaxRawBytes)
	Reason string `json:"reason"` // one of the Import… reasons
	// Field is the column at fault: phone, mail or lang for
	// invalid_contact, the column's name for invalid_attribute.
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// ImportReport is the outcome of an import of users' data from a file
// (contacts, attributes).
type ImportReport struct {
	Rows     int64 `json:"rows"`     // data rows read
	Imported int64 `json:"imported"` // rows stored
	Failed   int64 `json:"failed"`   // rows not stored: Rows − Imported
	// FailedByReason counts the failed rows by reason, every reason of the
	// import present.
	FailedByReason map[string]int64 `json:"failedByReason"`
	// Failures are the first MaxImportFailures failed rows in file order;
	// FailuresTruncated says there are more.
	Failures          []ImportFailure `json:"failures"`
	FailuresTruncated bool            `json:"failuresTruncated"`
}

// fileImport is what an import of one row per user from an uploaded .xlsx
// or .csv needs; run does the rest, the same for every such import.
type fileImport[T any] struct {
	what    string // what is imported, in messages: "contacts"
	files   FileStore
	maxSize int64 // 0 means DefaultMaxFileSize
	maxRows int64
	batch   int      // rows a store call takes
	reasons []string // every reason a row may fail for
	// open opens the saved file and returns its rows and the parser of a
	// row: its value, its user (0 if the id is bad) and why it fails, if
	// it does. An error names what is wrong with the file.
	open func(path string) (RowReader, func(FileRow) (T, int64, *ImportFailure), error)
	// store stores rows in one transaction and returns how many it stored.
	store func(ctx context.Context, rows []T) (int, error)
}

// run saves r and imports it. The file is read to its end before anything
// is stored: a file that cannot be read (EINVALID naming the field
// "file"), or holds more than maxRows rows, imports nothing. A row whose
// user an earlier row has fails (duplicate_in_file), whatever became of
// that row. The valid rows are then stored batch at a time, a transaction
// each; if the store fails midway, the batches before stay imported.
func (im fileImport[T]) run(ctx context.Context, r io.Reader) (*ImportReport, error) {
	if im.files == nil || im.open == nil {
		return nil, Errorf(EINTERNAL, "%s import is not configured", im.what)
	}
	max := im.maxSize
	if max <= 0 {
		max = DefaultMaxFileSize
	}
	f, err := im.files.Save(ctx, r, max)
	if err != nil {
		return nil, err
	}
	defer im.files.Remove(f.Path)
	if f.Size == 0 {
		return nil, im.fileErr("the file is empty: upload an .xlsx or .csv with a header row and one user per row")
	}
	res := &ImportReport{FailedByReason: map[string]int64{}, Failures: []ImportFailure{}}
	for _, r := range im.reasons {
		res.FailedByReason[r] = 0
	}
	// First pass: check every row; store nothing.
	if err := im.each(ctx, f.Path, func(_ T, fail *ImportFailure) error {
		res.Rows++
		if fail == nil {
			return nil
		}
		res.Failed++
		res.FailedByReason[fail.Reason]++
		if len(res.Failures) < MaxImportFailures {
			res.Failures = append(res.Failures, *fail)
		} else {
			res.FailuresTruncated = true
		}
		return nil
	}); err != nil {
		return nil, err
	}
	// Second pass: store the valid rows a batch at a time.
	batch := make([]T, 0, im.batch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		n, err := im.store(ctx, batch)
		res.Imported += int64(n)
		batch = batch[:0]
		if err != nil {
			return fmt.Errorf("import %s: %d rows stored before: %w", im.what, res.Imported, err)
		}
		return nil
	}
	if err := im.each(ctx, f.Path, func(v T, fail *ImportFailure) error {
		if fail != nil {
			return nil
		}
		if batch = append(batch, v); len(batch) == im.batch {
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
func (im fileImport[T]) each(ctx context.Context, path string, fn func(T, *ImportFailure) error) error {
	rows, parse, err := im.open(path)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return im.fileErr(err.Error())
	}
	defer rows.Close()
	seen := newUserSet(1 << 12)
	buf := make([]FileRow, 1024)
	var n int64
	for {
		k, err := rows.Read(buf)
		for _, fr := range buf[:k] {
			if n++; n > im.maxRows {
				return im.fileErr(fmt.Sprintf("more than %d rows: split the file", im.maxRows))
			}
			v, user, fail := parse(fr)
			if user != 0 && !seen.add(user) {
				fail = &ImportFailure{Reason: ImportDuplicateInFile, Message: "an earlier row has the same user: only the first one counts"}
			}
			if fail != nil {
				fail.Line, fail.UserID = fr.Line, clipRaw(fr.UserID)
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

// importUserID parses the user id of a row, or says why it is not one.
func importUserID(fr FileRow) (int64, *ImportFailure) {
	id, ok := ParseUserID(fr.UserID)
	switch {
	case fr.Inexact:
		return 0, &ImportFailure{Reason: ImportInvalidID, Message: "the number lost digits in Excel: store the column as text"}
	case !ok:
		return 0, &ImportFailure{Reason: ImportInvalidID, Message: "not a positive whole number of at most 19 digits"}
	}
	return id, nil
}

// fileErr is EINVALID naming the field "file".
func (im fileImport[T]) fileErr(msg string) error {
	return &Error{Code: EINVALID, Message: "the " + im.what + " file cannot be imported", Fields: []FieldError{{Field: "file", Message: msg}}}
}

// canImport returns nil if who may do what (an admin), else
// ErrUnauthorized or EFORBIDDEN saying that only an admin may.
func canImport(who Identity, what string) error {
	switch {
	case who.Role == "":
		return ErrUnauthorized
	case who.Role != RoleAdmin:
		return Errorf(EFORBIDDEN, "only an admin may %s", what)
	}
	return nil
}
