// Package sheet streams target-user rows out of .xlsx and .csv files.
//
// It knows nothing about coupons: it finds the header row, picks the user
// id, phone, mail and language columns by name (or, with Options.Others,
// the user id and every other column, for the caller to interpret) and
// hands back their values row by row, with the row number the user sees in Excel or the CSV line
// number, so that a caller can report "row 7: invalid user id" in terms the
// user understands.
//
// The xlsx reader is a byte-level scanner over archive/zip: inflating runs in
// its own goroutine and feeds buffers through a channel, and no encoding/xml
// sits in the hot path, because a million-row upload has to be read in about
// a second without holding the file in memory.
package sheet

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
)

// Defaults used when the matching Options field is zero.
const (
	// DefaultMaxRows is the default limit on data rows (header excluded).
	DefaultMaxRows = 10_000_000
	// DefaultMaxUncompressed is the default limit on the inflated size of
	// any part of an xlsx archive.
	DefaultMaxUncompressed = 4 << 30
	// DefaultMaxSharedStrings is the default memory budget, in bytes, of the
	// shared string table: text plus 8 bytes per entry.
	DefaultMaxSharedStrings = 1 << 30
)

// Fixed limits that keep every allocation bounded.
const (
	// MaxCellBytes is the longest value, in bytes, accepted in the user id,
	// phone and mail columns and in the header row. Excel caps a cell at
	// 32,767 characters, which is at most 98,301 bytes of UTF-8.
	MaxCellBytes = 128 << 10
	// MaxRowBytes is the longest xlsx row element or CSV record, in bytes,
	// enforced to within the 256 KiB the reader inflates at a time.
	MaxRowBytes = 8 << 20
	// MaxCompressionRatio is the highest inflated/compressed ratio accepted
	// for an xlsx part larger than 4 MiB. Real worksheets stay far below it;
	// deflate itself cannot exceed about 1032.
	MaxCompressionRatio = 300
)

// Errors returned by Open and Read; test with errors.Is. Messages wrapping
// them name the problem in terms a user can act on.
var (
	// ErrNotSpreadsheet: the file is neither an xlsx workbook nor CSV text
	// (for example a legacy .xls, a password-protected workbook, an image,
	// or a zip archive without a workbook).
	ErrNotSpreadsheet = errors.New("not an xlsx or csv file")
	// ErrTruncated: a corrupt .xlsx: its zip archive is truncated or
	// damaged, or a file named .xlsx is not a zip archive at all.
	ErrTruncated = errors.New("corrupt .xlsx")
	// ErrNoWorksheet: the workbook has no worksheet.
	ErrNoWorksheet = errors.New("workbook has no worksheet")
	// ErrSheetNotFound: Options.Sheet names no worksheet of the workbook.
	ErrSheetNotFound = errors.New("worksheet not found")
	// ErrNoHeader: the sheet or CSV file has no non-blank row.
	ErrNoHeader = errors.New("no header row: the sheet is empty")
	// ErrNoUserIDColumn: the header row has no user id column.
	ErrNoUserIDColumn = errors.New("no user id column")
	// ErrZipBomb: a part inflates beyond Options.MaxUncompressed or with a
	// ratio above MaxCompressionRatio.
	ErrZipBomb = errors.New("archive inflates too much (zip bomb?)")
	// ErrTooManyRows: the file holds more than Options.MaxRows data rows.
	ErrTooManyRows = errors.New("too many rows")
	// ErrTooLong: a cell, row, CSV record or the shared string table exceeds
	// its size limit.
	ErrTooLong = errors.New("content too long")
	// ErrMalformed: the worksheet XML or the CSV text is malformed.
	ErrMalformed = errors.New("malformed file")
	// ErrInexactNumber is set in Row.Err when a numeric cell of a used column
	// holds an integer above 2^53, which Excel cannot store exactly: the
	// digits the user typed are lost, so the column has to be stored as text.
	// A plain integer of more than 17 significant digits is exempt: no
	// double prints one, so its writer kept every digit.
	ErrInexactNumber = errors.New("number too large to be exact; store the column as text")
)

