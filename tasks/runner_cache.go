package tasks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quanhq/quan"
)

// reconcileIfEnded reconciles the cache with the store if task has ended.
// A reload reads the stock from the store before it replaces the cache,
// and other chunks of the task apply meanwhile, in other workers: if the
// last of them was applied and the runner finished the task and
// reconciled before this reload replaced the cache, the reload put back
// stock those chunks issued, and nothing would correct it. A task that
// ended before the reload was done is reconciled again, after it; one
// still running then will be reconciled by its runner later.
func (d *Runner) reconcileIfEnded(ctx context.Context, task int64) {
	cur, err := d.Store.Task(ctx, quan.AnyShop, task)
	if err != nil {
		d.logger().Warn("reconcile the cache", "task", task, "err", err)
		return
	}
	if cur.Status != quan.TaskRunning {
		d.reconcile(ctx, cur)
	}
}

// reserve reserves users in the cache, first loading the template if the
// cache lacks it and correcting its rules if they changed in the store.
func (d *Runner) reserve(ctx context.Context, template int64, key string, users []int64, now time.Time) ([]quan.Refusal, error) {
	tpl, err := d.Templates.Template(ctx, quan.AnyShop, template)
	if err != nil {
		return nil, err
	}
	st, err := d.Cache.State(ctx, template)
	switch {
	case errors.Is(err, quan.ErrCacheCold):
		if _, err := d.Cache.Load(ctx, quan.StateOf(tpl), d.Coupons.Holdings(ctx, tpl.ID, tpl.PeriodsAt(now))); err != nil {
			return nil, fmt.Errorf("load template %d into the cache: %w", tpl.ID, err)
		}
	case err != nil:
		return nil, err
	case !sameRules(st, quan.StateOf(tpl)):
		if err := d.Cache.Update(ctx, quan.StateOf(tpl), 0); err != nil && !errors.Is(err, quan.ErrCacheCold) {
			return nil, err
		}
	}
	for attempt := 0; ; attempt++ {
		refusals, err := d.Cache.Reserve(ctx, template, key, users, now)
		if !errors.Is(err, quan.ErrCacheCold) || attempt == 2 {
			return refusals, err
		}
		// Lost since the check above (a Redis restart, a FLUSHALL).
		if _, err := d.Cache.Load(ctx, quan.StateOf(tpl), d.Coupons.Holdings(ctx, template, tpl.PeriodsAt(now))); err != nil {
			return nil, fmt.Errorf("load template %d into the cache: %w", template, err)
		}
	}
}

// sameRules reports whether a and b agree on everything but the stock.
func sameRules(a, b quan.TemplateState) bool {
	return a.ID == b.ID && a.ShopNo == b.ShopNo && a.Status == b.Status && a.PerUserLimit == b.PerUserLimit &&
		a.PerUserDaily == b.PerUserDaily && a.PerUserWeekly == b.PerUserWeekly &&
		a.IssueStart.Equal(b.IssueStart) && a.IssueEnd.Equal(b.IssueEnd)
}

// prime loads template from the store into the cache.
func (d *Runner) prime(ctx context.Context, template int64) error {
	tpl, err := d.Templates.Template(ctx, quan.AnyShop, template)
	if err != nil {
		return err
	}
	return d.primeWith(ctx, tpl)
}

func (d *Runner) primeWith(ctx context.Context, tpl *quan.Template) error {
	start := time.Now()
	if err := d.Cache.Prime(ctx, quan.StateOf(tpl), d.Coupons.Holdings(ctx, tpl.ID, tpl.PeriodsAt(d.Now.UTC()))); err != nil {
		return fmt.Errorf("load template %d into the cache: %w", tpl.ID, err)
	}
	d.logger().Info("cache loaded from the store", "template", tpl.ID, "stock", tpl.Stock, "took", time.Since(start))
	return nil
}

// reconcile makes the cache agree with the store on the stock of the
// task's template once the task has ended: they differ only if the cache
// lost its state or a reservation was never settled while it ran.
//
// With a Reconciler it asks that to check the template now: it tells
// drift from claims and chunks still in flight on the template, and
// corrects only drift. Without one, a difference of the stocks loads the
// template from the store: claims in flight on it (a flash sale during a
// distribution) would be given back by that load, so a process that takes
// claims has a Reconciler.
func (d *Runner) reconcile(ctx context.Context, t *quan.Task) {
	if d.Cache == nil || t.DryRun {
		return
	}
	if d.Reconciler != nil {
		d.Reconciler.Check(t.TemplateID)
		return
	}
	tpl, err := d.Templates.Template(ctx, quan.AnyShop, t.TemplateID)
	if err != nil {
		d.logger().Warn("reconcile the cache", "task", t.ID, "err", err)
		return
	}
	st, err := d.Cache.State(ctx, t.TemplateID)
	if err == nil && st.Stock == tpl.Stock {
		return
	}
	if err != nil && !errors.Is(err, quan.ErrCacheCold) {
		d.logger().Warn("reconcile the cache", "task", t.ID, "err", err)
		return
	}
	if err == nil {
		d.logger().Info("cache and store differ on the stock; loading the cache from the store",
			"task", t.ID, "template", t.TemplateID, "cache", st.Stock, "store", tpl.Stock)
	}
	if err := d.primeWith(ctx, tpl); err != nil {
		d.logger().Warn("reconcile the cache", "task", t.ID, "err", err)
	}
}
