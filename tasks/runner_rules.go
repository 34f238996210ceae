package tasks

import (
	"context"
	"fmt"

	"github.com/quanhq/quan"
)

// screen marks CauseNotEligible on the undecided rows of c whose user the
// eligibility rule of template in force at c.Now refuses, before the
// chunk reserves or the store plans it. A template without an
// eligibility rule costs nothing more than a look in the RuleBook; one
// with a rule costs one read of the chunk's users' facts from Facts, all
// at once, and an evaluation a row. template 0 means the template of the
// chunk's task, read from the store only when there is a RuleBook.
func (d *Runner) screen(ctx context.Context, c *quan.Chunk, template int64) error {
	if d.Rules == nil {
		return nil
	}
	if template == 0 {
		t, err := d.Store.Task(ctx, quan.AnyShop, c.TaskID)
		if err != nil {
			return err
		}
		template = t.TemplateID
	}
	tr, err := d.Rules.Rules(ctx, template)
	if err != nil {
		return fmt.Errorf("rules of template %d: %w", template, err)
	}
	rule, _ := tr.Eligibility(c.Now)
	if rule == nil {
		return nil
	}
	users := make([]int64, 0, len(c.Rows))
	for _, r := range c.Rows {
		if r.Cause == "" {
			users = append(users, r.UserID)
		}
	}
	if len(users) == 0 {
		return nil
	}
	var facts map[int64]*quan.UserFacts
	if d.Facts != nil {
		if facts, err = d.Facts.UserFacts(ctx, users); err != nil {
			return fmt.Errorf("facts of the users of chunk %d: %w", c.Seq, err)
		}
	}
	for i := range c.Rows {
		r := &c.Rows[i]
		if r.Cause != "" {
			continue
		}
		f := facts[r.UserID]
		if f == nil {
			f = &quan.UserFacts{UserID: r.UserID}
		}
		if ok, err := rule.Eval(f, nil, c.Now); err != nil || !ok {
			r.Cause = quan.CauseNotEligible
		}
	}
	return nil
}
