package quan

import (
	"context"
	"io"
	"iter"
)

// FileStore keeps the files merchants upload.
type FileStore interface {
	// Save copies r into a new file, at most max bytes (ErrTooLarge past
	// it, nothing kept), and returns where it is, its size and SHA-256.
	Save(ctx context.Context, r io.Reader, max int64) (StoredFile, error)
	// Open reads a file Save returned; ErrNotFound if it is gone.
	Open(path string) (io.ReadCloser, error)
	// Remove deletes a file Save returned.
	Remove(path string) error
}

// StoredFile is a file kept by a FileStore.
type StoredFile struct {
	Path   string
	Size   int64
	SHA256 string
}

// DefaultMaxFileSize is the largest upload accepted by default.
const DefaultMaxFileSize = 1 << 30

// FileRow is one data row of a distribution file as a RowReader gives it.
type FileRow struct {
	Line int64
	// BlankBefore is how many blank rows lie between this row and the
	// data row before it (or the header): they hold no user, and a task
	// counts them apart (TaskCounts.Blank).
	BlankBefore int64
	UserID      string // as written
	Inexact     bool   // the user id is a numeric cell beyond 2^53: the digits typed are lost
	// Phone and Mail are the contact columns as written; "" when blank or
	// the file has no such column.
	Phone, Mail string
	// Lang is the language column as written, or "": a contacts import
	// reads it; a distribution does not.
	Lang string
	// Others are the file's other columns as written, named by
	// OthersReader.Others, when it was opened to read them (an attributes
	// import); nil otherwise.
	Others []string
}

// RowReader streams the data rows of a distribution file in one pass.
type RowReader interface {
	// Read fills dst with the next rows: n > 0 and nil, or 0 and io.EOF
	// at the end, or 0 and an error that names what is wrong with the file.
	Read(dst []FileRow) (int, error)
	// Progress reports the bytes of the file's data consumed and in all.
	Progress() (read, total int64)
	Close() error
}

// OthersReader is a RowReader of a file opened to read every column
// besides the user id's, whatever the header names it: FileRow.Others.
type OthersReader interface {
	RowReader
	// Others names the columns of FileRow.Others, as the header row
	// writes them (trimmed), in order.
	Others() []string
}

// FailureReport writes the failed rows of a task, in line order, as a file
// at path.
type FailureReport interface {
	Write(ctx context.Context, path string, t *Task, rows iter.Seq2[Failure, error]) error
}

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
