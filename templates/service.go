package templates

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/quanhq/quan"
)

// Service is the merchant's use of templates: it checks who may do
// what, scopes every call to the caller's shop, and records the audit.
type Service struct {
	Store quan.TemplateStore
	// Cache, if set, learns every change of a template it holds: its
	// rules and the stock added. A cache that cannot be told is logged and
	// left to the distributor, which checks the rules before each chunk
	// and the stock after each task.
	Cache  quan.Cache
	Logger *slog.Logger
	Now    quan.Clock // nil means time.Now

	// Rules type-checks the templates' rules when they are saved; nil
	// refuses any rule. Versions keeps the versions of the rules after
	// the first (ChangeRules); Book, if set, forgets what it knew of a
	// template whose rules changed.
	Rules    quan.RuleEngine
	Versions quan.RulesStore
	Book     *RuleBook

	// Created, if set, is told of every template Create stores, as soon
	// as the store has it: the claims (claims.Service), which would
	// otherwise take its id, above the highest they know, for one that
	// may not exist and look it up.
	Created CreatedListener

	inflight atomic.Int64 // changes between the store and the cache
}

// InFlight returns how many template changes are between the store's
// commit and the cache's update (see Reconciler).
func (s *Service) InFlight() int64 { return s.inflight.Load() }

// CreatedListener learns the id of each template created.
type CreatedListener interface {
	// TemplateCreated is called with the id of a template just stored.
	TemplateCreated(id int64)
}

// NewTemplate is what a merchant sends to create a template. ShopNo is
// taken from a merchant's identity; an admin must give it.
type NewTemplate struct {
	quan.TemplateSpec
	ShopNo int64 `json:"shopNo,omitempty"`
	Stock  int64 `json:"stock"`
}

// Edit is the editable part of a draft template.
type Edit struct {
	quan.TemplateSpec
	Stock int64 `json:"stock"`
}

// Create validates and stores a new draft template for the caller's shop.
// A platform-funded template needs an admin.
func (s *Service) Create(ctx context.Context, who quan.Identity, in NewTemplate) (*quan.Template, error) {
	shop, err := who.ShopScope()
	if err != nil {
		return nil, err
	}
	if shop == quan.AnyShop {
		shop = in.ShopNo
	} else if in.ShopNo != 0 && in.ShopNo != shop {
		return nil, &quan.Error{Code: quan.EINVALID, Message: "the template has invalid fields",
			Fields: []quan.FieldError{{Field: "shopNo", Message: "a merchant can only create templates for its own shop"}}}
	}
	if in.Source == quan.SourcePlatform && who.Role != quan.RoleAdmin {
		return nil, quan.Errorf(quan.EFORBIDDEN, "only the platform (an admin) can create platform-funded templates")
	}
	now := s.Now.UTC()
	t := &quan.Template{
		ShopNo:       shop,
		TemplateSpec: in.TemplateSpec,
		Stock:        in.Stock,
		TotalStock:   in.Stock,
		Status:       quan.TemplateDraft,
		CreatedBy:    who.String(),
		CreatedAt:    now,
		UpdatedAt:    now,
	}
	normalizeSpec(&t.TemplateSpec)
	if err := withRuleErrors(t.Validate(), checkRules(s.Rules, t.Eligibility, t.Applies)); err != nil {
		return nil, err
	}
	if err := s.Store.CreateTemplate(ctx, t, who.String()); err != nil {
		return nil, fmt.Errorf("create template: %w", err)
	}
	if s.Created != nil {
		s.Created.TemplateCreated(t.ID)
	}
	return t, nil
}

// Get returns template id if the caller's shop owns it, else ErrNotFound.
func (s *Service) Get(ctx context.Context, who quan.Identity, id int64) (*quan.Template, error) {
	shop, err := who.ShopScope()
	if err != nil {
		return nil, err
	}
	return s.Store.Template(ctx, shop, id)
}

// List returns a page of the caller's templates matching f and the total.
// f.ShopNo is overridden for merchants; admins may set it or leave it 0.
func (s *Service) List(ctx context.Context, who quan.Identity, f quan.TemplateFilter) ([]*quan.Template, int, error) {
	shop, err := who.ShopScope()
	if err != nil {
		return nil, 0, err
	}
	if shop != quan.AnyShop {
		f.ShopNo = shop
	}
	if err := f.Validate(); err != nil {
		return nil, 0, err
	}
	if f.Limit == 0 {
		f.Limit = quan.DefaultPageSize
	}
	return s.Store.Templates(ctx, f)
}

// Edit changes a draft template: patch gets the current spec and stock and
// changes them (inside the store's transaction, so concurrent edits never
// lose each other); the result is validated and saved. ErrNotDraft once
// the template has been activated.
func (s *Service) Edit(ctx context.Context, who quan.Identity, id int64, patch func(*Edit) error) (*quan.Template, error) {
	return s.update(ctx, who, id, quan.ActionUpdate, func(t *quan.Template) error {
		if t.Status != quan.TemplateDraft {
			return quan.Errorf(quan.ENOTDRAFT, "template %d is %s: only a draft template can be edited", t.ID, t.Status)
		}
		in := Edit{TemplateSpec: t.TemplateSpec, Stock: t.Stock}
		if err := patch(&in); err != nil {
			return err
		}
		if in.Source == quan.SourcePlatform && who.Role != quan.RoleAdmin && t.Source != quan.SourcePlatform {
			return quan.Errorf(quan.EFORBIDDEN, "only the platform (an admin) can make a template platform-funded")
		}
		normalizeSpec(&in.TemplateSpec)
		return withRuleErrors(t.Edit(in.TemplateSpec, in.Stock), checkRules(s.Rules, in.Eligibility, in.Applies))
	})
}

