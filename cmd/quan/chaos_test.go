package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/cmd/quan/internal/app"
	qhttp "github.com/quanhq/quan/http"
)

// The flash sale of the chaos test: more users than coupons, each
// claiming once, from a few dozen clients at a time, while the process
// serving them is killed with SIGKILL chaosKills times.
const (
	chaosStock   = 1500
	chaosUsers   = 2000
	chaosClients = 48
	chaosKills   = 3
	// chaosRequestBound bounds how long one user's claim is retried, the
	// restarts included.
	chaosRequestBound = 60 * time.Second
	// chaosSettleBound bounds the wait, after the sale, for every
	// invariant to hold.
	chaosSettleBound = 60 * time.Second
)

// TestClaimChaos runs a flash sale on one `quan serve` process, kills it
// with SIGKILL three times at random moments of the sale and restarts it
// on the same data and backends, each time on a new port, which the
// clients follow. A client whose request gets no response (the process
// died) retries the same request with the same Idempotency-Key, as it
// does a 503. Once the sale is over and the system has settled, every
// claim answered 202 is issued, every retry found its claim (never a 409
// limit_reached or conflict), the coupons issued are the stock (demand
// exceeds it: nothing is stranded), the cache agrees with the store on the
// stock, nobody holds more than the limit and nothing is oversold.
//
// It logs the figures of a run: the stock stranded (left in the store
// while users were refused sold_out), the lost 202s found (retries that
// got the first answer replayed) and the time from the end of the sale
// until the claims, the store and the cache met their invariants. A
// variant whose invariants never hold waits chaosSettleBound for them.
// The embedded variant runs on SQLite, the in-process cache and the
// embedded NATS server; the production one on MySQL, Redis and NATS, and
// skips without QUAN_TEST_MYSQL and QUAN_TEST_REDIS.
func TestClaimChaos(t *testing.T) {
	t.Run("embedded", func(t *testing.T) {
		testClaimChaos(t, testEnv(t))
	})
	t.Run("production", func(t *testing.T) {
		env, _ := productionEnv(t) // skips without MySQL and Redis
		testClaimChaos(t, env)
	})
}

// chaosClaim is what became of one user's claim during the sale.
type chaosClaim struct {
	user       int64
	token, key string

	attempts   int // HTTP requests made
	noResponse int // of them, failed at the connection level
	retried503 int // of them, answered 503

	status   int    // the final answer's status; 0 if none came
	code     string // the problem's code of a refusal
	claimID  string // of a 202 (or a 200 replayed)
	replayed bool   // the final answer was a replay of an earlier response
	gaveUp   string // why no final answer came within chaosRequestBound

	// After the sale: the claim as last read (for a claimID).
	decided *quan.Claim
	lastGet string // the last poll's outcome while undecided
}

// retried reports whether a request of the claim went unanswered before
// the final answer.
func (c *chaosClaim) retried() bool { return c.noResponse > 0 }

