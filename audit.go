package quan

import (
	"bytes"
	"encoding/json"
	"time"
)

// Audit actions on templates.
const (
	ActionCreate    = "create"
	ActionUpdate    = "update"
	ActionActivate  = "activate"
	ActionPause     = "pause"
	ActionResume    = "resume"
	ActionTerminate = "terminate"
	ActionExpire    = "expire" // the issue window closed: ended by the system
	ActionStock     = "increase_stock"
	ActionRules     = "rules" // a new version of the rules (RulesVersion)
)

// AuditEntry records one change to a template: who, when, what, and each
// changed field before and after.
type AuditEntry struct {
	ID         int64         `json:"id"`
	TemplateID int64         `json:"templateId"`
	ShopNo     int64         `json:"shopNo"`
	Actor      string        `json:"actor"`
	Action     string        `json:"action"`
	At         time.Time     `json:"at"`
	Changes    []FieldChange `json:"changes"`
}

// FieldChange is one field of a template before and after a change; Before
// is null on create.
type FieldChange struct {
	Field  string          `json:"field"`
	Before json.RawMessage `json:"before"`
	After  json.RawMessage `json:"after"`
}

// DiffTemplates lists the fields that differ between before (nil on
// create) and after, by their JSON names, in a stable order. UpdatedAt is
// left out: every change moves it.
func DiffTemplates(before, after *Template) []FieldChange {
	a := templateFields(after)
	b := map[string]json.RawMessage{}
	if before != nil {
		b = templateFields(before)
	}
	var out []FieldChange
	for _, k := range templateFieldOrder {
		if k == "updatedAt" {
			continue
		}
		av, bv := a[k], b[k]
		if before != nil && bytes.Equal(av, bv) {
			continue
		}
		if bv == nil {
			bv = json.RawMessage("null")
		}
		if av == nil {
			av = json.RawMessage("null")
		}
		out = append(out, FieldChange{Field: k, Before: bv, After: av})
	}
	return out
}

var templateFieldOrder = []string{
	"id", "shopNo", "name", "description", "kind", "rule", "source", "scope",
	"issueStart", "issueEnd", "validity", "perUserLimit", "codePrefix",
	"remindBefore", "remindChannels", "remindLead", "stacking", "priority",
	"budget", "perUserDaily", "perUserWeekly", "eligibility", "applies", "promoCode",
	"logoUrl", "category", "goods", "instructions", "metadata", "stock", "totalStock",
	"status", "createdBy", "createdAt", "updatedAt",
}

func templateFields(t *Template) map[string]json.RawMessage {
	b, err := json.Marshal(t)
	if err != nil {
		// A Template holds only plain values; marshalling cannot fail.
		panic("quan: marshal template: " + err.Error())
	}
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m)
	return m
}
