package quantest

import (
	"context"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// TestStoreUnavailable runs the outage suite of quan.Store: open returns
// a store with a template, a running task, a coupon and a claim in it (by
// the ports), and down makes it unreachable (closes it, or stops its
// server). Every call then fails quan.EUNAVAILABLE naming
// quan.BackendStore, reads and writes, lists and iterators alike, so that
// the API answers 503 rather than 500.
func TestStoreUnavailable(t *testing.T, open func(t *testing.T) (s quan.Store, down func())) {
	t.Helper()
	s, down := open(t)
	ctx := t.Context()
	now := base.Add(time.Hour)

	tpl := newTemplate(t, 1, "down")
	tpl.Status = quan.TemplateActive
	if err := s.CreateTemplate(ctx, tpl, "test"); err != nil {
		t.Fatal(err)
	}
	task := newTask(t, 1, tpl.ID, "down")
	if err := s.CreateTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	claim := &quan.Claim{ID: quan.NewClaimID(tpl.ID, 7), TemplateID: tpl.ID, UserID: 7, Status: quan.ClaimPending, At: now}
	if _, err := s.IssueClaims(ctx, []*quan.Claim{claim}, now); err != nil {
		t.Fatal(err)
	}
	down()

	calls := []struct {
		name string
		call func(context.Context) error
	}{
		{"Ping", s.Ping},
		{"Template", func(ctx context.Context) error { _, err := s.Template(ctx, 1, tpl.ID); return err }},
		{"Templates", func(ctx context.Context) error {
			_, _, err := s.Templates(ctx, quan.TemplateFilter{ShopNo: 1})
			return err
		}},
		{"CreateTemplate", func(ctx context.Context) error { return s.CreateTemplate(ctx, newTemplate(t, 1, "new"), "test") }},
		{"UpdateTemplate", func(ctx context.Context) error {
			_, err := s.UpdateTemplate(ctx, 1, tpl.ID, "test", quan.ActionUpdate, func(*quan.Template) error { return nil })
			return err
		}},
		{"AdjustStock", func(ctx context.Context) error { _, err := s.AdjustStock(ctx, tpl.ID, 1); return err }},
		{"Task", func(ctx context.Context) error { _, err := s.Task(ctx, 1, task.ID); return err }},
		{"Tasks", func(ctx context.Context) error { _, _, err := s.Tasks(ctx, quan.TaskFilter{ShopNo: 1}); return err }},
		{"CreateTask", func(ctx context.Context) error { return s.CreateTask(ctx, newTask(t, 1, tpl.ID, "new")) }},
		{"UpdateTask", func(ctx context.Context) error {
			_, err := s.UpdateTask(ctx, 1, task.ID, func(*quan.Task) error { return nil })
			return err
		}},
		{"ClaimTask", func(ctx context.Context) error {
			_, err := s.ClaimTask(ctx, "runner", now, now.Add(time.Minute))
			return err
		}},
		{"AppliedChunks", func(ctx context.Context) error { _, err := s.AppliedChunks(ctx, task.ID); return err }},
		{"UserCoupons", func(ctx context.Context) error { _, err := s.UserCoupons(ctx, 7, 0); return err }},
		{"SearchCoupons", func(ctx context.Context) error {
			_, err := s.SearchCoupons(ctx, quan.CouponFilter{UserID: 7})
			return err
		}},
		{"CouponEvents", func(ctx context.Context) error { _, err := s.CouponEvents(ctx, 1, 1); return err }},
		{"CouponAudits", func(ctx context.Context) error { _, err := s.CouponAudits(ctx, 1, 1); return err }},
		{"ReviseCoupon", func(ctx context.Context) error {
			_, err := s.ReviseCoupon(ctx, 1, 1, &quan.CouponAudit{Actor: "test", Action: quan.ActionRevokeCoupon, Reason: "down", At: now},
				func(c *quan.Coupon) error { return c.Revoke(now) })
			return err
		}},
		{"UserCouponPage", func(ctx context.Context) error { _, _, err := s.UserCouponPage(ctx, 7, 0, 10); return err }},
		{"UserHeld", func(ctx context.Context) error { _, err := s.UserHeld(ctx, 7); return err }},
		{"Claim", func(ctx context.Context) error { _, err := s.Claim(ctx, claim.ID); return err }},
		{"IssueClaims", func(ctx context.Context) error {
			c := &quan.Claim{ID: quan.NewClaimID(tpl.ID, 8), TemplateID: tpl.ID, UserID: 8, Status: quan.ClaimPending, At: now}
			_, err := s.IssueClaims(ctx, []*quan.Claim{c}, now)
			return err
		}},
		{"UpdateCoupons", func(ctx context.Context) error {
			_, err := s.UpdateCoupons(ctx, 7, []int64{1}, func([]*quan.Coupon) error { return nil })
			return err
		}},
		{"Holdings", func(ctx context.Context) error {
			for _, err := range s.Holdings(ctx, tpl.ID, time.Time{}) {
				return err
			}
			return nil
		}},
		{"AccountByName", func(ctx context.Context) error { _, err := s.AccountByName(ctx, "ops"); return err }},
		{"Session", func(ctx context.Context) error {
			_, err := s.Session(ctx, []byte("0123456789abcdef0123456789abcdef"))
			return err
		}},
		{"CreateAPIKey", func(ctx context.Context) error { return s.CreateAPIKey(ctx, newAPIKey("down", 0, 1, quan.ScopeTasks)) }},
		{"APIKeys", func(ctx context.Context) error { _, err := s.APIKeys(ctx); return err }},
		{"APIKeyByHash", func(ctx context.Context) error { _, err := s.APIKeyByHash(ctx, make([]byte, 32)); return err }},
		{"RevokeAPIKey", func(ctx context.Context) error { _, err := s.RevokeAPIKey(ctx, 1, now); return err }},
		{"TouchAPIKey", func(ctx context.Context) error { return s.TouchAPIKey(ctx, 1, now) }},
		{"RefundOrder", func(ctx context.Context) error {
			_, err := s.RefundOrder(ctx, 7, "A1", now, nil, func([]*quan.Coupon) error { return nil })
			return err
		}},
		{"OrderRefunded", func(ctx context.Context) error { _, err := s.OrderRefunded(ctx, 7, "A1"); return err }},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			err := c.call(ctx)
			if quan.ErrorCode(err) != quan.EUNAVAILABLE || quan.ErrorBackend(err) != quan.BackendStore {
				t.Fatalf("%s on a store that is down: %v (code %q, backend %q), want %s of the %s",
					c.name, err, quan.ErrorCode(err), quan.ErrorBackend(err), quan.EUNAVAILABLE, quan.BackendStore)
			}
		})
	}
}
