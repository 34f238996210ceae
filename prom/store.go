package prom

import (
	"context"
	"iter"
	"time"

	"github.com/quanhq/quan"
)

// Store returns s recording each call as backend "store". Ping and
// CodeKey pass through untimed; Holdings and Codes are timed over the
// whole iteration, the caller's work between rows included.
func (m *BackendMetrics) Store(s quan.Store) quan.Store {
	o := m.ops("store")
	w := &store{
		s:                     s,
		createTemplate:        o("CreateTemplate"),
		template:              o("Template"),
		templates:             o("Templates"),
		highestTemplateID:     o("HighestTemplateID"),
		promoCodeTemplate:     o("PromoCodeTemplate"),
		updateTemplate:        o("UpdateTemplate"),
		adjustStock:           o("AdjustStock"),
		templateHistory:       o("TemplateHistory"),
		createTask:            o("CreateTask"),
		task:                  o("Task"),
		tasks:                 o("Tasks"),
		updateTask:            o("UpdateTask"),
		claimTask:             o("ClaimTask"),
		applyChunk:            o("ApplyChunk"),
		appliedChunks:         o("AppliedChunks"),
		failures:              o("Failures"),
		userCoupons:           o("UserCoupons"),
		userCouponPage:        o("UserCouponPage"),
		userHeld:              o("UserHeld"),
		coupon:                o("Coupon"),
		searchCoupons:         o("SearchCoupons"),
		couponEvents:          o("CouponEvents"),
		couponAudits:          o("CouponAudits"),
		reviseCoupon:          o("ReviseCoupon"),
		couponStats:           o("CouponStats"),
		holdings:              o("Holdings"),
		issueClaims:           o("IssueClaims"),
		failClaim:             o("FailClaim"),
		claim:                 o("Claim"),
		updateCoupons:         o("UpdateCoupons"),
		orderCoupons:          o("OrderCoupons"),
		swapCoupons:           o("SwapCoupons"),
		lapseCoupons:          o("LapseCoupons"),
		budgetUsage:           o("BudgetUsage"),
		createCodeBatch:       o("CreateCodeBatch"),
		codeBatch:             o("CodeBatch"),
		addCodes:              o("AddCodes"),
		generatingCodeBatches: o("GeneratingCodeBatches"),
		codeBatches:           o("CodeBatches"),
		codes:                 o("Codes"),
		code:                  o("Code"),
		redeemCode:            o("RedeemCode"),
		notifyOps:             newNotifyOps(o),
		statsOps:              newStatsOps(o),
		remindOps:             newRemindOps(o),
		accountOps:            newAccountOps(o),
		factsOps:              newFactsOps(o),
		shopOps:               newShopOps(o),
		keyOps:                newKeyOps(o),
		rulesOps:              newRulesOps(o),
		eventOps:              newEventOps(o),
		taskStatuses:          o("TaskStatuses"),
		oldestRunningTask:     o("OldestRunningTask"),
		oldestAvailableEnd:    o("OldestAvailableEnd"),
		archiveCoupons:        o("ArchiveCoupons"),
	}
	return w
}

var _ quan.Store = (*store)(nil)

// store is a Store that records its calls. It embeds nothing, so a
// method added to a port fails to compile here until it is recorded.
type store struct {
	s quan.Store

	createTemplate, template, templates, updateTemplate, adjustStock, templateHistory    *op
	createTask, task, tasks, updateTask, claimTask, applyChunk, appliedChunks, failures  *op
	userCoupons, userCouponPage, userHeld, coupon, couponStats, holdings                 *op
	searchCoupons, couponEvents, couponAudits, reviseCoupon                              *op
	issueClaims, failClaim, claim                                                        *op
	updateCoupons, orderCoupons, swapCoupons, lapseCoupons, budgetUsage                  *op
	createCodeBatch, codeBatch, addCodes, generatingCodeBatches, codes, code, redeemCode *op
	codeBatches, highestTemplateID, promoCodeTemplate                                    *op
	taskStatuses, oldestRunningTask, oldestAvailableEnd, archiveCoupons                  *op
	notifyOps
	statsOps
	remindOps
	accountOps
	factsOps
	shopOps
	keyOps
	rulesOps
	eventOps
}

