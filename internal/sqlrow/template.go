package sqlrow

import (
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
//	budget, per_user_daily, per_user_weekly, eligibility, applies
//
// in that order, scope_ids a JSON array of strings, the reminders'
// durations whole seconds and their channels a comma list. A template with no
// scope ids reads them as nil, as the domain writes "no ids". The row's
// own error (sql.ErrNoRows) is returned as it is.
func ScanTemplate(row Scanner) (*quan.Template, error) {
	var (
		t            quan.Template
		ids          string
		before, lead int64
		channels     string
	)
	if err := row.Scan(&t.ID, &t.ShopNo, &t.Name, &t.Description, &t.Kind,
		&t.Rule.Amount, &t.Rule.Threshold, &t.Rule.Rate, &t.Rule.Cap, &t.Rule.Step,
		&t.Source, &t.Scope.Kind, &ids, Time(&t.IssueStart), Time(&t.IssueEnd),
		&t.Validity.Kind, NullTime(&t.Validity.Start), NullTime(&t.Validity.End), &t.Validity.Hours, &t.CodePrefix,
		&t.PerUserLimit, &t.Stock, &t.TotalStock, &t.Status, &t.CreatedBy, Time(&t.CreatedAt), Time(&t.UpdatedAt),
		&before, &channels, &lead, &t.Stacking, &t.Priority,
		&t.Budget, &t.PerUserDaily, &t.PerUserWeekly, &t.Eligibility, &t.Applies,
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
	return []any{t.Name, t.Description, t.Kind,
		t.Rule.Amount, t.Rule.Threshold, t.Rule.Rate, t.Rule.Cap, t.Rule.Step,
		t.Source, t.Scope.Kind, ids, at(t.IssueStart), at(t.IssueEnd),
		t.Validity.Kind, Null(at, t.Validity.Start), Null(at, t.Validity.End), t.Validity.Hours, t.CodePrefix,
		t.PerUserLimit, t.Stock, t.TotalStock, t.Status, t.CreatedBy, at(t.CreatedAt), at(t.UpdatedAt),
		int64(time.Duration(t.RemindBefore) / time.Second), joinChannels(t.RemindChannels), int64(time.Duration(t.RemindLead) / time.Second),
		t.Stacking, t.Priority,
		t.Budget, t.PerUserDaily, t.PerUserWeekly, t.Eligibility, t.Applies,
		t.PromoCode,
	}, nil
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