// Options tunes Open. The zero value works.
type Options struct {
	// Sheet is the worksheet name to read (compared exactly); "" reads the
	// first worksheet in workbook order. Ignored for CSV.
	Sheet string
	// MaxRows limits the data rows (non-blank rows after the header);
	// 0 means DefaultMaxRows. Read returns ErrTooManyRows past it.
	MaxRows int64
	// MaxUncompressed limits the inflated bytes of each xlsx part;
	// 0 means DefaultMaxUncompressed.
	MaxUncompressed int64
	// MaxSharedStrings limits the memory of the shared string table in
	// bytes (text plus 8 bytes per entry); 0 means DefaultMaxSharedStrings.
	MaxSharedStrings int64
	// Name is the file's name as its owner knows it, when the path is
	// not (an upload kept under a name of quan's): its extension tells a
	// corrupt .xlsx from a CSV file. "" takes the path's.
	Name string
	// Others reads every column of the header row besides the user id's
	// into Row.Others, named by Reader.Others: for imports whose columns
	// are the caller's to interpret. The phone, mail and language columns
	// are then others too, and Row.Phone, Mail and Lang stay "".
	Others bool
}

func (o Options) withDefaults() Options {
	if o.MaxRows <= 0 {
		o.MaxRows = DefaultMaxRows
	}
	if o.MaxUncompressed <= 0 {
		o.MaxUncompressed = DefaultMaxUncompressed
	}
	if o.MaxSharedStrings <= 0 {
		o.MaxSharedStrings = DefaultMaxSharedStrings
	}
	return o
}

// Row is one non-blank data row.
type Row struct {
	// Line is the row number the user sees: for xlsx the 1-based sheet row
	// number (header included, gaps and the r attribute honoured); for CSV
	// the 1-based line on which the record starts (the header is line 1
	// unless blank lines precede it).
	Line int64
	// BlankBefore is how many blank rows (xlsx) or lines (CSV) lie
	// between this row and the data row before it, or the header: rows
	// a merchant sees in the file that hold no user. Blank rows after
	// the last data row are not counted.
	BlankBefore int64
	// UserID, Phone and Mail are the cell values as written (not trimmed).
	// Integers stored as numbers come out in plain digits ("1000000000",
	// never "1E9"). Phone and Mail are "" when their column is absent.
	UserID string
	Phone  string
	Mail   string
	// Lang is the language column (lang, language or 语言) as written, or
	// "": a contacts import reads it, a distribution does not.
	Lang string
	// Others are the cells of the other columns as written (numbers
	// normalised like the user id's), in the order of Reader.Others; nil
	// without Options.Others.
	Others []string
	// Err is non-nil when the row cannot be used as written; it wraps
	// ErrInexactNumber when the user id is a numeric cell holding an
	// integer above 2^53 that a double could have printed (see
	// ErrInexactNumber). Such a phone is kept as written: no phone number
	// is that long, and the row's user id is still good.
	Err error
}

// Reader streams rows out of one file. It is not safe for concurrent use,
// except Progress, which may be called from any goroutine.
type Reader struct {
	src     source
	read    *atomic.Int64
	total   int64
	closeFn func() error
	closed  bool
	err     error
	arena   []byte  // reused by Read
	fix     []fixup // reused by Read
	one     []Row   // Next's buffer
	oneN    int
	oneI    int
}

// source produces rows for a Reader.
type source interface {
	// fill appends rows to b until b is full or the input ends; it returns
	// io.EOF at the clean end and any other error as fatal.
	fill(b *batch) error
	close()
	// others names the other columns, once the header is read.
	others() []string
}

// Open opens the .xlsx or .csv file at path and reads up to its header row.
// The format is detected by content (zip magic means xlsx, anything else
// CSV), so a misnamed file still reads. It returns ErrNoHeader,
// ErrNoUserIDColumn, ErrNotSpreadsheet, ErrTruncated, ErrNoWorksheet,
// ErrSheetNotFound, ErrZipBomb, ErrMalformed or ErrTooLong (wrapped) for
// input it cannot read.
func Open(path string, opt Options) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open sheet: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open sheet: %w", err)
	}
	r, err := newReader(f, fi.Size(), path, opt)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.closeFn = f.Close
	return r, nil
}

// New is Open for content already at hand, such as an uploaded file: ra
// holds size bytes; name is used only for its extension in messages and
// format detection. Closing the Reader does not close ra.
func New(ra io.ReaderAt, size int64, name string, opt Options) (*Reader, error) {
	return newReader(ra, size, name, opt)
}

