package http_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/quanhq/quan"
)

// countingCodes counts the redeems that reach the code store.
type countingCodes struct {
	quan.CodeStore
	redeems atomic.Int64
}

func (c *countingCodes) RedeemCode(ctx context.Context, code string, user int64, now time.Time) (*quan.Coupon, error) {
	c.redeems.Add(1)
	return c.CodeStore.RedeemCode(ctx, code, user, now)
}

func TestCodeBatches(t *testing.T) {
	var counted *countingCodes
	ts := newServer(t, func(ts *testServer) {
		counted = &countingCodes{CodeStore: ts.store}
		ts.api.Codes.Codes = counted
	})
	m := ts.merchant(t, 1)
	tpl := ts.activeTemplate(t, m, 2, 1)

	ts.do(t, "POST", loc(tpl.ID)+"/code-batches", m, map[string]any{"count": 0}).want(t, http.StatusBadRequest, quan.EINVALID)
	r := ts.do(t, "POST", loc(tpl.ID)+"/code-batches", m, map[string]any{"count": 25})
	r.want(t, http.StatusAccepted, "")
	var b quan.CodeBatch
	r.decode(t, &b)
	if b.Status != quan.CodeBatchGenerating || b.Count != 25 || r.Header.Get("Location") != fmt.Sprintf("/api/v1/code-batches/%d", b.ID) {
		t.Fatalf("batch %+v at %q", b, r.Header.Get("Location"))
	}
	for deadline := time.Now().Add(10 * time.Second); b.Status != quan.CodeBatchReady; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("batch not ready: %+v", b)
		}
		ts.do(t, "GET", fmt.Sprintf("/api/v1/code-batches/%d", b.ID), m, nil).decode(t, &b)
	}
	if b.Generated != 25 {
		t.Fatalf("ready batch %+v", b)
	}
	ts.do(t, "GET", fmt.Sprintf("/api/v1/code-batches/%d", b.ID), ts.merchant(t, 2), nil).want(t, http.StatusNotFound, quan.ENOTFOUND)

	r = ts.do(t, "GET", fmt.Sprintf("/api/v1/code-batches/%d/codes.csv", b.ID), m, nil)
	r.want(t, http.StatusOK, "")
	rows, err := csv.NewReader(bytes.NewReader(r.Body)).ReadAll()
	if err != nil || len(rows) != 26 || rows[0][0] != "code" {
		t.Fatalf("csv export: %d rows, %v", len(rows), err)
	}
	codes := make([]string, 0, 25)
	for _, row := range rows[1:] {
		if _, err := quan.ParseCode(row[0]); err != nil {
			t.Fatalf("exported code %q: %v", row[0], err)
		}
		codes = append(codes, row[0])
	}
	r = ts.do(t, "GET", fmt.Sprintf("/api/v1/code-batches/%d/codes.xlsx", b.ID), m, nil)
	r.want(t, http.StatusOK, "")
	f, err := excelize.OpenReader(bytes.NewReader(r.Body))
	if err != nil {
		t.Fatal(err)
	}
	xrows, err := f.GetRows("Codes")
	f.Close()
	if err != nil || len(xrows) != 26 || xrows[1][0] != codes[0] {
		t.Fatalf("xlsx export: %d rows, %v", len(xrows), err)
	}

	u := ts.user(t, 7)
	redeem := func(token, code string) response {
		return ts.do(t, "POST", "/api/v1/codes/redeem", token, map[string]any{"code": code})
	}
	r = redeem(u, codes[0])
	r.want(t, http.StatusCreated, "")
	var c quan.Coupon
	r.decode(t, &c)
	if c.Source != quan.FromCode || c.UserID != 7 || c.TemplateID != tpl.ID {
		t.Fatalf("coupon of a code: %+v", c)
	}
	var again quan.Coupon
	redeem(u, codes[0]).decode(t, &again)
	if again.ID != c.ID {
		t.Fatalf("the same code again gave coupon %d, want %d", again.ID, c.ID)
	}
	redeem(ts.user(t, 8), codes[0]).want(t, http.StatusConflict, quan.ECODEUSED)
	redeem(u, codes[1]).want(t, http.StatusConflict, quan.ELIMIT)
	redeem(ts.user(t, 8), codes[1]).want(t, http.StatusCreated, "")
	redeem(ts.user(t, 9), codes[2]).want(t, http.StatusConflict, quan.ESOLDOUT)
	redeem(m, codes[3]).want(t, http.StatusForbidden, quan.EFORBIDDEN)

	// A mistyped code is refused before any lookup.
	before := counted.redeems.Load()
	typo := []byte(codes[3])
	typo[5] = map[bool]byte{true: '3', false: '2'}[typo[5] == '2']
	redeem(ts.user(t, 9), string(typo)).want(t, http.StatusBadRequest, quan.EINVALID)
	redeem(ts.user(t, 9), "not a code").want(t, http.StatusBadRequest, quan.EINVALID)
	if counted.redeems.Load() != before {
		t.Fatalf("a mistyped code reached the store")
	}
	// The redeemed codes show in the export.
	r = ts.do(t, "GET", fmt.Sprintf("/api/v1/code-batches/%d/codes.csv", b.ID), m, nil)
	rows, _ = csv.NewReader(bytes.NewReader(r.Body)).ReadAll()
	redeemed := 0
	for _, row := range rows[1:] {
		if row[2] != "" {
			redeemed++
		}
	}
	if redeemed != 2 {
		t.Fatalf("%d codes exported as redeemed, want 2", redeemed)
	}
}

