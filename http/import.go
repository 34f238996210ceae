package http

import (
	"context"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"

	"github.com/quanhq/quan"
)

// serveImport answers an import of users' data from a file (contacts,
// attributes): a multipart form with one part, the .xlsx or .csv file
// named "file", handed to run once can has allowed the caller. The form
// must end with the file: run reads the whole file before it stores
// anything (userfile.Run), and a form cut short, or with a part after
// the file, fails that reading, so nothing is imported. 200 with the
// quan.ImportReport: the rows imported, and the rows that failed by
// reason and, the first quan.MaxImportFailures of them, by line.
func (s *Server) serveImport(w http.ResponseWriter, r *http.Request, what string, can func(quan.Identity) error,
	run func(context.Context, quan.Identity, io.Reader) (*quan.ImportReport, error)) error {
	who, err := identity(r)
	if err != nil {
		return err
	}
	if err := can(who); err != nil {
		return err
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "multipart/form-data" {
		return quan.Errorf(quan.EINVALID, "send the %s as multipart/form-data with a file part named \"file\"", what)
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return quan.Errorf(quan.EINVALID, "read the form: %v", err)
	}
	part, err := mr.NextPart()
	if err == io.EOF {
		return fileField("missing: send the .xlsx or .csv file in a part named \"file\"")
	}
	if err != nil {
		if qe := bodyError(err); qe != nil {
			return qe
		}
		return importInvalid(formProblem("file", err))
	}
	defer part.Close()
	if name := part.FormName(); name != "file" {
		return importInvalid(quan.FieldError{Field: name, Message: "is not a known field: send the file only"})
	}
	in := &importFile{formPart: formPart{r: part}, mr: mr}
	res, err := run(r.Context(), who, in)
	switch {
	case err == nil:
	case in.extra != "":
		return importInvalid(quan.FieldError{Field: in.extra, Message: "is not a known field: send the file only"})
	default:
		if fe, cut := in.cutShort(r.Context(), "file", err); cut {
			return importInvalid(fe)
		}
		return err
	}
	s.writeJSON(w, http.StatusOK, res)
	return nil
}

// importFile reads the file part of an import form and, at its end, the
// rest of the form, which must close there: a form whose closing
// boundary never came must not import its file as if it were whole.
type importFile struct {
	formPart
	mr    *multipart.Reader
	ended bool   // the file's end was read, and the form's checked
	extra string // the name of a part after the file
}

// errExtraPart ends the reading of a file followed by another part.
var errExtraPart = errors.New("a part follows the file")

func (f *importFile) Read(b []byte) (int, error) {
	if f.ended {
		return 0, io.EOF
	}
	n, err := f.formPart.Read(b)
	if err != io.EOF {
		return n, err
	}
	next, err := f.mr.NextPart()
	switch {
	case err == io.EOF:
		f.ended = true
		return n, io.EOF
	case err != nil:
		f.formPart.err = err
		return n, err
	}
	f.extra = next.FormName()
	next.Close()
	return n, errExtraPart
}

func fileField(msg string) error {
	return importInvalid(quan.FieldError{Field: "file", Message: msg})
}

func importInvalid(fe quan.FieldError) error {
	return &quan.Error{Code: quan.EINVALID, Message: "the import has invalid fields", Fields: []quan.FieldError{fe}}
}
