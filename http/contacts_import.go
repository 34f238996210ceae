package http

import (
	"net/http"

	"github.com/quanhq/quan/notify"
)

// importContacts is POST /contacts/import (admin): the contacts file, as
// serveImport takes it. 200 with the quan.ContactImport.
func (s *Server) importContacts(w http.ResponseWriter, r *http.Request) error {
	return s.serveImport(w, r, "contacts", notify.CanImportContacts, s.Notices.ImportContacts)
}
