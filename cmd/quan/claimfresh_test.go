package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/quanhq/quan/internal/integration"
	"github.com/quanhq/quan/mysql/mysqltest"
)

// TestClaimRightAfterCreate: a template created and activated is claimed
// at once: 20 of 20 claims made right after each activation are
// accepted, never a 404 of a template the claims have not heard of, nor
// the 404 a claim under the same Idempotency-Key got just before the
// template was created (a refusal before the claim ran is not kept). On
// the embedded default through one server; on MySQL, Redis and NATS with
// the template created through one `quan serve` and claimed through
// another, with Redis as the cache both share and with none (each
// server's claims reserve in its own memory, and learn of the template
// from the store alone).
func TestClaimRightAfterCreate(t *testing.T) {
	t.Run("Embedded", func(t *testing.T) {
		env := testEnv(t)
		srv := startServe(t, env)
		testClaimRightAfterCreate(t, env, srv.URL(), srv.URL())
	})
	t.Run("Production", func(t *testing.T) {
		env := sharedBackendsEnv(t)
		one, other := startServe(t, env), startServe(t, env)
		testClaimRightAfterCreate(t, env, one.URL(), other.URL())
	})
	t.Run("ProductionWithoutCache", func(t *testing.T) {
		// Each server reserves in a cache of its own, which the other's
		// activation does not reach: the store alone says the template
		// exists.
		env := sharedBackendsEnv(t)
		env["QUAN_CACHE"] = "none"
		one, other := startServe(t, env), startServe(t, env)
		testClaimRightAfterCreate(t, env, one.URL(), other.URL())
	})
}

func testClaimRightAfterCreate(t *testing.T, env map[string]string, create, claim string) {
	merchant := strings.TrimSpace(runQuan(t, env, "token --role merchant --shop 1"))
	user := strings.TrimSpace(runQuan(t, env, "token --role user --user 7"))
	claimURL := func(id int64) string { return fmt.Sprintf("%s/api/v1/templates/%d/claim", claim, id) }
	now := time.Now()
	accepted, next := 0, int64(0)
	for i := range 20 {
		// The claim comes first, under its key, for the id the template
		// is about to get: 404, not kept under the key.
		key := fmt.Sprintf("fresh-%d", i)
		if next > 0 {
			if res, body := apiDo(t, "POST", claimURL(next), user, key, nil); res.StatusCode != http.StatusNotFound {
				t.Fatalf("claim of template %d before it exists: %s %s", next, res.Status, body)
			}
		}
		var tpl struct{ ID int64 }
		res, body := apiDo(t, "POST", create+"/api/v1/templates", merchant, "", map[string]any{
			"name": fmt.Sprintf("fresh %d", i), "kind": "direct", "rule": map[string]any{"amount": 100},
			"source": "shop", "scope": map[string]any{"type": "all"},
			"issueStart": now.Add(-time.Hour).Format(time.RFC3339), "issueEnd": now.Add(24 * time.Hour).Format(time.RFC3339),
			"validity": map[string]any{"type": "relative", "hours": 72}, "perUserLimit": 1, "stock": 10,
		})
		if res.StatusCode != http.StatusCreated {
			t.Fatalf("create: %s %s", res.Status, body)
		}
		json.Unmarshal(body, &tpl)
		if next > 0 && tpl.ID != next {
			t.Fatalf("template %d created, not %d as the ids before it said", tpl.ID, next)
		}
		next = tpl.ID + 1
		if res, body := apiDo(t, "POST", fmt.Sprintf("%s/api/v1/templates/%d/activate", create, tpl.ID), merchant, "", nil); res.StatusCode != http.StatusOK {
			t.Fatalf("activate: %s %s", res.Status, body)
		}
		res, body = apiDo(t, "POST", claimURL(tpl.ID), user, key, nil)
		switch {
		case res.StatusCode != http.StatusAccepted:
			t.Errorf("claim of template %d right after its activation: %s %s", tpl.ID, res.Status, body)
		case res.Header.Get("Idempotent-Replayed") != "":
			t.Errorf("claim of template %d right after its activation replayed %s", tpl.ID, body)
		default:
			accepted++
		}
	}
	if accepted != 20 {
		t.Fatalf("%d of 20 claims accepted, want 20", accepted)
	}
}

// apiDo sends a request with token and, if set, an Idempotency-Key and
// a JSON body, and returns the response with its body read.
func apiDo(t *testing.T, method, url, token, key string, body any) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, b
}

// sharedBackendsEnv is a QUAN_* environment on the shared services the
// QUAN_TEST_* variables name: a fresh MySQL database, a Redis key prefix
// and a NATS stream and namespace of the test's own, removed when it
// ends. It skips when one of the variables is unset; a service that is
// set and down fails the test.
func sharedBackendsEnv(t *testing.T) map[string]string {
	t.Helper()
	env := testEnv(t)
	env["QUAN_STORE"] = mysqltest.URL(t)
	urls := integration.Need(t, integration.Redis, integration.NATS)
	redisURL, natsURL := urls[0], urls[1]
	id := rand.Uint32()
	prefix := fmt.Sprintf("quantest%d:", id)
	env["QUAN_CACHE"] = redisURL + "?prefix=" + prefix
	t.Cleanup(func() { deleteRedisKeys(t, redisURL, prefix) })
	stream, ns := fmt.Sprintf("QUANTEST%d", id), fmt.Sprintf("quantest%d", id)
	env["QUAN_BUS"] = fmt.Sprintf("%s?stream=%s&namespace=%s", natsURL, stream, ns)
	t.Cleanup(func() { dropStreams(t, natsURL, stream, ns) })
	return env
}