// TestCodeBatchResumes: a batch a stopped process left half made is
// finished by the next.
func TestCodeBatchResumes(t *testing.T) {
	ts := newTestServer(t)
	m := ts.merchant(t, 1)
	tpl := ts.activeTemplate(t, m, 100, 1)
	b := &quan.CodeBatch{TemplateID: tpl.ID, ShopNo: 1, Count: 30, Status: quan.CodeBatchGenerating, CreatedBy: "merchant:1", CreatedAt: testNow, UpdatedAt: testNow}
	if err := ts.store.CreateCodeBatch(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	codes, _ := quan.NewCodes(10, "")
	if _, err := ts.store.AddCodes(t.Context(), b.ID, codes, testNow); err != nil {
		t.Fatal(err)
	}
	if err := ts.api.Codes.Resume(t.Context()); err != nil {
		t.Fatal(err)
	}
	ts.api.Codes.Wait()
	var got quan.CodeBatch
	ts.do(t, "GET", fmt.Sprintf("/api/v1/code-batches/%d", b.ID), m, nil).decode(t, &got)
	if got.Status != quan.CodeBatchReady || got.Generated != 30 {
		t.Fatalf("resumed batch %+v, want ready with 30", got)
	}
}

func TestTemplateCodePrefix(t *testing.T) {
	ts := newTestServer(t)
	m := ts.merchant(t, 1)
	for _, bad := range []string{"ABC", "O1"} {
		body := validTemplate()
		body["codePrefix"] = bad
		r := ts.do(t, "POST", "/api/v1/templates", m, body)
		r.want(t, http.StatusBadRequest, quan.EINVALID)
		if !r.hasField("codePrefix") {
			t.Errorf("codePrefix %q: problem %+v does not name the field", bad, r.Problem)
		}
	}
	body := validTemplate()
	body["codePrefix"] = "Q7"
	tpl := ts.create(t, m, body)
	if tpl.CodePrefix != "Q7" {
		t.Fatalf("template %+v", tpl)
	}
	ts.do(t, "POST", loc(tpl.ID)+"/activate", m, nil).want(t, http.StatusOK, "")
	ts.distribute(t, m, tpl.ID, "users.csv", []byte("userId\n7\n"), nil)
	var page struct{ Items []quan.Coupon }
	ts.do(t, "GET", "/api/v1/me/coupons", ts.user(t, 7), nil).decode(t, &page)
	if len(page.Items) != 1 || len(page.Items[0].Code) != quan.CodeLength+2 || page.Items[0].Code[:2] != "Q7" {
		t.Fatalf("coupon %+v, want a code with the template's prefix", page.Items)
	}
	if _, err := quan.ParseCode(page.Items[0].Code); err != nil {
		t.Fatal(err)
	}
}

// TestCodesWithoutExport: a server given no CodesExport serves the csv
// export of a batch, and no xlsx.
func TestCodesWithoutExport(t *testing.T) {
	ts := newServer(t, func(ts *testServer) { ts.api.CodesExport = nil })
	m := ts.merchant(t, 1)
	tpl := ts.activeTemplate(t, m, 100, 1)
	b := &quan.CodeBatch{TemplateID: tpl.ID, ShopNo: 1, Count: 2, Status: quan.CodeBatchGenerating, CreatedBy: "merchant:1", CreatedAt: testNow, UpdatedAt: testNow}
	if err := ts.store.CreateCodeBatch(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	codes, _ := quan.NewCodes(2, "")
	if _, err := ts.store.AddCodes(t.Context(), b.ID, codes, testNow); err != nil {
		t.Fatal(err)
	}
	ts.do(t, "GET", fmt.Sprintf("/api/v1/code-batches/%d/codes.csv", b.ID), m, nil).want(t, http.StatusOK, "")
	ts.do(t, "GET", fmt.Sprintf("/api/v1/code-batches/%d/codes.xlsx", b.ID), m, nil).want(t, http.StatusNotFound, quan.ENOTFOUND)
}

// TestRedeemCodePeriodLimits: a code redeemed over the template's daily
// limit answers 409 daily_limit_reached and stays unused; the next day it
// is redeemed.
func TestRedeemCodePeriodLimits(t *testing.T) {
	ts := newTestServer(t)
	m := ts.merchant(t, 1)
	body := validTemplate()
	body["stock"], body["perUserLimit"], body["perUserDaily"] = 10, 5, 1
	tpl := ts.create(t, m, body)
	ts.do(t, "POST", loc(tpl.ID)+"/activate", m, nil).want(t, http.StatusOK, "")
	codes := ts.storedCodes(t, tpl.ID, 2)
	redeem := func(code string) response {
		return ts.do(t, "POST", "/api/v1/codes/redeem", ts.user(t, 7), map[string]any{"code": code})
	}
	redeem(codes[0]).want(t, http.StatusCreated, "")
	redeem(codes[1]).want(t, http.StatusConflict, quan.EDAILYLIMIT)
	ts.setNow(ts.clock().Add(24 * time.Hour))
	redeem(codes[1]).want(t, http.StatusCreated, "")
}

// storedCodes stores a batch of n codes of tpl straight in the store, ready
// to redeem, and returns them.
func (ts *testServer) storedCodes(t *testing.T, tpl int64, n int) []string {
	t.Helper()
	b := &quan.CodeBatch{TemplateID: tpl, ShopNo: 1, Count: int64(n), Status: quan.CodeBatchGenerating, CreatedBy: "merchant:1", CreatedAt: testNow, UpdatedAt: testNow}
	if err := ts.store.CreateCodeBatch(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	codes, err := quan.NewCodes(n, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.store.AddCodes(t.Context(), b.ID, codes, testNow); err != nil {
		t.Fatal(err)
	}
	return codes
}
