package notify

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/userfile"
)

// Limits of a contacts import.
const (
	// ContactImportBatch is how many rows of a contacts import go to the
	// store in one transaction.
	ContactImportBatch = 1000
	// DefaultMaxContactRows is the most data rows a contacts file may
	// hold when Service.MaxImportRows is 0.
	DefaultMaxContactRows = 1_000_000
)

// Reasons a row of a contacts import fails, besides ImportInvalidID and
// ImportDuplicateInFile.
const (
	ImportInvalidContact = "invalid_contact" // the phone, mail or language is not one (Field says which)
	ImportNoContact      = "no_contact"      // the row has no phone, mail or language: nothing to import
)

var contactImportReasons = []string{quan.ImportInvalidID, ImportInvalidContact, quan.ImportDuplicateInFile, ImportNoContact}

// ContactImport is the outcome of a contacts import.
type ContactImport = quan.ImportReport

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
func (s *Service) ImportContacts(ctx context.Context, who quan.Identity, r io.Reader) (*ContactImport, error) {
	if err := CanImportContacts(who); err != nil {
		return nil, err
	}
	var open func(string) (quan.RowReader, func(quan.FileRow) (quan.ContactRow, int64, *quan.ImportFailure), error)
	if s.OpenRows != nil {
		open = func(path string) (quan.RowReader, func(quan.FileRow) (quan.ContactRow, int64, *quan.ImportFailure), error) {
			rows, err := s.OpenRows(path)
			return rows, func(fr quan.FileRow) (quan.ContactRow, int64, *quan.ImportFailure) {
				c, fail := parseContactRow(fr)
				return c, c.UserID, fail
			}, err
		}
	}
	now := s.Now.UTC()
	maxRows := s.MaxImportRows
	if maxRows <= 0 {
		maxRows = DefaultMaxContactRows
	}
	return userfile.Import[quan.ContactRow]{
		What: "contacts", Files: s.Files, MaxSize: s.MaxFileSize, MaxRows: maxRows,
		Batch: ContactImportBatch, Reasons: contactImportReasons, Open: open,
		Store: func(ctx context.Context, rows []quan.ContactRow) (int, error) {
			return s.Contacts.ImportContacts(ctx, now, rows)
		},
	}.Run(ctx, r)
}

// CanImportContacts returns nil if who may import contacts (an admin),
// else ErrUnauthorized or EFORBIDDEN: the API asks before it reads the
// upload.
func CanImportContacts(who quan.Identity) error { return quan.RequireAdmin(who, "import contacts") }

// parseContactRow checks one row of a contacts file. A row whose user id
// is good is returned with its user even when its contact is not, so that
// it claims the user against later rows.
func parseContactRow(fr quan.FileRow) (quan.ContactRow, *quan.ImportFailure) {
	id, fail := userfile.UserID(fr)
	if fail != nil {
		return quan.ContactRow{}, fail
	}
	c := quan.ContactRow{UserID: id}
	bad := func(field string, err error) (quan.ContactRow, *quan.ImportFailure) {
		msg := err.Error()
		var ce *quan.ContactError
		if errors.As(err, &ce) {
			msg = ce.Reason
		}
		return c, &quan.ImportFailure{Reason: ImportInvalidContact, Field: field, Message: msg}
	}
	var err error
	if p := strings.TrimSpace(fr.Phone); p != "" {
		if c.Phone, err = quan.NormalizePhone(p); err != nil {
			return bad("phone", err)
		}
	}
	if m := strings.TrimSpace(fr.Mail); m != "" {
		if c.Mail, err = quan.NormalizeMail(m); err != nil {
			return bad("mail", err)
		}
	}
	switch l := quan.Lang(strings.ToLower(strings.TrimSpace(fr.Lang))); l {
	case "":
	case quan.LangZH, quan.LangEN:
		c.Lang = l
	default:
		return bad("lang", errors.New("zh or en"))
	}
	if c.Phone == "" && c.Mail == "" && c.Lang == "" {
		return c, &quan.ImportFailure{Reason: ImportNoContact, Message: "no phone, mail or language to import"}
	}
	return c, nil
}