func (s *store) ArchiveCoupons(ctx context.Context, before, now time.Time, limit int) (_ int, err error) {
	defer s.archiveCoupons.done(ctx, time.Now(), &err)
	return s.s.ArchiveCoupons(ctx, before, now, limit)
}

func (s *store) Ping(ctx context.Context) error { return s.s.Ping(ctx) }

func (s *store) CreateTemplate(ctx context.Context, t *quan.Template, actor string) (err error) {
	defer s.createTemplate.done(ctx, time.Now(), &err)
	return s.s.CreateTemplate(ctx, t, actor)
}

func (s *store) Template(ctx context.Context, shop, id int64) (_ *quan.Template, err error) {
	defer s.template.done(ctx, time.Now(), &err)
	return s.s.Template(ctx, shop, id)
}

func (s *store) Templates(ctx context.Context, f quan.TemplateFilter) (_ []*quan.Template, _ int, err error) {
	defer s.templates.done(ctx, time.Now(), &err)
	return s.s.Templates(ctx, f)
}

func (s *store) HighestTemplateID(ctx context.Context) (_ int64, err error) {
	defer s.highestTemplateID.done(ctx, time.Now(), &err)
	return s.s.HighestTemplateID(ctx)
}

func (s *store) PromoCodeTemplate(ctx context.Context, code string) (_ int64, err error) {
	defer s.promoCodeTemplate.done(ctx, time.Now(), &err)
	return s.s.PromoCodeTemplate(ctx, code)
}

func (s *store) UpdateTemplate(ctx context.Context, shop, id int64, actor, action string, fn func(*quan.Template) error) (_ *quan.Template, err error) {
	defer s.updateTemplate.done(ctx, time.Now(), &err)
	return s.s.UpdateTemplate(ctx, shop, id, actor, action, fn)
}

func (s *store) AdjustStock(ctx context.Context, id, delta int64) (_ int64, err error) {
	defer s.adjustStock.done(ctx, time.Now(), &err)
	return s.s.AdjustStock(ctx, id, delta)
}

func (s *store) TemplateHistory(ctx context.Context, shop, id int64) (_ []*quan.AuditEntry, err error) {
	defer s.templateHistory.done(ctx, time.Now(), &err)
	return s.s.TemplateHistory(ctx, shop, id)
}

func (s *store) CreateTask(ctx context.Context, t *quan.Task) (err error) {
	defer s.createTask.done(ctx, time.Now(), &err)
	return s.s.CreateTask(ctx, t)
}

func (s *store) Task(ctx context.Context, shop, id int64) (_ *quan.Task, err error) {
	defer s.task.done(ctx, time.Now(), &err)
	return s.s.Task(ctx, shop, id)
}

func (s *store) Tasks(ctx context.Context, f quan.TaskFilter) (_ []*quan.Task, _ int, err error) {
	defer s.tasks.done(ctx, time.Now(), &err)
	return s.s.Tasks(ctx, f)
}

func (s *store) UpdateTask(ctx context.Context, shop, id int64, fn func(*quan.Task) error) (_ *quan.Task, err error) {
	defer s.updateTask.done(ctx, time.Now(), &err)
	return s.s.UpdateTask(ctx, shop, id, fn)
}

func (s *store) ClaimTask(ctx context.Context, owner string, now, lease time.Time) (_ *quan.Task, err error) {
	defer s.claimTask.done(ctx, time.Now(), &err)
	return s.s.ClaimTask(ctx, owner, now, lease)
}

func (s *store) ApplyChunk(ctx context.Context, c *quan.Chunk) (_ quan.TaskCounts, err error) {
	defer s.applyChunk.done(ctx, time.Now(), &err)
	return s.s.ApplyChunk(ctx, c)
}

func (s *store) AppliedChunks(ctx context.Context, id int64) (_ []int64, err error) {
	defer s.appliedChunks.done(ctx, time.Now(), &err)
	return s.s.AppliedChunks(ctx, id)
}