func testClaimChaos(t *testing.T, env map[string]string) {
	bin := buildQuan(t)
	tpl := localTemplate(t, env, chaosStock, 1)
	seed := uint64(time.Now().UnixNano())
	r := rand.New(rand.NewPCG(seed, 15))
	t.Logf("seed %d; store %s, cache %q, bus %q", seed, storeOf(env), env["QUAN_CACHE"], env["QUAN_BUS"])

	secret, err := app.LoadSecret(env["QUAN_DATA"], "")
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := qhttp.NewTokens(secret, nil)
	if err != nil {
		t.Fatal(err)
	}
	run := fmt.Sprintf("%x", r.Uint32())
	claims := make([]*chaosClaim, chaosUsers)
	for i := range claims {
		user := int64(i + 1)
		tok, err := tokens.Mint(quan.Identity{Role: quan.RoleUser, UserID: user}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		claims[i] = &chaosClaim{user: user, token: tok, key: fmt.Sprintf("chaos-%s-user-%d", run, user)}
	}

	p := startProc(t, bin, env)
	defer func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		p.cmd.Wait()
	}()
	var base atomic.Pointer[string]
	base.Store(&p.url)
	client := &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: chaosClients, MaxConnsPerHost: 2 * chaosClients},
	}
	defer client.CloseIdleConnections()
	claimPath := fmt.Sprintf("/api/v1/templates/%d/claim", tpl.ID)

	// The sale: chaosClients goroutines take the users in turn.
	var finished atomic.Int64
	queue := make(chan *chaosClaim)
	var wg sync.WaitGroup
	saleStart := time.Now()
	for range chaosClients {
		wg.Go(func() {
			for c := range queue {
				c.claim(client, &base, claimPath)
				finished.Add(1)
			}
		})
	}
	go func() {
		for _, c := range claims {
			queue <- c
		}
		close(queue)
	}()
	saleOver := make(chan struct{})
	go func() {
		wg.Wait()
		close(saleOver)
	}()

	// The kills: each once a random share of the users, between 5% and
	// 70% (before the stock runs out), have their answer, then a random
	// few milliseconds later, with the clients' requests in flight.
	var marks []int64
	for len(marks) < chaosKills {
		m := int64(chaosUsers/20 + r.IntN(chaosUsers*7/10-chaosUsers/20))
		if !slices.ContainsFunc(marks, func(o int64) bool { return max(o, m)-min(o, m) < chaosUsers/20 }) {
			marks = append(marks, m)
		}
	}
	slices.Sort(marks)
	kills := 0
	for _, mark := range marks {
		for finished.Load() < mark {
			select {
			case <-saleOver:
				t.Fatalf("the sale ended after %d of %d kills: make it longer", kills, chaosKills)
			case <-time.After(time.Millisecond):
			}
		}
		time.Sleep(time.Duration(r.IntN(20)) * time.Millisecond)
		at := finished.Load()
		p.kill()
		kills++
		down := time.Now()
		p = startProc(t, bin, env)
		base.Store(&p.url)
		t.Logf("kill %d: with %d of %d users answered; serving again after %v", kills, at, chaosUsers, time.Since(down).Round(time.Millisecond))
	}
	<-saleOver
	saleEnd := time.Now()
	sale := summarize(claims)
	t.Logf("sale: %v for %d users on %d clients, %d kills; %d requests, %d without a response, %d answered 503; "+
		"answers: %d accepted (%d of them replayed), %v",
		saleEnd.Sub(saleStart).Round(time.Millisecond), chaosUsers, chaosClients, kills, sale.requests, sale.noResponse, sale.retried503,
		sale.accepted, sale.replayed, sale.refusals)

	// Settle: poll until every invariant holds, or the bound runs out.
	st := openChaosStore(t, env)
	ctx := context.Background()
	var state chaosState
	repaired := time.Duration(-1)
	for deadline := saleEnd.Add(chaosSettleBound); ; time.Sleep(200 * time.Millisecond) {
		pollClaims(client, *base.Load(), claims)
		state = st.read(ctx, t, tpl.ID)
		if state.holds(claims) {
			repaired = time.Since(saleEnd)
			break
		}
		if time.Now().After(deadline) {
			break
		}
	}

	// The figures for the closing note.
	var lostFound, retriedFresh int
	for _, c := range claims {
		if c.retried() && c.claimID != "" {
			if c.replayed {
				lostFound++
			} else {
				retriedFresh++
			}
		}
	}
	stranded := int64(0)
	if sale.refusals[quan.ESOLDOUT] > 0 {
		stranded = state.stock
	}
	settled := "did not hold within " + chaosSettleBound.String()
	if repaired >= 0 {
		settled = "held " + repaired.Round(time.Millisecond).String() + " after the sale"
	}
	t.Logf("after the sale: the claims, store and cache invariants %s; stranded stock %d (the store's stock left while %d users were refused sold_out); "+
		"lost 202s found %d (retries replayed the first answer), retries accepted afresh %d; "+
		"store: stock %d of %d, %d coupons to %d users, at most %d a user; cache stock %s",
		settled, stranded, sale.refusals[quan.ESOLDOUT], lostFound, retriedFresh,
		state.stock, state.total, state.stats.Coupons, state.stats.Users, state.stats.MaxPerUser, state.cacheStock())

	// Report every violation, by invariant.
	var notIssued, retryRefused, unanswered []*chaosClaim
	for _, c := range claims {
		switch {
		case c.claimID != "" && (c.decided == nil || c.decided.Status != quan.ClaimIssued):
			notIssued = append(notIssued, c)
		case c.claimID == "" && c.code != quan.ESOLDOUT && c.retried():
			retryRefused = append(retryRefused, c)
		case c.claimID == "" && c.code != quan.ESOLDOUT:
			unanswered = append(unanswered, c)
		}
	}
	url := *base.Load()
	reportChaos(t, client, url, "claims answered 202 that did not end issued", notIssued)
	reportChaos(t, client, url, "retried claims that did not get their claim (409 limit_reached/conflict or another refusal)", retryRefused)
	reportChaos(t, client, url, "claims answered neither 202 nor sold_out", unanswered)
	if state.stats.Coupons != chaosStock || state.stock != 0 {
		t.Errorf("%d coupons issued of a stock of %d, %d left in the store with %d users refused sold_out: demand exceeded the stock, so it is stranded",
			state.stats.Coupons, chaosStock, state.stock, sale.refusals[quan.ESOLDOUT])
	}
	if state.stats.MaxPerUser > 1 {
		t.Errorf("a user holds %d coupons, over the limit of 1", state.stats.MaxPerUser)
	}
	if state.stats.Coupons > chaosStock || state.stock < 0 {
		t.Errorf("oversold: %d coupons issued of a stock of %d, %d left", state.stats.Coupons, chaosStock, state.stock)
	}
	if state.total-state.stock != state.stats.Coupons {
		t.Errorf("the store's stock fell from %d to %d, but it holds %d coupons", state.total, state.stock, state.stats.Coupons)
	}
	if state.err != nil {
		t.Error(state.err)
	}
	if state.cache != nil && *state.cache != state.stock {
		t.Errorf("the cache holds a stock of %d, the store %d", *state.cache, state.stock)
	}
	if st.cache == nil {
		// The embedded cache is the serving process's memory, which no
		// API reads: a fresh user's claim asks it whether stock is left.
		// It may take the last coupon, so it comes after every other
		// check.
		probeEmbeddedCache(t, client, url, claimPath, tokens, state.stock)
	}
}

