package http

import (
	"net/http"

	"github.com/quanhq/quan"
)

// remindMe is POST /templates/{id}/reminders: the user asks to be
// reminded when the template opens for claims. 201 for a new request,
// 200 for one made before (the first, unchanged).
func (s *Server) remindMe(w http.ResponseWriter, r *http.Request) error {
	who, id, err := target(r, "template")
	if err != nil {
		return err
	}
	v, created, err := s.Reminders.Subscribe(r.Context(), who, id)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	s.writeJSON(w, status, v)
	return nil
}

// cancelReminder is DELETE /templates/{id}/reminders: 204, whether or not
// the user had asked.
func (s *Server) cancelReminder(w http.ResponseWriter, r *http.Request) error {
	who, id, err := target(r, "template")
	if err != nil {
		return err
	}
	if err := s.Reminders.Unsubscribe(r.Context(), who, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// reminders is GET /me/reminders: the user's requests, the latest
// issueStart first.
func (s *Server) reminders(w http.ResponseWriter, r *http.Request) error {
	who, err := identity(r)
	if err != nil {
		return err
	}
	vs, err := s.Reminders.Subscriptions(r.Context(), who)
	if err != nil {
		return err
	}
	if vs == nil {
		vs = []*quan.SubscriptionView{}
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"items": vs})
	return nil
}