func (s *store) Failures(ctx context.Context, taskID, afterLine int64, limit int) (_ []quan.Failure, err error) {
	defer s.failures.done(ctx, time.Now(), &err)
	return s.s.Failures(ctx, taskID, afterLine, limit)
}

func (s *store) UserCoupons(ctx context.Context, user, template int64) (_ []*quan.Coupon, err error) {
	defer s.userCoupons.done(ctx, time.Now(), &err)
	return s.s.UserCoupons(ctx, user, template)
}

func (s *store) UserCouponPage(ctx context.Context, user int64, offset, limit int) (_ []*quan.Coupon, _ int, err error) {
	defer s.userCouponPage.done(ctx, time.Now(), &err)
	return s.s.UserCouponPage(ctx, user, offset, limit)
}

func (s *store) UserHeld(ctx context.Context, user int64) (_ map[int64]int64, err error) {
	defer s.userHeld.done(ctx, time.Now(), &err)
	return s.s.UserHeld(ctx, user)
}

func (s *store) Coupon(ctx context.Context, shop, id int64) (_ *quan.Coupon, err error) {
	defer s.coupon.done(ctx, time.Now(), &err)
	return s.s.Coupon(ctx, shop, id)
}

func (s *store) SearchCoupons(ctx context.Context, f quan.CouponFilter) (_ []*quan.Coupon, err error) {
	defer s.searchCoupons.done(ctx, time.Now(), &err)
	return s.s.SearchCoupons(ctx, f)
}

func (s *store) CouponEvents(ctx context.Context, shop, id int64) (_ []*quan.Event, err error) {
	defer s.couponEvents.done(ctx, time.Now(), &err)
	return s.s.CouponEvents(ctx, shop, id)
}

func (s *store) CouponAudits(ctx context.Context, shop, id int64) (_ []*quan.CouponAudit, err error) {
	defer s.couponAudits.done(ctx, time.Now(), &err)
	return s.s.CouponAudits(ctx, shop, id)
}

func (s *store) ReviseCoupon(ctx context.Context, shop, id int64, a *quan.CouponAudit, fn func(*quan.Coupon) error) (_ *quan.Coupon, err error) {
	defer s.reviseCoupon.done(ctx, time.Now(), &err)
	return s.s.ReviseCoupon(ctx, shop, id, a, fn)
}

func (s *store) CodeKey() *quan.CodeKey { return s.s.CodeKey() }

func (s *store) StoreRetries() int64 { return s.s.StoreRetries() }

func (s *store) TaskStatuses(ctx context.Context) (_ map[quan.TaskStatus]int64, err error) {
	defer s.taskStatuses.done(ctx, time.Now(), &err)
	return s.s.TaskStatuses(ctx)
}

func (s *store) OldestRunningTask(ctx context.Context) (_ time.Time, err error) {
	defer s.oldestRunningTask.done(ctx, time.Now(), &err)
	return s.s.OldestRunningTask(ctx)
}

func (s *store) OldestAvailableEnd(ctx context.Context) (_ time.Time, err error) {
	defer s.oldestAvailableEnd.done(ctx, time.Now(), &err)
	return s.s.OldestAvailableEnd(ctx)
}

func (s *store) CouponStats(ctx context.Context, template, task int64) (_ quan.CouponStats, err error) {
	defer s.couponStats.done(ctx, time.Now(), &err)
	return s.s.CouponStats(ctx, template, task)
}

func (s *store) Holdings(ctx context.Context, template int64, at time.Time) iter.Seq2[quan.Holding, error] {
	return timedSeq(ctx, s.holdings, s.s.Holdings(ctx, template, at))
}

func (s *store) IssueClaims(ctx context.Context, claims []*quan.Claim, now time.Time) (_ []*quan.Claim, err error) {
	defer s.issueClaims.done(ctx, time.Now(), &err)
	return s.s.IssueClaims(ctx, claims, now)
}

func (s *store) FailClaim(ctx context.Context, c *quan.Claim, reason string, now time.Time) (_ *quan.Claim, err error) {
	defer s.failClaim.done(ctx, time.Now(), &err)
	return s.s.FailClaim(ctx, c, reason, now)
}