// claim makes c's claim until it gets an answer other than 503, retrying
// with the same Idempotency-Key against whatever process serves now.
func (c *chaosClaim) claim(client *http.Client, base *atomic.Pointer[string], path string) {
	backoff := 10 * time.Millisecond
	deadline := time.Now().Add(chaosRequestBound)
	for {
		c.attempts++
		status, body, replayed, err := c.post(client, *base.Load()+path)
		switch {
		case err != nil:
			c.noResponse++
		case status == http.StatusServiceUnavailable:
			c.retried503++
		default:
			c.status, c.replayed = status, replayed
			if status == http.StatusAccepted || status == http.StatusOK {
				var cl quan.Claim
				if err := json.Unmarshal(body, &cl); err != nil || cl.ID == "" {
					c.code = fmt.Sprintf("a %d without a claim: %s", status, body)
					return
				}
				c.claimID = cl.ID
				return
			}
			var p qhttp.Problem
			if json.Unmarshal(body, &p) != nil || p.Code == "" {
				p.Code = fmt.Sprintf("%d %s", status, body)
			}
			c.code = p.Code
			return
		}
		if time.Now().After(deadline) {
			c.gaveUp = fmt.Sprintf("no answer after %d requests in %v (%d without a response, %d answered 503; last: %v)",
				c.attempts, chaosRequestBound, c.noResponse, c.retried503, err)
			return
		}
		time.Sleep(backoff + rand.N(backoff))
		backoff = min(2*backoff, 300*time.Millisecond)
	}
}

