package http

import (
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/quanhq/quan"
)

// importContacts is POST /contacts/import (admin): a multipart form with
// one part, the .xlsx or .csv file named "file" (the form is not read
// past it). 200 with the
// quan.ContactImport: the rows imported, and the rows that failed by
// reason and, the first quan.MaxImportFailures of them, by line.
func (s *Server) importContacts(w http.ResponseWriter, r *http.Request) error {
	who, err := identity(r)
	if err != nil {
		return err
	}
	if err := quan.CanImportContacts(who); err != nil {
		return err
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "multipart/form-data" {
		return quan.Errorf(quan.EINVALID, "send the contacts as multipart/form-data with a file part named \"file\"")
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return quan.Errorf(quan.EINVALID, "read the form: %v", err)
	}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return fileField("missing: send the .xlsx or .csv file in a part named \"file\"")
		}
		if err != nil {
			return fileField(fmt.Sprintf("the form is cut short or malformed: %v", err))
		}
		if name := part.FormName(); name != "file" {
			part.Close()
			return &quan.Error{Code: quan.EINVALID, Message: "the import has invalid fields",
				Fields: []quan.FieldError{{Field: name, Message: "is not a known field: send the file only"}}}
		}
		res, err := s.Notices.ImportContacts(r.Context(), who, part)
		part.Close()
		if err != nil {
			return err
		}
		s.writeJSON(w, http.StatusOK, res)
		return nil
	}
}

func fileField(msg string) error {
	return &quan.Error{Code: quan.EINVALID, Message: "the import has invalid fields", Fields: []quan.FieldError{{Field: "file", Message: msg}}}
}
