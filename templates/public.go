package templates

import (
	"context"
	"fmt"

	"github.com/quanhq/quan"
)

// Public returns the public view of template id (quan.PublicTemplate)
// to anyone, a shopper above all: the display, the issue window, the
// limits per user and whether stock is left. A template that is not
// active (a draft, paused, ended) is ErrNotFound, as one that does not
// exist: shoppers learn nothing of it.
func (s *Service) Public(ctx context.Context, id int64) (*quan.PublicTemplate, error) {
	t, err := s.Store.Template(ctx, quan.AnyShop, id)
	if err != nil {
		return nil, err
	}
	if t.Status != quan.TemplateActive {
		return nil, fmt.Errorf("template %d: %w", id, quan.ErrNotFound)
	}
	return quan.PublicOf(t), nil
}

// Search returns one page of the active templates matching f, in their
// public view, newest first, and how many match from f.Before on. It is
// the shoppers' search (by name, category, goods and shop); f.Status
// must be "" or active: the others are the merchants' business
// (EINVALID names the field).
func (s *Service) Search(ctx context.Context, f quan.TemplateFilter) ([]*quan.PublicTemplate, int, error) {
	if f.Status != "" && f.Status != quan.TemplateActive {
		return nil, 0, &quan.Error{Code: quan.EINVALID, Message: "invalid list parameters",
			Fields: []quan.FieldError{{Field: "status", Message: "a shopper sees active templates only: leave it out or use active"}}}
	}
	f.Status = quan.TemplateActive
	if err := f.Validate(); err != nil {
		return nil, 0, err
	}
	ts, total, err := s.Store.Templates(ctx, f)
	if err != nil {
		return nil, 0, err
	}
	out := make([]*quan.PublicTemplate, len(ts))
	for i, t := range ts {
		out[i] = quan.PublicOf(t)
	}
	return out, total, nil
}
