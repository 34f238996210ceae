package http

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

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

func (s *Server) getTemplate(w http.ResponseWriter, r *http.Request) error {
	who, id, err := target(r, "template")
	if err != nil {
		return err
	}
	t, err := s.Templates.Get(r.Context(), who, id)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, t)
	return nil
}

// templatePage is one page of a template listing.
type templatePage struct {
	Items  []*quan.Template `json:"items"`
	Total  int              `json:"total"`
	Offset int              `json:"offset"`
	Limit  int              `json:"limit"`
}

func (s *Server) listTemplates(w http.ResponseWriter, r *http.Request) error {
	who, err := identity(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := quan.TemplateFilter{
		Status:       quan.TemplateStatus(q.Get("status")),
		Kind:         quan.Kind(q.Get("kind")),
		NameContains: q.Get("name"),
	}
	bad := pageParams(q, &f.Offset, &f.Limit)
	if v := q.Get("shopNo"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			bad = append(bad, quan.FieldError{Field: "shopNo", Message: fmt.Sprintf("%q is not a shop number", v)})
		} else if who.Role == quan.RoleAdmin {
			f.ShopNo = n
		}
	}
	if len(bad) > 0 {
		return &quan.Error{Code: quan.EINVALID, Message: "invalid list parameters", Fields: bad}
	}
	items, total, err := s.Templates.List(r.Context(), who, f)
	if err != nil {
		return err
	}
	if items == nil {
		items = []*quan.Template{}
	}
	limit := f.Limit
	if limit == 0 {
		limit = quan.DefaultPageSize
	}
	s.writeJSON(w, http.StatusOK, templatePage{Items: items, Total: total, Offset: f.Offset, Limit: limit})
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

// pageParams reads the offset and limit of a listing, and returns a field
// error for each that is not a whole number. The use case checks their
// ranges.
func pageParams(q url.Values, offset, limit *int) []quan.FieldError {
	var bad []quan.FieldError
	for _, p := range []struct {
		name string
		dst  *int
	}{{"offset", offset}, {"limit", limit}} {
		if v := q.Get(p.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				bad = append(bad, quan.FieldError{Field: p.name, Message: fmt.Sprintf("%q is not a whole number", v)})
				continue
			}
			*p.dst = n
		}
	}
	return bad
}
