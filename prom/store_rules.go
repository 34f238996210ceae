package prom

import (
	"context"
	"time"

	"github.com/quanhq/quan"
)

// rulesOps record the rules store's calls.
type rulesOps struct {
	addRulesVersion, rulesVersions *op
}

func newRulesOps(o func(string) *op) rulesOps {
	return rulesOps{
		addRulesVersion: o("AddRulesVersion"),
		rulesVersions:   o("RulesVersions"),
	}
}

func (s *store) AddRulesVersion(ctx context.Context, shop, id int64, actor string, v *quan.RulesVersion,
	check func(*quan.Template, *quan.RulesVersion) error) (err error) {
	defer s.addRulesVersion.done(ctx, time.Now(), &err)
	return s.s.AddRulesVersion(ctx, shop, id, actor, v, check)
}

func (s *store) RulesVersions(ctx context.Context, template int64) (_ []quan.RulesVersion, err error) {
	defer s.rulesVersions.done(ctx, time.Now(), &err)
	return s.s.RulesVersions(ctx, template)
}