func (c *chaosClaim) post(client *http.Client, url string) (status int, body []byte, replayed bool, err error) {
	req, err := http.NewRequest("POST", url, nil)
	if err != nil {
		return 0, nil, false, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Idempotency-Key", c.key)
	res, err := client.Do(req)
	if err != nil {
		return 0, nil, false, err
	}
	defer res.Body.Close()
	body, err = io.ReadAll(res.Body)
	if err != nil {
		return 0, nil, false, err // the process died mid-answer
	}
	return res.StatusCode, body, res.Header.Get("Idempotent-Replayed") == "true", nil
}

func (c *chaosClaim) describe() string {
	if c.gaveUp != "" {
		return fmt.Sprintf("user %d: %s", c.user, c.gaveUp)
	}
	s := fmt.Sprintf("user %d: %d requests (%d without a response, %d answered 503), answered ", c.user, c.attempts, c.noResponse, c.retried503)
	switch {
	case c.claimID != "":
		s += fmt.Sprintf("%d with claim %s", c.status, c.claimID)
		if c.replayed {
			s += " (replayed)"
		}
		switch {
		case c.decided != nil:
			s += fmt.Sprintf(", which ended %s", c.decided.Status)
			if c.decided.Reason != "" {
				s += " (" + c.decided.Reason + ")"
			}
		default:
			s += ", which never was decided (last poll: " + c.lastGet + ")"
		}
	default:
		s += fmt.Sprintf("%d %s", c.status, c.code)
	}
	return s
}

// outcome is what became of c in a few words, to count claims by.
func (c *chaosClaim) outcome() string {
	switch {
	case c.gaveUp != "":
		return "no answer"
	case c.claimID == "":
		return fmt.Sprintf("%d %s", c.status, c.code)
	case c.decided == nil:
		return "202, never decided"
	case c.decided.Reason != "":
		return fmt.Sprintf("202, %s %s", c.decided.Status, c.decided.Reason)
	}
	return "202, " + string(c.decided.Status)
}

// saleSummary counts the answers of a sale.
type saleSummary struct {
	requests, noResponse, retried503 int
	accepted, replayed               int
	refusals                         map[string]int
}

func summarize(claims []*chaosClaim) saleSummary {
	s := saleSummary{refusals: map[string]int{}}
	for _, c := range claims {
		s.requests += c.attempts
		s.noResponse += c.noResponse
		s.retried503 += c.retried503
		switch {
		case c.claimID != "":
			s.accepted++
			if c.replayed {
				s.replayed++
			}
		case c.gaveUp != "":
			s.refusals["no answer"]++
		default:
			s.refusals[c.code]++
		}
	}
	return s
}

// pollClaims reads every accepted claim not yet decided, from a few
// goroutines.
func pollClaims(client *http.Client, base string, claims []*chaosClaim) {
	todo := make(chan *chaosClaim)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for c := range todo {
				c.poll(client, base)
			}
		})
	}
	for _, c := range claims {
		if c.claimID != "" && (c.decided == nil || c.decided.Status == quan.ClaimPending) {
			todo <- c
		}
	}
	close(todo)
	wg.Wait()
}

