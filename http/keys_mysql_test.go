package http_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/apikeys"
	qhttp "github.com/quanhq/quan/http"
	"github.com/quanhq/quan/mysql"
	"github.com/quanhq/quan/mysql/mysqltest"
	"github.com/quanhq/quan/templates"
	"github.com/quanhq/quan/wallet"
)

// TestRevokedKeyReachesAnotherProcess: two servers on one MariaDB, each
// with its own key cache, as two processes are. A key revoked through
// one is refused by it at once; the other trusts what it checked until
// its cache period is over, then refuses it too. The clock moves;
// nothing sleeps.
func TestRevokedKeyReachesAnotherProcess(t *testing.T) {
	dsn := mysqltest.DSN(t) // skips without QUAN_TEST_MYSQL
	var (
		mu  sync.Mutex
		now = testNow
	)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	tokens, err := qhttp.NewTokens(testSecret, clock)
	if err != nil {
		t.Fatal(err)
	}
	serve := func() *httptest.Server {
		db, err := mysql.Open(context.Background(), dsn, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		st := mysql.NewStore(db)
		api := &qhttp.Server{
			Templates: &templates.Service{Store: st, Now: clock},
			Wallet:    &wallet.Service{Coupons: st, Templates: st, Now: clock, Refunds: st},
			Keys:      &apikeys.Service{Keys: st, Secrets: st, Now: clock},
			Tokens:    tokens,
			Now:       clock,
		}
		srv := httptest.NewServer(api.Handler())
		t.Cleanup(srv.Close)
		return srv
	}
	one, two := &testServer{Server: serve(), tokens: tokens}, &testServer{Server: serve(), tokens: tokens}
	admin := one.token(t, quan.Identity{Role: quan.RoleAdmin, Subject: "ops"})
	var made struct {
		ID  int64  `json:"id"`
		Key string `json:"key"`
	}
	one.do(t, "POST", "/api/v1/api-keys", admin, map[string]any{"name": "orders", "scopes": []string{"settlement"}}).decode(t, &made)
	release := func(ts *testServer) response {
		return ts.do(t, "POST", "/api/v1/orders/R1/release", made.Key, map[string]any{"userId": 7})
	}
	release(two).want(t, http.StatusOK, "") // two checks the key, and trusts it for a while

	one.do(t, "POST", fmt.Sprintf("/api/v1/api-keys/%d/revoke", made.ID), admin, nil).want(t, http.StatusOK, "")
	release(one).want(t, http.StatusUnauthorized, quan.EUNAUTHORIZED)

	mu.Lock()
	now = now.Add(apikeys.DefaultCacheFor - time.Millisecond)
	mu.Unlock()
	release(two).want(t, http.StatusOK, "") // within its cache period
	mu.Lock()
	now = now.Add(time.Millisecond)
	mu.Unlock()
	release(two).want(t, http.StatusUnauthorized, quan.EUNAUTHORIZED)
}
