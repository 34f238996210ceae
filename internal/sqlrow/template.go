package sqlrow

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/quanhq/quan"
)

// ScanTemplate reads a template from a row of the columns
//
//	id, shop_no, name, description, kind,
//	rule_amount, rule_threshold, rule_rate, rule_cap, rule_step,
//	source, scope_kind, scope_ids, issue_start, issue_end,
//	validity_kind, validity_start, validity_end, validity_hours, code_prefix,
//	per_user_limit, stock, total_stock, status, created_by, created_at, updated_at,
//	remind_before, remind_channels, remind_lead, stacking, priority,
//	budget, per_user_daily, per_user_weekly, eligibility, applies,
//	logo_url, category, goods, instructions, metadata
//
// in that order, scope_ids and goods JSON arrays of strings, metadata a
// JSON object of strings (” reads as none in both), the reminders'
// durations whole seconds and their channels a comma list. A template with no
// scope ids reads them as nil, as the domain writes "no ids". The row's
// own error (sql.ErrNoRows) is returned as it is.
func ScanTemplate(row Scanner) (*quan.Template, error) {
	var (
		t            quan.Template
		ids          string
		before, lead int64
		channels     string
		goods, meta  string
	)
	if err := row.Scan(&t.ID, &t.ShopNo, &t.Name, &t.Description, &t.Kind,
		&t.Rule.Amount, &t.Rule.Threshold, &t.Rule.Rate, &t.Rule.Cap, &t.Rule.Step,
		&t.Source, &t.Scope.Kind, &ids, Time(&t.IssueStart), Time(&t.IssueEnd),
		&t.Validity.Kind, NullTime(&t.Validity.Start), NullTime(&t.Validity.End), &t.Validity.Hours, &t.CodePrefix,
		&t.PerUserLimit, &t.Stock, &t.TotalStock, &t.Status, &t.CreatedBy, Time(&t.CreatedAt), Time(&t.UpdatedAt),
		&before, &channels, &lead, &t.Stacking, &t.Priority,
		&t.Budget, &t.PerUserDaily, &t.PerUserWeekly, &t.Eligibility, &t.Applies,
		&t.LogoURL, &t.Category, &goods, &t.Instructions, &meta,
		&t.PromoCode,
	); err != nil {
		return nil, err
	}
	t.RemindBefore = quan.Duration(time.Duration(before) * time.Second)
	t.RemindLead = quan.Duration(time.Duration(lead) * time.Second)
	if channels != "" {
		for _, ch := range strings.Split(channels, ",") {
			t.RemindChannels = append(t.RemindChannels, quan.NotifyType(ch))
		}
	}
	if err := json.Unmarshal([]byte(ids), &t.Scope.IDs); err != nil {
		return nil, fmt.Errorf("template %d: scope ids: %w", t.ID, err)
	}
	if len(t.Scope.IDs) == 0 {
		t.Scope.IDs = nil
	}
	if goods != "" {
		if err := json.Unmarshal([]byte(goods), &t.Goods); err != nil {
			return nil, fmt.Errorf("template %d: goods: %w", t.ID, err)
		}
	}
	if len(t.Goods) == 0 {
		t.Goods = nil
	}
	if meta != "" {
		if err := json.Unmarshal([]byte(meta), &t.Metadata); err != nil {
			return nil, fmt.Errorf("template %d: metadata: %w", t.ID, err)
		}
	}
	if len(t.Metadata) == 0 {
		t.Metadata = nil
	}
	return &t, nil
}

// TemplateValues returns the values of t's columns after id and shop_no,
// name … promo_code in ScanTemplate's order, for an INSERT (after shop_no)
// or an UPDATE (before id). at is how the store writes an instant;
// validity_start and validity_end are NULL for the zero time.
func TemplateValues[V any](t *quan.Template, at func(time.Time) V) ([]any, error) {
	ids := "[]"
	if len(t.Scope.IDs) > 0 {
		b, err := json.Marshal(t.Scope.IDs)
		if err != nil {
			return nil, fmt.Errorf("scope ids: %w", err)
		}
		ids = string(b)
	}
	goods, meta := "[]", "{}"
	if len(t.Goods) > 0 {
		b, err := json.Marshal(t.Goods)
		if err != nil {
			return nil, fmt.Errorf("goods: %w", err)
		}
		goods = string(b)
	}
	if len(t.Metadata) > 0 {
		b, err := json.Marshal(t.Metadata)
		if err != nil {
			return nil, fmt.Errorf("metadata: %w", err)
		}
		meta = string(b)
	}
	return []any{t.Name, t.Description, t.Kind,
		t.Rule.Amount, t.Rule.Threshold, t.Rule.Rate, t.Rule.Cap, t.Rule.Step,
		t.Source, t.Scope.Kind, ids, at(t.IssueStart), at(t.IssueEnd),
		t.Validity.Kind, Null(at, t.Validity.Start), Null(at, t.Validity.End), t.Validity.Hours, t.CodePrefix,
		t.PerUserLimit, t.Stock, t.TotalStock, t.Status, t.CreatedBy, at(t.CreatedAt), at(t.UpdatedAt),
		int64(time.Duration(t.RemindBefore) / time.Second), joinChannels(t.RemindChannels), int64(time.Duration(t.RemindLead) / time.Second),
		t.Stacking, t.Priority,
		t.Budget, t.PerUserDaily, t.PerUserWeekly, t.Eligibility, t.Applies,
		t.LogoURL, t.Category, goods, t.Instructions, meta,
		t.PromoCode,
	}, nil
}

