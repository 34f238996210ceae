package http

import (
	"net/http"

	"github.com/quanhq/quan"
)

// contactBody is the body of PUT /me/contact and PUT /users/{id}/contact:
// the whole contact, opt-outs included (a field left out is cleared).
type contactBody struct {
	Phone  string            `json:"phone"`
	Mail   string            `json:"mail"`
	Lang   quan.Lang         `json:"lang"`
	OptOut []quan.NotifyType `json:"optOut"`
}

// contactUser is the {id} of /users/{id}/contact, or 0 for /me/contact.
func contactUser(r *http.Request) (quan.Identity, int64, error) {
	if r.PathValue("id") == "" {
		who, err := identity(r)
		return who, 0, err
	}
	return target(r, "user")
}

func (s *Server) getContact(w http.ResponseWriter, r *http.Request) error {
	who, user, err := contactUser(r)
	if err != nil {
		return err
	}
	c, err := s.Notices.Contact(r.Context(), who, user)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, c)
	return nil
}

func (s *Server) putContact(w http.ResponseWriter, r *http.Request) error {
	who, user, err := contactUser(r)
	if err != nil {
		return err
	}
	var body contactBody
	if err := decodeJSON(w, r, &body); err != nil {
		return err
	}
	c, err := s.Notices.SetContact(r.Context(), who, user, quan.Contact{Phone: body.Phone, Mail: body.Mail, Lang: body.Lang, OptOut: body.OptOut})
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, c)
	return nil
}

// noticePage is one page of an inbox.
type noticePage struct {
	Items  []*quan.Notice `json:"items"`
	Total  int            `json:"total"`
	Offset int            `json:"offset"`
	Limit  int            `json:"limit"`
}

// inbox is GET /me/inbox?unread=true&offset=&limit=.
func (s *Server) inbox(w http.ResponseWriter, r *http.Request) error {
	who, err := identity(r)
	if err != nil {
		return err
	}
	q := newQuery(r)
	var f quan.InboxFilter
	f.Offset, f.Limit = q.page()
	f.Unread = q.bool("unread")
	if err := q.err("invalid inbox query"); err != nil {
		return err
	}
	ms, total, err := s.Notices.Inbox(r.Context(), who, f)
	if err != nil {
		return err
	}
	limit := f.Limit
	if limit == 0 {
		limit = quan.DefaultPageSize
	}
	s.writeJSON(w, http.StatusOK, noticePage{Items: ms, Total: total, Offset: f.Offset, Limit: limit})
	return nil
}

func (s *Server) unreadCount(w http.ResponseWriter, r *http.Request) error {
	who, err := identity(r)
	if err != nil {
		return err
	}
	n, err := s.Notices.UnreadCount(r.Context(), who)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, map[string]int{"unread": n})
	return nil
}

// markRead is POST /me/inbox/read {"ids": [..]} or {"all": true}.
func (s *Server) markRead(w http.ResponseWriter, r *http.Request) error {
	who, err := identity(r)
	if err != nil {
		return err
	}
	var body struct {
		IDs []int64 `json:"ids"`
		All bool    `json:"all"`
	}
	if err := decodeJSON(w, r, &body); err != nil {
		return err
	}
	n, err := s.Notices.MarkRead(r.Context(), who, body.IDs, body.All)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, map[string]int{"marked": n})
	return nil
}

func (s *Server) popups(w http.ResponseWriter, r *http.Request) error {
	who, err := identity(r)
	if err != nil {
		return err
	}
	ms, err := s.Notices.Popups(r.Context(), who)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"items": ms})
	return nil
}

func (s *Server) ackPopup(w http.ResponseWriter, r *http.Request) error {
	who, id, err := target(r, "popup")
	if err != nil {
		return err
	}
	if err := s.Notices.AckPopup(r.Context(), who, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
