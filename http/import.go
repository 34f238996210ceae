package http

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/quanhq/quan"
)

// serveImport answers an import of users' data from a file (contacts,
// attributes): a multipart form with one part, the .xlsx or .csv file
// named "file" (the form is not read past it), handed to run once can
// has allowed the caller. 200 with the quan.ImportReport: the rows
// imported, and the rows that failed by reason and, the first
// quan.MaxImportFailures of them, by line.
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
		return fileField(fmt.Sprintf("the form is cut short or malformed: %v", err))
	}
	defer part.Close()
	if name := part.FormName(); name != "file" {
		return &quan.Error{Code: quan.EINVALID, Message: "the import has invalid fields",
			Fields: []quan.FieldError{{Field: name, Message: "is not a known field: send the file only"}}}
	}
	res, err := run(r.Context(), who, part)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, res)
	return nil
}

func fileField(msg string) error {
	return &quan.Error{Code: quan.EINVALID, Message: "the import has invalid fields", Fields: []quan.FieldError{{Field: "file", Message: msg}}}
}
