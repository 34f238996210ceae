package http

import (
	"context"
	"fmt"
	"net/http"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/templates"
)

func (s *Server) createTemplate(w http.ResponseWriter, r *http.Request) error {
	who, err := identity(r)
	if err != nil {
		return err
	}
	var in templates.NewTemplate
	if err := decodeJSON(w, r, &in); err != nil {
		return err
	}
	t, err := s.Templates.Create(r.Context(), who, in)
	if err != nil {
		return err
	}
	w.Header().Set("Location", fmt.Sprintf("/api/v1/templates/%d", t.ID))
	s.writeJSON(w, http.StatusCreated, t)
	return nil
}

// getTemplate is GET /templates/{id}: the whole template for a merchant
// of its shop or an admin, the public view of an active one for a
// shopper.
func (s *Server) getTemplate(w http.ResponseWriter, r *http.Request) error {
	who, id, err := target(r, "template")
	if err != nil {
		return err
	}
	if who.Role == quan.RoleUser {
		t, err := s.Templates.Public(r.Context(), id)
		if err != nil {
			return err
		}
		s.writeJSON(w, http.StatusOK, t)
		return nil
	}
	t, err := s.Templates.Get(r.Context(), who, id)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, t)
	return nil
}

// templatePage is one page of a template listing. NextCursor, the last
// item's id when more match, is the cursor of the next page.
type templatePage[T any] struct {
	Items      []T   `json:"items"`
	Total      int   `json:"total"`
	Offset     int   `json:"offset"`
	Limit      int   `json:"limit"`
	NextCursor int64 `json:"nextCursor,omitempty"`
}

// nextCursor returns the cursor after a page whose last item has id
// last, 0 when the page holds every match left (total from its cursor).
func nextCursor(n, offset, total int, last int64) int64 {
	if n == 0 || offset+n >= total {
		return 0
	}
	return last
}

func (s *Server) listTemplates(w http.ResponseWriter, r *http.Request) error {
	who, err := identity(r)
	if err != nil {
		return err
	}
	q := newQuery(r)
	f := quan.TemplateFilter{
		Status:       quan.TemplateStatus(q.str("status")),
		Kind:         quan.Kind(q.str("kind")),
		NameContains: q.str("name"),
		Category:     q.str("category"),
		Goods:        q.str("goods"),
		Before:       q.positive("cursor", "a cursor (a page's nextCursor)"),
	}
	f.Offset, f.Limit = q.page()
	if n := q.positive("shopNo", "a shop number"); who.Role == quan.RoleAdmin || who.Role == quan.RoleUser {
		f.ShopNo = n
	}
	if err := q.errWith("invalid list parameters", f.Validate); err != nil {
		return err
	}
	limit := f.Limit
	if limit == 0 {
		limit = quan.DefaultPageSize
	}
	if who.Role == quan.RoleUser {
		items, total, err := s.Templates.Search(r.Context(), f)
		if err != nil {
			return err
		}
		var last int64
		if len(items) > 0 {
			last = items[len(items)-1].ID
		}
		s.writeJSON(w, http.StatusOK, templatePage[*quan.PublicTemplate]{Items: items, Total: total, Offset: f.Offset, Limit: limit,
			NextCursor: nextCursor(len(items), f.Offset, total, last)})
		return nil
	}
	items, total, err := s.Templates.List(r.Context(), who, f)
	if err != nil {
		return err
	}
	if items == nil {
		items = []*quan.Template{}
	}
	var last int64
	if len(items) > 0 {
		last = items[len(items)-1].ID
	}
	s.writeJSON(w, http.StatusOK, templatePage[*quan.Template]{Items: items, Total: total, Offset: f.Offset, Limit: limit,
		NextCursor: nextCursor(len(items), f.Offset, total, last)})
	return nil
}

func (s *Server) editTemplate(w http.ResponseWriter, r *http.Request) error {
	who, id, err := target(r, "template")
	if err != nil {
		return err
	}
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	// The patch is applied inside the store's transaction: the fields sent
	// replace the current ones, the others stay.
	t, err := s.Templates.Edit(r.Context(), who, id, func(e *templates.Edit) error {
		return unmarshalStrict(body, e)
	})
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, t)
	return nil
}

// changeTemplate serves a status change without a body.
func (s *Server) changeTemplate(change func(*templates.Service, context.Context, quan.Identity, int64) (*quan.Template, error)) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		who, id, err := target(r, "template")
		if err != nil {
			return err
		}
		t, err := change(s.Templates, r.Context(), who, id)
		if err != nil {
			return err
		}
		s.writeJSON(w, http.StatusOK, t)
		return nil
	}
}

func (s *Server) increaseStock(w http.ResponseWriter, r *http.Request) error {
	who, id, err := target(r, "template")
	if err != nil {
		return err
	}
	var in struct {
		Amount int64 `json:"amount"`
	}
	if err := decodeJSON(w, r, &in); err != nil {
		return err
	}
	t, err := s.Templates.IncreaseStock(r.Context(), who, id, in.Amount)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, t)
	return nil
}

func (s *Server) templateHistory(w http.ResponseWriter, r *http.Request) error {
	who, id, err := target(r, "template")
	if err != nil {
		return err
	}
	entries, err := s.Templates.History(r.Context(), who, id)
	if err != nil {
		return err
	}
	if entries == nil {
		entries = []*quan.AuditEntry{}
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"items": entries})
	return nil
}