func (c *chaosClaim) poll(client *http.Client, base string) {
	req, err := http.NewRequest("GET", base+"/api/v1/claims/"+c.claimID, nil)
	if err != nil {
		c.lastGet = err.Error()
		return
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	res, err := client.Do(req)
	if err != nil {
		c.lastGet = err.Error()
		return
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		c.lastGet = err.Error()
		return
	}
	if res.StatusCode != http.StatusOK {
		c.lastGet = fmt.Sprintf("%d %s", res.StatusCode, strings.TrimSpace(string(body)))
		return
	}
	var cl quan.Claim
	if err := json.Unmarshal(body, &cl); err != nil {
		c.lastGet = fmt.Sprintf("200 %s: %v", body, err)
		return
	}
	if cl.Status == quan.ClaimPending {
		c.lastGet = "pending"
		return
	}
	c.decided = &cl
}

// reportChaos fails the test with the violations of one invariant: how
// many, how many of their users hold a coupon nonetheless (of a claim they
// were not told of: one made by a request whose answer was lost, say),
// and each of the first 25.
func reportChaos(t *testing.T, client *http.Client, base, what string, bad []*chaosClaim) {
	t.Helper()
	if len(bad) == 0 {
		return
	}
	holding := 0
	for _, c := range bad {
		if c.holds(client, base) {
			holding++
		}
	}
	tally := map[string]int{}
	for _, c := range bad {
		tally[c.outcome()]++
	}
	outcomes := slices.Collect(maps.Keys(tally))
	slices.SortFunc(outcomes, func(a, b string) int { return cmp.Or(tally[b]-tally[a], strings.Compare(a, b)) })
	const shown = 25
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s; %d of these users hold a coupon nonetheless; by outcome:", len(bad), what, holding)
	for _, o := range outcomes {
		fmt.Fprintf(&b, " %s %d;", o, tally[o])
	}
	for _, c := range bad[:min(len(bad), shown)] {
		b.WriteString("\n\t" + c.describe())
	}
	if len(bad) > shown {
		fmt.Fprintf(&b, "\n\t… and %d more", len(bad)-shown)
	}
	t.Error(b.String())
}

// holds reports whether c's user holds a coupon, as the API says.
func (c *chaosClaim) holds(client *http.Client, base string) bool {
	req, err := http.NewRequest("GET", base+"/api/v1/me/coupons", nil)
	if err != nil {
		return false
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	res, err := client.Do(req)
	if err != nil {
		return false
	}
	defer res.Body.Close()
	var page struct{ Total int }
	if res.StatusCode != http.StatusOK || json.NewDecoder(res.Body).Decode(&page) != nil {
		return false
	}
	return page.Total > 0
}

// chaosStore reads the store and, on Redis, the cache, as a process of
// its own beside the one serving.
type chaosStore struct {
	b     *app.Backends
	cache quan.Cache // nil when the cache is the serving process's memory
}

func storeOf(env map[string]string) string {
	if s := env["QUAN_STORE"]; s != "" {
		s, _, _ = strings.Cut(s, "://")
		return s
	}
	return "sqlite"
}

func openChaosStore(t *testing.T, env map[string]string) *chaosStore {
	t.Helper()
	cfg := app.Config{DataDir: env["QUAN_DATA"], StoreURL: env["QUAN_STORE"], LogLevel: "warn"}
	redis := strings.HasPrefix(env["QUAN_CACHE"], "redis")
	if redis {
		cfg.CacheURL = env["QUAN_CACHE"]
	}
	b, err := app.OpenBackends(context.Background(), cfg, app.Local, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	s := &chaosStore{b: b}
	if redis {
		s.cache = b.Cache
	}
	return s
}

// chaosState is what the store (and a Redis cache) hold of the template.
type chaosState struct {
	stock, total int64
	stats        quan.CouponStats
	cache        *int64 // nil: not readable from here
	err          error
}

func (s *chaosStore) read(ctx context.Context, t *testing.T, template int64) chaosState {
	t.Helper()
	tpl, err := s.b.Store.Template(ctx, quan.AnyShop, template)
	if err != nil {
		t.Fatalf("read template %d: %v", template, err)
	}
	stats, err := s.b.Store.CouponStats(ctx, template, 0)
	if err != nil {
		t.Fatalf("coupon stats of template %d: %v", template, err)
	}
	st := chaosState{stock: tpl.Stock, total: tpl.TotalStock, stats: stats}
	if s.cache != nil {
		cs, err := s.cache.State(ctx, template)
		if err != nil {
			st.err = fmt.Errorf("cache state of template %d: %w", template, err)
		} else {
			st.cache = &cs.Stock
		}
	}
	return st
}

// holds reports whether every invariant the test checks holds now.
func (s chaosState) holds(claims []*chaosClaim) bool {
	for _, c := range claims {
		if c.claimID != "" && (c.decided == nil || c.decided.Status != quan.ClaimIssued) {
			return false
		}
	}
	cacheAgrees := s.cache == nil || *s.cache == s.stock
	return s.err == nil && cacheAgrees && s.stock == 0 && s.stats.Coupons == chaosStock && s.stats.MaxPerUser <= 1
}

func (s chaosState) cacheStock() string {
	switch {
	case s.err != nil:
		return s.err.Error()
	case s.cache == nil:
		return "(in the serving process: probed by a claim)"
	}
	return fmt.Sprint(*s.cache)
}

// probeEmbeddedCache asks the serving process's cache, by a claim of a
// user who has not claimed, whether stock is left, and fails unless it
// agrees with the store: sold_out with none left, accepted with some.
func probeEmbeddedCache(t *testing.T, client *http.Client, base, path string, tokens *qhttp.Tokens, storeStock int64) {
	t.Helper()
	tok, err := tokens.Mint(quan.Identity{Role: quan.RoleUser, UserID: chaosUsers + 1}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	probe := &chaosClaim{user: chaosUsers + 1, token: tok, key: "chaos-probe"}
	status, body, _, err := probe.post(client, base+path)
	if err != nil {
		t.Errorf("probe the cache: %v", err)
		return
	}
	var p qhttp.Problem
	json.Unmarshal(body, &p)
	switch {
	case storeStock == 0 && status == http.StatusConflict && p.Code == quan.ESOLDOUT:
	case storeStock == 0:
		t.Errorf("the store has no stock left, but the cache answered a fresh claim %d %s", status, strings.TrimSpace(string(body)))
	case status == http.StatusConflict && p.Code == quan.ESOLDOUT:
		t.Errorf("the store has %d left, but the cache answered a fresh claim sold_out: the stock is stranded in the cache", storeStock)
	case status != http.StatusAccepted:
		t.Errorf("the store has %d left; a fresh claim was answered %d %s", storeStock, status, strings.TrimSpace(string(body)))
	}
}