func (s *store) Claim(ctx context.Context, id string) (_ *quan.Claim, err error) {
	defer s.claim.done(ctx, time.Now(), &err)
	return s.s.Claim(ctx, id)
}

func (s *store) UpdateCoupons(ctx context.Context, user int64, ids []int64, fn func([]*quan.Coupon) error) (_ []*quan.Coupon, err error) {
	defer s.updateCoupons.done(ctx, time.Now(), &err)
	return s.s.UpdateCoupons(ctx, user, ids, fn)
}

func (s *store) OrderCoupons(ctx context.Context, user int64, order string, ids []int64) (_ []*quan.Coupon, err error) {
	defer s.orderCoupons.done(ctx, time.Now(), &err)
	return s.s.OrderCoupons(ctx, user, order, ids)
}

func (s *store) SwapCoupons(ctx context.Context, user int64, before, after []*quan.Coupon) (_ bool, err error) {
	defer s.swapCoupons.done(ctx, time.Now(), &err)
	return s.s.SwapCoupons(ctx, user, before, after)
}

func (s *store) BudgetUsage(ctx context.Context, template int64) (_ quan.BudgetUsage, err error) {
	defer s.budgetUsage.done(ctx, time.Now(), &err)
	return s.s.BudgetUsage(ctx, template)
}

func (s *store) LapseCoupons(ctx context.Context, now time.Time, limit int) (_ []*quan.Coupon, _ []quan.CouponStatus, err error) {
	defer s.lapseCoupons.done(ctx, time.Now(), &err)
	return s.s.LapseCoupons(ctx, now, limit)
}

func (s *store) CreateCodeBatch(ctx context.Context, b *quan.CodeBatch) (err error) {
	defer s.createCodeBatch.done(ctx, time.Now(), &err)
	return s.s.CreateCodeBatch(ctx, b)
}

func (s *store) CodeBatch(ctx context.Context, shop, id int64) (_ *quan.CodeBatch, err error) {
	defer s.codeBatch.done(ctx, time.Now(), &err)
	return s.s.CodeBatch(ctx, shop, id)
}

func (s *store) AddCodes(ctx context.Context, id int64, codes []string, now time.Time) (_ *quan.CodeBatch, err error) {
	defer s.addCodes.done(ctx, time.Now(), &err)
	return s.s.AddCodes(ctx, id, codes, now)
}

func (s *store) GeneratingCodeBatches(ctx context.Context) (_ []*quan.CodeBatch, err error) {
	defer s.generatingCodeBatches.done(ctx, time.Now(), &err)
	return s.s.GeneratingCodeBatches(ctx)
}

func (s *store) CodeBatches(ctx context.Context, shop, template int64) (_ []*quan.CodeBatch, err error) {
	defer s.codeBatches.done(ctx, time.Now(), &err)
	return s.s.CodeBatches(ctx, shop, template)
}

func (s *store) Codes(ctx context.Context, id int64) iter.Seq2[quan.RedeemCode, error] {
	return timedSeq(ctx, s.codes, s.s.Codes(ctx, id))
}

func (s *store) Code(ctx context.Context, code string) (_ quan.RedeemCode, err error) {
	defer s.code.done(ctx, time.Now(), &err)
	return s.s.Code(ctx, code)
}

func (s *store) RedeemCode(ctx context.Context, code string, user int64, now time.Time) (_ *quan.Coupon, err error) {
	defer s.redeemCode.done(ctx, time.Now(), &err)
	return s.s.RedeemCode(ctx, code, user, now)
}

// timedSeq is seq recording each iteration of it with o, from its start
// until it ends or its caller stops, and the error it yielded last.
func timedSeq[V any](ctx context.Context, o *op, seq iter.Seq2[V, error]) iter.Seq2[V, error] {
	return func(yield func(V, error) bool) {
		var err error
		defer o.done(ctx, time.Now(), &err)
		for v, e := range seq {
			if e != nil {
				err = e
			}
			if !yield(v, e) {
				return
			}
		}
	}
}
