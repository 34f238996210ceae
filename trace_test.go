package quan

import "testing"

// TestClaimTraces: a batch's header holds one trace parent per claim, in
// order, empty for a claim not traced, and none at all when no claim is;
// a header that does not match the batch is ignored.
func TestClaimTraces(t *testing.T) {
	const p1, p3 = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	claims := func(ps ...string) []*Claim {
		cs := make([]*Claim, len(ps))
		for i, p := range ps {
			cs[i] = &Claim{ID: "c", TraceParent: p}
		}
		return cs
	}
	if v := EncodeClaimTraces(claims("", "")); v != "" {
		t.Errorf("no claim traced: header %q, want none", v)
	}
	v := EncodeClaimTraces(claims(p1, "", p3))
	if v != p1+",,"+p3 {
		t.Fatalf("header %q", v)
	}
	got := claims("", "", "")
	DecodeClaimTraces(got, v)
	if got[0].TraceParent != p1 || got[1].TraceParent != "" || got[2].TraceParent != p3 {
		t.Errorf("decoded %q %q %q", got[0].TraceParent, got[1].TraceParent, got[2].TraceParent)
	}
	for _, n := range []int{2, 4} {
		cs := claims(make([]string, n)...)
		DecodeClaimTraces(cs, v)
		for _, c := range cs {
			if c.TraceParent != "" {
				t.Errorf("a header of 3 parents on a batch of %d: set %q", n, c.TraceParent)
			}
		}
	}
}
