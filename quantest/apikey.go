package quantest

import (
	"bytes"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// TestAPIKeyStore runs the conformance suite of quan.APIKeyStore.
func TestAPIKeyStore(t *testing.T, newStore func(t *testing.T) quan.APIKeyStore) {
	t.Helper()
	run := func(name string, test func(*testing.T, quan.APIKeyStore)) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, newStore(t))
		})
	}
	run("CreateAndFindByHash", testAPIKeyCreate)
	run("HashIsUnique", testAPIKeyHashUnique)
	run("RevokeKeepsFirstTime", testAPIKeyRevoke)
	run("TouchOnlyMovesForward", testAPIKeyTouch)
}

func newAPIKey(name string, shop int64, hash byte, scopes ...quan.KeyScope) *quan.APIKey {
	return &quan.APIKey{Name: name, ShopNo: shop, Scopes: scopes, Hash: bytes.Repeat([]byte{hash}, 32),
		Hint: "qk_abcd", CreatedAt: base, CreatedBy: "admin:ops"}
}

func testAPIKeyCreate(t *testing.T, s quan.APIKeyStore) {
	ctx := t.Context()
	a := newAPIKey("orders", 0, 1, quan.ScopeSettlement)
	b := newAPIKey("pos 门店", 1001, 2, quan.ScopeCouponsRead, quan.ScopeRedeem)
	for _, k := range []*quan.APIKey{a, b} {
		if err := s.CreateAPIKey(ctx, k); err != nil || k.ID <= 0 {
			t.Fatalf("CreateAPIKey: id %d, %v", k.ID, err)
		}
	}
	got, err := s.APIKeyByHash(ctx, b.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != b.ID || got.Name != b.Name || got.ShopNo != 1001 || !slices.Equal(got.Scopes, b.Scopes) ||
		!bytes.Equal(got.Hash, b.Hash) || got.Hint != b.Hint || !got.CreatedAt.Equal(base) || got.CreatedAt.Location() != time.UTC ||
		got.CreatedBy != b.CreatedBy || !got.LastUsedAt.IsZero() || got.Revoked() {
		t.Errorf("read back %+v, want %+v", got, b)
	}
	if _, err := s.APIKeyByHash(ctx, bytes.Repeat([]byte{9}, 32)); quan.ErrorCode(err) != quan.ENOTFOUND {
		t.Errorf("an unknown hash: %v, want not found", err)
	}
	all, err := s.APIKeys(ctx)
	if err != nil || len(all) != 2 || all[0].ID != b.ID || all[1].ID != a.ID {
		t.Errorf("APIKeys = %v, %v: want both, newest first", all, err)
	}
}

func testAPIKeyHashUnique(t *testing.T, s quan.APIKeyStore) {
	ctx := t.Context()
	if err := s.CreateAPIKey(ctx, newAPIKey("one", 0, 3, quan.ScopeTasks)); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateAPIKey(ctx, newAPIKey("two", 0, 3, quan.ScopeTasks)); quan.ErrorCode(err) != quan.ECONFLICT {
		t.Errorf("a second key of the same hash: %v, want conflict", err)
	}
}

func testAPIKeyRevoke(t *testing.T, s quan.APIKeyStore) {
	ctx := t.Context()
	k := newAPIKey("pos", 7, 4, quan.ScopeRedeem)
	if err := s.CreateAPIKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	at := base.Add(time.Hour)
	got, err := s.RevokeAPIKey(ctx, k.ID, at)
	if err != nil || !got.RevokedAt.Equal(at) {
		t.Fatalf("RevokeAPIKey = %+v, %v", got, err)
	}
	got, err = s.RevokeAPIKey(ctx, k.ID, at.Add(time.Hour))
	if err != nil || !got.RevokedAt.Equal(at) {
		t.Errorf("revoked again: %+v, %v: want the first time kept", got, err)
	}
	byHash, err := s.APIKeyByHash(ctx, k.Hash)
	if err != nil || !byHash.Revoked() {
		t.Errorf("a revoked key by its hash: %+v, %v: want it, revoked", byHash, err)
	}
	if _, err := s.RevokeAPIKey(ctx, k.ID+100, at); quan.ErrorCode(err) != quan.ENOTFOUND {
		t.Errorf("revoke no key: %v, want not found", err)
	}
}

func testAPIKeyTouch(t *testing.T, s quan.APIKeyStore) {
	ctx := t.Context()
	k := newAPIKey("crm", 0, 5, quan.ScopeTemplates)
	if err := s.CreateAPIKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	later := base.Add(2 * time.Hour)
	for _, at := range []time.Time{later, base.Add(time.Hour)} {
		if err := s.TouchAPIKey(ctx, k.ID, at); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.APIKeyByHash(ctx, k.Hash)
	if err != nil || !got.LastUsedAt.Equal(later) {
		t.Errorf("last used %v, %v: want %v, the later touch", got.LastUsedAt, err, later)
	}
	if err := s.TouchAPIKey(ctx, k.ID+100, later); err != nil {
		t.Errorf("touch no key: %v, want nil", err)
	}
}

// RefundStores are the ports of one store a refund uses.
type RefundStores struct {
	WalletStores
	Refunds quan.RefundStore
}

// TestRefundStore runs the conformance suite of quan.RefundStore.
func TestRefundStore(t *testing.T, newStores func(t *testing.T) RefundStores) {
	t.Helper()
	run := func(name string, test func(*testing.T, RefundStores)) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, newStores(t))
		})
	}
	run("Once", testRefundOnce)
	run("NothingWrittenOnFailure", testRefundFails)
	run("Stampede", testRefundStampede)
}