func newReader(ra io.ReaderAt, size int64, name string, opt Options) (*Reader, error) {
	opt = opt.withDefaults()
	if opt.Name != "" {
		name = opt.Name
	}
	var magic [8]byte
	n, _ := ra.ReadAt(magic[:], 0)
	r := &Reader{read: new(atomic.Int64)}
	var err error
	switch kind := sniff(magic[:n], name); kind {
	case kindXLSX:
		r.src, r.total, err = openXLSX(ra, size, opt, r.read)
	case kindCSV:
		r.src, r.total, err = openCSV(ra, size, opt, r.read)
	case kindNotZip:
		err = fmt.Errorf("%w: the file is named %s but is not a zip archive, as every .xlsx is: save it again from Excel, or as .csv", ErrTruncated, ext(name))
	default:
		err = fmt.Errorf("open sheet: %w: %s", ErrNotSpreadsheet, kind)
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

type kind string

const (
	kindXLSX   kind = "xlsx"
	kindCSV    kind = "csv"
	kindNotZip kind = "named .xlsx but not a zip archive"
)

// sniff tells the format from the first bytes, falling back to naming the
// problem as the kind when the content is recognisably not a sheet.
func sniff(magic []byte, name string) kind {
	switch {
	case len(magic) >= 4 && string(magic[:4]) == "PK\x03\x04",
		len(magic) >= 4 && string(magic[:4]) == "PK\x05\x06":
		return kindXLSX
	case len(magic) >= 8 && string(magic[:8]) == "\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1":
		return "legacy .xls or password-protected workbook; save it as .xlsx or .csv"
	}
	switch ext(name) {
	case ".xlsx", ".xlsm", ".xltx", ".xltm":
		return kindNotZip
	case ".xls":
		return "legacy .xls files are not supported; save it as .xlsx or .csv"
	}
	return kindCSV
}

func ext(name string) string {
	for i := len(name) - 1; i >= 0 && name[i] != '/' && name[i] != '\\'; i-- {
		if name[i] == '.' {
			b := []byte(name[i:])
			for j, c := range b {
				if 'A' <= c && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return ""
}

// Read fills dst with the next rows. It returns n > 0 and a nil error, or
// n == 0 and io.EOF at the end of the data, or n == 0 and another error,
// which is final. The strings of one call share a single allocation (xlsx
// shared strings point into the shared string table), so keeping one Row
// keeps that call's text alive: copy what you retain for long if memory
// matters. dst's contents are overwritten; the strings stay valid forever.
func (r *Reader) Read(dst []Row) (int, error) {
	if r.closed {
		return 0, errors.New("sheet: read after close")
	}
	if r.err != nil {
		return 0, r.err
	}
	if len(dst) == 0 {
		return 0, nil
	}
	b := batch{rows: dst[:0:len(dst)], arena: r.arena[:0], fix: r.fix[:0]}
	err := r.src.fill(&b)
	b.finish()
	r.arena, r.fix = b.arena, b.fix
	if err != nil {
		r.err = err
		if err == io.EOF {
			r.read.Store(r.total)
		}
		if len(b.rows) > 0 {
			return len(b.rows), nil
		}
		return 0, err
	}
	return len(b.rows), nil
}

// Next returns the next row, or io.EOF after the last one. It buffers rows
// through Read; mixing Next and Read loses no rows but serves buffered rows
// through Next only.
func (r *Reader) Next() (Row, error) {
	if r.oneI == r.oneN {
		if r.one == nil {
			r.one = make([]Row, 256)
		}
		n, err := r.Read(r.one)
		if err != nil {
			return Row{}, err
		}
		r.oneI, r.oneN = 0, n
	}
	row := r.one[r.oneI]
	r.oneI++
	return row, nil
}

// Others names the columns of Row.Others, as the header row writes them
// (trimmed), in order; nil without Options.Others. Two columns may have
// the same name: telling them apart is the caller's business.
func (r *Reader) Others() []string { return r.src.others() }

// Progress reports how many bytes of the file the Reader has consumed and
// the total it will consume: for xlsx the compressed worksheet and shared
// string parts, for CSV the whole file. read runs ahead of the rows
// returned so far by what the inflater has buffered (about 1 MiB of
// inflated text), and equals total once Read has returned io.EOF. Safe to
// call concurrently with Read.
func (r *Reader) Progress() (read, total int64) {
	read = r.read.Load()
	return min(read, r.total), r.total
}

// Close stops the background inflater and releases the file. It is safe to
// call twice.
func (r *Reader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	r.src.close()
	if r.closeFn != nil {
		return r.closeFn()
	}
	return nil
}
