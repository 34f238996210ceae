package claims

import (
	"context"
	"time"

	"github.com/quanhq/quan"
)

// eligible returns nil if user may claim template at now by the
// eligibility rule in force (none: anyone may), else ENOTELIGIBLE. It
// runs before the reservation, so a refused claim takes no stock, no
// place in the per-user limit and no rate-limit token. It reads the
// template's rules from the RuleBook and the user's facts from
// Facts.Facts, both in memory once read: a template whose rules the
// book does not hold yet is looked up only if it may exist (mayExist),
// so unknown ids cost the store next to nothing. known says the caller
// knows the template exists (it has just read it: Centre), so that it
// need not ask.
func (s *Service) eligible(ctx context.Context, template, user int64, now time.Time, known bool) error {
	if s.Rules == nil {
		return nil
	}
	tr, ok := s.Rules.Cached(template)
	if !ok && known {
		var err error
		if tr, err = s.Rules.Rules(ctx, template); err != nil {
			return err
		}
	} else if !ok {
		exists, err := s.mayExist(ctx, template)
		if err != nil {
			return err
		}
		if !exists {
			return quan.Errorf(quan.ENOTFOUND, "template %d not found", template)
		}
		if tr, err = s.Rules.Rules(ctx, template); err != nil {
			return err
		}
	}
	err := quan.EligibleBy(ctx, tr, s.Facts, template, user, now)
	if quan.ErrorCode(err) == quan.ENOTELIGIBLE && tr.Status == quan.TemplateDraft {
		// As the cache answers a draft: it does not exist for users.
		return quan.Errorf(quan.ENOTFOUND, "template %d not found", template)
	}
	return err
}