// usedCoupon gives user a coupon and spends it on order.
func usedCoupon(t *testing.T, s RefundStores, user int64, order string) *quan.Coupon {
	t.Helper()
	c := walletCoupons(t, s.WalletStores, user)[0]
	_, err := s.Wallet.UpdateCoupons(t.Context(), user, []int64{c.ID}, func(cs []*quan.Coupon) error {
		if err := cs[0].Lock(order, walletNow, walletNow.Add(time.Hour)); err != nil {
			return err
		}
		return cs[0].Redeem(walletNow)
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func refund(c *quan.Coupon) func([]*quan.Coupon) error {
	return func(cs []*quan.Coupon) error { return cs[0].Refund(walletNow) }
}

func testRefundOnce(t *testing.T, s RefundStores) {
	ctx := t.Context()
	c := usedCoupon(t, s, 1, "A1")
	if ok, err := s.Refunds.OrderRefunded(ctx, 1, "A1"); ok || err != nil {
		t.Fatalf("OrderRefunded before = %v, %v", ok, err)
	}
	got, err := s.Refunds.RefundOrder(ctx, 1, "A1", walletNow, []int64{c.ID}, refund(c))
	if err != nil || len(got) != 1 || got[0].Status != quan.CouponAvailable {
		t.Fatalf("RefundOrder = %+v, %v", got, err)
	}
	if back := coupons(t, s.TaskStores, 1, c.TemplateID)[0]; back.Status != quan.CouponAvailable || back.OrderID != "" {
		t.Errorf("read back %+v, want available without an order", back)
	}
	if ok, err := s.Refunds.OrderRefunded(ctx, 1, "A1"); !ok || err != nil {
		t.Errorf("OrderRefunded after = %v, %v", ok, err)
	}
	if ok, err := s.Refunds.OrderRefunded(ctx, 2, "A1"); ok || err != nil {
		t.Errorf("another user's order A1 refunded = %v, %v: want false", ok, err)
	}
	called := false
	_, err = s.Refunds.RefundOrder(ctx, 1, "A1", walletNow, []int64{c.ID}, func([]*quan.Coupon) error { called = true; return nil })
	if quan.ErrorCode(err) != quan.EREFUNDED || called {
		t.Errorf("refund again: %v (fn called %v), want %s before fn", err, called, quan.EREFUNDED)
	}
}

func testRefundFails(t *testing.T, s RefundStores) {
	ctx := t.Context()
	c := usedCoupon(t, s, 1, "A2")
	_, err := s.Refunds.RefundOrder(ctx, 1, "A2", walletNow, []int64{c.ID}, func([]*quan.Coupon) error { return quan.ErrTransition })
	if quan.ErrorCode(err) != quan.ETRANSITION {
		t.Fatalf("fn fails: %v", err)
	}
	if ok, err := s.Refunds.OrderRefunded(ctx, 1, "A2"); ok || err != nil {
		t.Errorf("OrderRefunded after a failed refund = %v, %v: want false", ok, err)
	}
	if back := coupons(t, s.TaskStores, 1, c.TemplateID)[0]; back.Status != quan.CouponUsed {
		t.Errorf("coupon after a failed refund: %s, want used", back.Status)
	}
}

// testRefundStampede: many refunds of one order at once, one applies.
func testRefundStampede(t *testing.T, s RefundStores) {
	c := usedCoupon(t, s, 1, "A3")
	var ok, refused atomic.Int64
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			<-start
			_, err := s.Refunds.RefundOrder(t.Context(), 1, "A3", walletNow, []int64{c.ID}, refund(c))
			switch quan.ErrorCode(err) {
			case "":
				ok.Add(1)
			case quan.EREFUNDED:
				refused.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	close(start)
	wg.Wait()
	if ok.Load() != 1 || refused.Load() != 15 {
		t.Errorf("%d refunds applied and %d refused, want 1 and 15", ok.Load(), refused.Load())
	}
}
