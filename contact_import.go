package quan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Limits of a contacts import.
const (
	// ContactImportBatch is how many rows of a contacts import go to the
	// store in one transaction.
	ContactImportBatch = 1000
	// DefaultMaxContactRows is the most data rows a contacts file may
	// hold when NoticeService.MaxImportRows is 0.
	DefaultMaxContactRows = 1_000_000
	// MaxImportFailures is how many failed rows an import's answer lists;
	// FailedByReason counts them all.
	MaxImportFailures = 1000
)

// Reasons a row of a contacts import fails.
const (
	ImportInvalidID       = "invalid_id"        // the user id is not a positive whole number that fits 64 bits, or lost digits in Excel
	ImportInvalidContact  = "invalid_contact"   // the phone, mail or language is not one (Field says which)
	ImportDuplicateInFile = "duplicate_in_file" // an earlier row of the file has the same user
	ImportNoContact       = "no_contact"        // the row has no phone, mail or language: nothing to import
)

var importReasons = []string{ImportInvalidID, ImportInvalidContact, ImportDuplicateInFile, ImportNoContact}

// ImportFailure is a row of a contacts file that was not imported.
type ImportFailure struct {
	Line    int64  `json:"line"`            // the row number in Excel, or the CSV line
	UserID  string `json:"userId"`          // as written (cut to MaxRawBytes)
	Reason  string `json:"reason"`          // one of the Import… reasons
	Field   string `json:"field,omitempty"` // invalid_contact: phone, mail or lang
	Message string `json:"message"`
}

// ContactImport is the outcome of a contacts import.
type ContactImport struct {
	Rows     int64 `json:"rows"`     // data rows read
	Imported int64 `json:"imported"` // rows stored
	Failed   int64 `json:"failed"`   // rows not stored: Rows − Imported
	// FailedByReason counts the failed rows by reason, every reason
	// present.
	FailedByReason map[string]int64 `json:"failedByReason"`
	// Failures are the first MaxImportFailures failed rows in file order;
	// FailuresTruncated says there are more.
	Failures          []ImportFailure `json:"failures"`
	FailuresTruncated bool            `json:"failuresTruncated"`
}

