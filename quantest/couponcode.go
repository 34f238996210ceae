package quantest

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/quanhq/quan"
)

// TestCouponCodes checks the codes of coupons as quan.CouponStore
// promises them: every coupon read has the code its store's CodeKey makes
// of its id and its template's prefix, the code leads back to the coupon
// (CodeKey.CouponID, then Coupon), and the key is kept with the data, so
// that stores opened on one database, at once or one after the other,
// read every coupon with the same code.
//
// open opens a store on the test's database, which is empty at the first
// call, the same database every time within the test, and returns its
// ports with the function that closes it. The suite calls it from several
// goroutines at once.
func TestCouponCodes(t *testing.T, open func(ctx context.Context) (TaskStores, func() error, error)) {
	t.Helper()
	ctx := t.Context()

	// Two processes opening a new database at once agree on one key.
	var (
		stores [2]TaskStores
		closes [2]func() error
		errs   [2]error
		wg     sync.WaitGroup
	)
	for i := range stores {
		wg.Go(func() { stores[i], closes[i], errs[i] = open(ctx) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("open store %d: %v", i, err)
		}
		defer closes[i]()
	}
	a, b := stores[0], stores[1]
	if ka, kb := a.Coupons.CodeKey().Code(1, ""), b.Coupons.CodeKey().Code(1, ""); ka != kb {
		t.Fatalf("two stores opened at once on one database: coupon 1 has code %s in one, %s in the other", ka, kb)
	}

	// Coupons of a template with a prefix and of one without, issued by
	// one store.
	q := activeTemplate(t, a, "prefixed", 100, 2)
	none := newTemplate(t, 1, "unprefixed")
	none.CodePrefix, none.Status = "", quan.TemplateActive
	create(t, a.Templates, none)
	users := []int64{11, 12, 13, 14, 15}
	for _, tpl := range []*quan.Template{q, none} {
		task := runningTask(t, a, tpl, "codes of "+tpl.Name)
		c := chunk(task, 1)
		for i, u := range users {
			c.Rows = append(c.Rows, user(int64(i+2), u))
		}
		apply(t, a, c, issued(int64(len(users))))
	}
	prefix := map[int64]string{q.ID: q.CodePrefix, none.ID: ""}

	// read returns the code of every coupon of users, read by s, checking
	// each against s's key and its lookup by id.
	read := func(s TaskStores, which string) map[int64]string {
		t.Helper()
		key := s.Coupons.CodeKey()
		codes := map[int64]string{}
		seen := map[string]int64{}
		for _, u := range users {
			for _, c := range coupons(t, s, u, 0) {
				p := prefix[c.TemplateID]
				if want := key.Code(c.ID, p); c.Code != want {
					t.Errorf("%s: coupon %d has code %q, want %q, its key's of its id and prefix %q", which, c.ID, c.Code, want, p)
				}
				if _, err := quan.ParseCode(c.Code); err != nil {
					t.Errorf("%s: coupon %d: %v", which, c.ID, err)
				}
				if id, err := key.CouponID(c.Code, p); err != nil || id != c.ID {
					t.Errorf("%s: the code %s of coupon %d decodes to %d, %v", which, c.Code, c.ID, id, err)
				}
				if was, ok := seen[c.Code]; ok {
					t.Errorf("%s: coupons %d and %d have one code %s", which, was, c.ID, c.Code)
				}
				seen[c.Code] = c.ID
				codes[c.ID] = c.Code
				for _, shop := range []int64{1, quan.AnyShop} {
					got, err := s.Coupons.Coupon(ctx, shop, c.ID)
					if err != nil || got.ID != c.ID || got.Code != c.Code || got.UserID != u {
						t.Errorf("%s: Coupon(shop %d, %d) = %+v, %v; want it with code %s", which, shop, c.ID, got, err, c.Code)
					}
				}
				if _, err := s.Coupons.Coupon(ctx, 2, c.ID); !errors.Is(err, quan.ErrNotFound) {
					t.Errorf("%s: coupon %d of shop 1 as shop 2's: %v, want ErrNotFound", which, c.ID, err)
				}
			}
		}
		if len(codes) != 2*len(users) {
			t.Fatalf("%s: %d coupons read, want %d", which, len(codes), 2*len(users))
		}
		return codes
	}
	equal := func(got, want map[int64]string, which string) {
		t.Helper()
		for id, code := range want {
			if got[id] != code {
				t.Errorf("%s: coupon %d has code %s, was %s", which, id, got[id], code)
			}
		}
	}
	first := read(a, "the store that issued them")
	equal(read(a, "the same store again"), first, "read again")
	equal(read(b, "the other store opened at once"), first, "the other store")

	// A made-up code finds no coupon.
	if _, err := a.Coupons.Coupon(ctx, quan.AnyShop, 1<<40); !errors.Is(err, quan.ErrNotFound) {
		t.Errorf("Coupon of an id nobody holds: %v, want ErrNotFound", err)
	}

	for i, c := range closes {
		if err := c(); err != nil {
			t.Fatalf("close store %d: %v", i, err)
		}
	}
	c, closeC, err := open(ctx)
	if err != nil {
		t.Fatalf("open the database again: %v", err)
	}
	defer closeC()
	equal(read(c, "a store opened after the others closed"), first, "after reopening")
}
