package sqlrow

import (
	"time"

	"github.com/quanhq/quan"
)

// RulesColumns are the columns of template_rules in ScanRulesVersion's
// and RulesVersionValues' order.
const RulesColumns = `template_id, version, eligibility, applies, effective_at, apply_to_issued, created_by, created_at`

// ScanRulesVersion reads a version of a template's rules from a row of
// RulesColumns.
func ScanRulesVersion(row Scanner) (quan.RulesVersion, error) {
	var v quan.RulesVersion
	err := row.Scan(&v.TemplateID, &v.Version, &v.Eligibility, &v.Applies, Time(&v.EffectiveAt),
		&v.ApplyToIssued, &v.CreatedBy, Time(&v.CreatedAt))
	return v, err
}

// RulesVersionValues returns the values of v's RulesColumns for an
// INSERT; at is how the store writes an instant.
func RulesVersionValues[V any](v *quan.RulesVersion, at func(time.Time) V) []any {
	return []any{v.TemplateID, v.Version, v.Eligibility, v.Applies, at(v.EffectiveAt),
		v.ApplyToIssued, v.CreatedBy, at(v.CreatedAt)}
}