// Activate, Pause, Resume and Terminate change a template's status; an
// illegal change is ErrTransition.
func (s *Service) Activate(ctx context.Context, who quan.Identity, id int64) (*quan.Template, error) {
	now := s.Now.UTC()
	return s.update(ctx, who, id, quan.ActionActivate, func(t *quan.Template) error { return t.Activate(now) })
}

// Pause stops issuing from an active template.
func (s *Service) Pause(ctx context.Context, who quan.Identity, id int64) (*quan.Template, error) {
	return s.update(ctx, who, id, quan.ActionPause, (*quan.Template).Pause)
}

// Resume restarts issuing from a paused template.
func (s *Service) Resume(ctx context.Context, who quan.Identity, id int64) (*quan.Template, error) {
	return s.update(ctx, who, id, quan.ActionResume, (*quan.Template).Resume)
}

// Terminate ends a template for good.
func (s *Service) Terminate(ctx context.Context, who quan.Identity, id int64) (*quan.Template, error) {
	return s.update(ctx, who, id, quan.ActionTerminate, (*quan.Template).Terminate)
}

// IncreaseStock adds n coupons to a template's stock.
func (s *Service) IncreaseStock(ctx context.Context, who quan.Identity, id, n int64) (*quan.Template, error) {
	return s.update(ctx, who, id, quan.ActionStock, func(t *quan.Template) error { return t.IncreaseStock(n) })
}

// EndDue ends the active and paused templates whose issue window has
// closed, as the system (the audit says "expire"), and returns how many.
// The sweeper calls it; claims and distributions refuse such templates
// from the moment the window closes either way.
func (s *Service) EndDue(ctx context.Context) (int, error) {
	now := s.Now.UTC()
	var due []*quan.Template
	for _, status := range []quan.TemplateStatus{quan.TemplateActive, quan.TemplatePaused} {
		for offset := 0; ; offset += quan.MaxPageSize {
			ts, _, err := s.Store.Templates(ctx, quan.TemplateFilter{ShopNo: quan.AnyShop, Status: status, Offset: offset, Limit: quan.MaxPageSize})
			if err != nil {
				return 0, fmt.Errorf("end due templates: %w", err)
			}
			for _, t := range ts {
				if !now.Before(t.IssueEnd) {
					due = append(due, t)
				}
			}
			if len(ts) < quan.MaxPageSize {
				break
			}
		}
	}
	system := quan.Identity{Role: quan.RoleAdmin, Subject: "system"}
	n := 0
	for _, t := range due {
		_, err := s.update(ctx, system, t.ID, quan.ActionExpire, func(t *quan.Template) error {
			if now.Before(t.IssueEnd) { // extended meanwhile
				return nil
			}
			return t.Terminate()
		})
		if err != nil && !errors.Is(err, quan.ErrTransition) {
			return n, err
		}
		if err == nil {
			n++
		}
	}
	return n, nil
}

// History returns the audit trail of template id, oldest first.
func (s *Service) History(ctx context.Context, who quan.Identity, id int64) ([]*quan.AuditEntry, error) {
	shop, err := who.ShopScope()
	if err != nil {
		return nil, err
	}
	return s.Store.TemplateHistory(ctx, shop, id)
}

func (s *Service) update(ctx context.Context, who quan.Identity, id int64, action string, fn func(*quan.Template) error) (*quan.Template, error) {
	shop, err := who.ShopScope()
	if err != nil {
		return nil, err
	}
	now := s.Now.UTC()
	var added int64
	// From the store's commit to the cache's update the two differ.
	s.inflight.Add(1)
	defer s.inflight.Add(-1)
	t, err := s.Store.UpdateTemplate(ctx, shop, id, who.String(), action, func(t *quan.Template) error {
		before := t.Stock
		if err := fn(t); err != nil {
			return err
		}
		added = t.Stock - before
		t.UpdatedAt = now
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s template %d: %w", action, id, err)
	}
	s.Book.Forget(id)
	if s.Cache != nil {
		var err error
		if action == quan.ActionActivate {
			// A template just activated holds no coupons: it is loaded
			// now, so that claims find it at once.
			err = s.Cache.Prime(ctx, quan.StateOf(t), func(func(quan.Holding, error) bool) {})
		} else {
			// A template the cache does not hold is loaded whole when
			// needed.
			err = s.Cache.Update(ctx, quan.StateOf(t), added)
		}
		if err != nil && !errors.Is(err, quan.ErrCacheCold) && s.Logger != nil {
			s.Logger.Warn("tell the cache of a template change", "template", id, "action", action, "err", err)
		}
	}
	return t, nil
}

// normalizeSpec keeps times in UTC to the microsecond, the precision every
// engine stores, so a template reads back exactly as it was written, and
// shows the opening reminders' lead it will use.
func normalizeSpec(s *quan.TemplateSpec) {
	for _, t := range []*time.Time{&s.IssueStart, &s.IssueEnd, &s.Validity.Start, &s.Validity.End} {
		*t = t.UTC().Truncate(time.Microsecond)
	}
	if s.RemindLead == 0 {
		s.RemindLead = quan.DefaultRemindLead
	}
	if s.Stacking == "" {
		s.Stacking = quan.StackAny
	}
	if len(s.RemindChannels) == 0 {
		s.RemindChannels = nil
	}
	normalizeRules(s)
	// 口令券 codes are case-insensitive: kept, and so compared, upper-case.
	s.PromoCode = quan.NormalizePromoCode(s.PromoCode)
}