// ImportContacts imports the users' contacts in the .xlsx or .csv file
// read from r: a user id column and any of phone, mail and language,
// named as a distribution file names them (lang, language or 语言 for
// the language, zh or en). Only an admin may (EFORBIDDEN otherwise).
//
// A row's non-blank phone, mail and language replace the user's; a blank
// one leaves what is on file, and opt-outs are never changed: clearing an
// address is PUT /users/{id}/contact's business. A row fails, and the
// others go on, if its user id is not one (invalid_id), its phone, mail
// or language is not one (invalid_contact), an earlier row has the same
// user, whatever became of that row (duplicate_in_file), or it has
// nothing to import (no_contact).
//
// The file is read to its end before anything is stored: a file that
// cannot be read (EINVALID naming the field "file"), or holds more than
// MaxImportRows rows, imports nothing. The valid rows are then stored
// ContactImportBatch at a time, a transaction each; if the store fails
// midway, the batches before stay imported, and importing the file again
// is safe: the same file gives the same contacts.
func (s *NoticeService) ImportContacts(ctx context.Context, who Identity, r io.Reader) (*ContactImport, error) {
	if err := CanImportContacts(who); err != nil {
		return nil, err
	}
	if s.Files == nil || s.OpenRows == nil {
		return nil, Errorf(EINTERNAL, "contacts import is not configured")
	}
	max := s.MaxFileSize
	if max <= 0 {
		max = DefaultMaxFileSize
	}
	f, err := s.Files.Save(ctx, r, max)
	if err != nil {
		return nil, err
	}
	defer s.Files.Remove(f.Path)
	if f.Size == 0 {
		return nil, importFileErr("the file is empty: upload an .xlsx or .csv with a header row and one user per row")
	}
	res := &ContactImport{FailedByReason: map[string]int64{}, Failures: []ImportFailure{}}
	for _, r := range importReasons {
		res.FailedByReason[r] = 0
	}
	// First pass: check every row; store nothing.
	if err := s.eachContact(ctx, f.Path, func(_ ContactRow, fail *ImportFailure) error {
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
	now := s.now()
	batch := make([]ContactRow, 0, ContactImportBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		n, err := s.Contacts.ImportContacts(ctx, now, batch)
		res.Imported += int64(n)
		batch = batch[:0]
		if err != nil {
			return fmt.Errorf("import contacts: %d rows stored before: %w", res.Imported, err)
		}
		return nil
	}
	if err := s.eachContact(ctx, f.Path, func(c ContactRow, fail *ImportFailure) error {
		if fail != nil {
			return nil
		}
		if batch = append(batch, c); len(batch) == ContactImportBatch {
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

// CanImportContacts returns nil if who may import contacts (an admin),
// else ErrUnauthorized or EFORBIDDEN: the API asks before it reads the
// upload.
func CanImportContacts(who Identity) error {
	switch {
	case who.Role == "":
		return ErrUnauthorized
	case who.Role != RoleAdmin:
		return Errorf(EFORBIDDEN, "only an admin may import contacts")
	}
	return nil
}

// eachContact reads the contacts file at path and calls fn with each row,
// valid (fail nil) or not; an error of fn ends the reading.
func (s *NoticeService) eachContact(ctx context.Context, path string, fn func(ContactRow, *ImportFailure) error) error {
	limit := s.MaxImportRows
	if limit <= 0 {
		limit = DefaultMaxContactRows
	}
	rows, err := s.OpenRows(path)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return importFileErr(err.Error())
	}
	defer rows.Close()
	seen := newUserSet(1 << 12)
	buf := make([]FileRow, 1024)
	var n int64
	for {
		k, err := rows.Read(buf)
		for _, fr := range buf[:k] {
			if n++; n > limit {
				return importFileErr(fmt.Sprintf("more than %d rows: split the file", limit))
			}
			c, fail := parseContactRow(fr)
			if c.UserID != 0 && !seen.add(c.UserID) {
				fail = &ImportFailure{Reason: ImportDuplicateInFile, Message: "an earlier row has the same user: only the first one counts"}
			}
			if fail != nil {
				fail.Line, fail.UserID = fr.Line, clipRaw(fr.UserID)
			}
			if err := fn(c, fail); err != nil {
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
			return importFileErr(err.Error())
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// parseContactRow checks one row of a contacts file. A row whose user id
// is good is returned with its user even when its contact is not, so that
// it claims the user against later rows.
func parseContactRow(fr FileRow) (ContactRow, *ImportFailure) {
	id, ok := ParseUserID(fr.UserID)
	switch {
	case fr.Inexact:
		return ContactRow{}, &ImportFailure{Reason: ImportInvalidID, Message: "the number lost digits in Excel: store the column as text"}
	case !ok:
		return ContactRow{}, &ImportFailure{Reason: ImportInvalidID, Message: "not a positive whole number of at most 19 digits"}
	}
	c := ContactRow{UserID: id}
	bad := func(field string, err error) (ContactRow, *ImportFailure) {
		msg := err.Error()
		var ce *ContactError
		if errors.As(err, &ce) {
			msg = ce.Reason
		}
		return c, &ImportFailure{Reason: ImportInvalidContact, Field: field, Message: msg}
	}
	var err error
	if p := strings.TrimSpace(fr.Phone); p != "" {
		if c.Phone, err = NormalizePhone(p); err != nil {
			return bad("phone", err)
		}
	}
	if m := strings.TrimSpace(fr.Mail); m != "" {
		if c.Mail, err = NormalizeMail(m); err != nil {
			return bad("mail", err)
		}
	}
	switch l := Lang(strings.ToLower(strings.TrimSpace(fr.Lang))); l {
	case "":
	case LangZH, LangEN:
		c.Lang = l
	default:
		return bad("lang", errors.New("zh or en"))
	}
	if c.Phone == "" && c.Mail == "" && c.Lang == "" {
		return c, &ImportFailure{Reason: ImportNoContact, Message: "no phone, mail or language to import"}
	}
	return c, nil
}

// importFileErr is EINVALID naming the field "file".
func importFileErr(msg string) error {
	return &Error{Code: EINVALID, Message: "the contacts file cannot be imported", Fields: []FieldError{{Field: "file", Message: msg}}}
}
