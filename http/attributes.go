package http

import (
	"fmt"
	"net/http"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/facts"
)

// getAttributes is GET /users/{id}/attributes (admin, or the user): the
// user's facts on file, zero facts if none.
func (s *Server) getAttributes(w http.ResponseWriter, r *http.Request) error {
	who, user, err := target(r, "user")
	if err != nil {
		return err
	}
	f, err := s.Facts.Get(r.Context(), who, user)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, f)
	return nil
}

// putAttributes is PUT /users/{id}/attributes (admin): a quan.UserFacts
// that replaces the user's; userId may be left out, and if given is the
// path's. 200 with the facts as stored.
func (s *Server) putAttributes(w http.ResponseWriter, r *http.Request) error {
	who, user, err := target(r, "user")
	if err != nil {
		return err
	}
	if err := facts.CanChange(who); err != nil {
		return err
	}
	var f quan.UserFacts
	if err := decodeJSON(w, r, &f); err != nil {
		return err
	}
	if f.UserID != 0 && f.UserID != user {
		return &quan.Error{Code: quan.EINVALID, Message: "invalid user facts",
			Fields: []quan.FieldError{{Field: "userId", Message: fmt.Sprintf("is %d, the user of the path: leave it out or make it %d", f.UserID, user)}}}
	}
	f.UserID = user
	out, err := s.Facts.Put(r.Context(), who, f)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, out)
	return nil
}

// importAttributes is POST /attributes/import (admin): the attributes
// file, as serveImport takes it (see facts.Service.Import for its
// columns). 200 with the quan.ImportReport.
func (s *Server) importAttributes(w http.ResponseWriter, r *http.Request) error {
	return s.serveImport(w, r, "attributes", facts.CanImport, s.Facts.Import)
}
