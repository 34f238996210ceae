package rules_test

import (
	"testing"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/rules"
)

// TestSizesAreFactLimits: rules are priced for the largest facts the
// attribute store takes, so a stored user's facts never make a rule cost
// more than its estimate.
func TestSizesAreFactLimits(t *testing.T) {
	for _, c := range []struct {
		name        string
		rule, facts int
	}{
		{"tags", rules.SizeTags, quan.MaxUserTags},
		{"attrs", rules.SizeAttrs, quan.MaxUserAttrs},
		{"string", rules.SizeString, quan.MaxFactBytes},
	} {
		if c.rule != c.facts {
			t.Errorf("%s: rules are priced for %d, the attribute store takes %d", c.name, c.rule, c.facts)
		}
	}
}