// GoodsPattern returns the LIKE pattern that matches the goods column of
// the templates listing g among their Goods: g as TemplateValues writes
// it in the JSON array, quotes included, so that "tea" matches neither
// "green tea" nor "teapot". escape makes the pattern's text literal (the
// engine's escapeLike).
func GoodsPattern(g string, escape func(string) string) string {
	b, _ := json.Marshal(g) // a string always marshals
	return "%" + escape(string(b)) + "%"
}

// TemplateWhere adds the conditions of f that read the same on every
// engine (everything but the name search) to w.
func TemplateWhere(w *Where, f quan.TemplateFilter, escape func(string) string, likeEscape string) {
	w.If(f.ShopNo != quan.AnyShop, `shop_no = ?`, f.ShopNo)
	w.If(f.Status != "", `status = ?`, f.Status)
	w.If(f.Kind != "", `kind = ?`, f.Kind)
	w.If(f.Category != "", `category = ?`, f.Category)
	w.If(f.Goods != "", `goods LIKE ? ESCAPE '`+likeEscape+`'`, GoodsPattern(f.Goods, escape))
	w.If(f.Before > 0, `id < ?`, f.Before)
	if len(f.IDs) > 0 {
		args := make([]any, len(f.IDs))
		for i, id := range f.IDs {
			args[i] = id
		}
		w.If(true, `id IN (?`+strings.Repeat(`, ?`, len(f.IDs)-1)+`)`, args...)
	}
}

// joinChannels writes channels as a comma list.
func joinChannels(chs []quan.NotifyType) string {
	ss := make([]string, len(chs))
	for i, ch := range chs {
		ss[i] = string(ch)
	}
	return strings.Join(ss, ",")
}

// ScanAudit reads an audit entry from a row of the columns id,
// template_id, shop_no, actor, action, at, changes, in that order, changes
// the JSON AuditValues writes.
func ScanAudit(row Scanner) (*quan.AuditEntry, error) {
	var (
		e       quan.AuditEntry
		changes string
	)
	if err := row.Scan(&e.ID, &e.TemplateID, &e.ShopNo, &e.Actor, &e.Action, Time(&e.At), &changes); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(changes), &e.Changes); err != nil {
		return nil, fmt.Errorf("audit entry %d: %w", e.ID, err)
	}
	return &e, nil
}

// AuditValues returns the values of e's columns template_id, shop_no,
// actor, action, at, changes, in that order, for an INSERT. changes is a
// JSON array, "[]" when e has none (never "null"). at is how the store
// writes an instant.
func AuditValues[V any](e *quan.AuditEntry, at func(time.Time) V) ([]any, error) {
	changes := e.Changes
	if changes == nil {
		changes = []quan.FieldChange{}
	}
	b, err := json.Marshal(changes)
	if err != nil {
		return nil, fmt.Errorf("audit entry: %w", err)
	}
	return []any{e.TemplateID, e.ShopNo, e.Actor, e.Action, at(e.At), string(b)}, nil
}

// Templates returns the page of templates f asks for (see
// quan.TemplateStore.Templates) on db, where w holds f's conditions:
// Page, or for f.SkipTotal one SELECT and no count, the total -1.
func Templates(ctx context.Context, db *sql.DB, columns string, w Where, f quan.TemplateFilter) ([]*quan.Template, int, error) {
	if !f.SkipTotal {
		return Page(ctx, db, "templates", "templates", columns, w, f.Offset, f.Limit, ScanTemplate)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = quan.DefaultPageSize
	}
	items, err := Query(ctx, db, "list templates", ScanTemplate,
		`SELECT `+columns+` FROM templates`+w.String()+` ORDER BY id DESC LIMIT ? OFFSET ?`,
		append(w.Args(), min(limit, quan.MaxPageSize), max(f.Offset, 0))...)
	if err != nil {
		return nil, 0, err
	}
	if items == nil {
		items = []*quan.Template{}
	}
	return items, -1, nil
}
