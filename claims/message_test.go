package claims

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// TestDecodeClaimMessages: the consumer reads batches, and refuses
// anything else with an invalid error that names the problem.
func TestDecodeClaimMessages(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 6000, time.UTC)
	c := &quan.Claim{ID: quan.NewClaimID(7, 42), TemplateID: 7, UserID: 42, Status: quan.ClaimPending, At: at}
	batch := func(cs ...*quan.Claim) []byte {
		t.Helper()
		b, err := quan.EncodeClaims(cs)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name, data string
		claims     int
		err        string // in the error; "" if none
	}{
		{"Batch", string(batch(c, c, c)), 3, ""},
		{"ErrJSON", `{"id":"` + c.ID + `","templateId":7,"userId":42,"status":"pending","at":"2030-01-02T03:04:05.000006Z"}`, 0, "is not a batch of claims"},
		{"ErrNotABatch", "hello", 0, "is not a batch of claims"},
		{"ErrEmpty", "", 0, "is not a batch of claims"},
		{"ErrCutBatch", string(batch(c)[:20]), 0, "exceeds the message"},
		{"ErrNoClaims", string(batch()), 0, "holds no claims"},
		{"ErrBatchWithoutUser", string(batch(&quan.Claim{ID: "c7-1-x", TemplateID: 7, Status: quan.ClaimPending})), 0, "claim 1 of 1 lacks its id, template or user"},
		{"ErrBatchWithoutID", string(batch(c, &quan.Claim{TemplateID: 7, UserID: 1, Status: quan.ClaimPending})), 0, "claim 2 of 2 lacks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := decodeClaims(quan.Message{ID: "m-1", Data: []byte(tc.data)})
			if tc.err == "" {
				if err != nil || len(cs) != tc.claims || *cs[0] != *c {
					t.Fatalf("decoded %d claims (%v), want %d like %+v", len(cs), err, tc.claims, c)
				}
				return
			}
			if !errors.Is(err, quan.ErrInvalid) || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "m-1") {
				t.Fatalf("error %v, want invalid naming message m-1 and saying %q", err, tc.err)
			}
		})
	}
}

// TestUndecidedClaims: claims recorded before get their record, the rest
// a copy each to decide, a claim twice in the batch one copy for both.
func TestUndecidedClaims(t *testing.T) {
	a, b, c := &quan.Claim{ID: "a"}, &quan.Claim{ID: "b"}, &quan.Claim{ID: "c"}
	recB := &quan.Claim{ID: "b", Status: quan.ClaimIssued}
	claims := []*quan.Claim{a, b, a, c, &quan.Claim{ID: "other template"}}
	out := make([]*quan.Claim, len(claims))
	fresh := quan.UndecidedClaims(claims, []int{0, 1, 2, 3}, map[string]*quan.Claim{"b": recB}, out)
	if len(fresh) != 2 || fresh[0].ID != "a" || fresh[1].ID != "c" || fresh[0] == a || fresh[1] == c {
		t.Fatalf("fresh %+v; want copies of a and c", fresh)
	}
	if out[0] != fresh[0] || out[2] != fresh[0] || out[1] != recB || out[3] != fresh[1] || out[4] != nil {
		t.Errorf("out %+v; want a's copy twice, b's record, c's copy, and nothing for the claim not in idx", out)
	}
}

// TestClaimID: a claim id names its template and user and 80 random bits,
// ParseClaimID reads them back, and anything else is ErrNotFound.
func TestClaimID(t *testing.T) {
	id := quan.NewClaimID(7, 9_000_000_000)
	if !regexp.MustCompile(`^c7-9000000000-[a-z2-7]{16}$`).MatchString(id) {
		t.Fatalf("NewClaimID(7, 9000000000) = %q", id)
	}
	if tpl, user, err := quan.ParseClaimID(id); err != nil || tpl != 7 || user != 9_000_000_000 {
		t.Errorf("ParseClaimID(%q) = %d, %d, %v", id, tpl, user, err)
	}
	if other := quan.NewClaimID(7, 9_000_000_000); other == id {
		t.Errorf("two claims got the id %q", id)
	}
	for _, bad := range []string{"", "c", "7-9-aaaaaaaaaaaaaaaa", "c7-9-aaaa", "c0-9-aaaaaaaaaaaaaaaa", "c7-x-aaaaaaaaaaaaaaaa", "c7-9-AAAAAAAAAAAAAAAA", "c7-9-aaaaaaaaaaaaaaaa-1"} {
		if _, _, err := quan.ParseClaimID(bad); !errors.Is(err, quan.ErrNotFound) {
			t.Errorf("ParseClaimID(%q): %v, want ErrNotFound", bad, err)
		}
	}
}
