package quan

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// stringConsts reads this package's source and returns its string
// constants by name, with the type each is declared with ("" for an
// untyped one): a constant given as another's name has that one's value.
func stringConsts(t *testing.T) (values, types map[string]string) {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	values, types = map[string]string{}, map[string]string{}
	refs := map[string]string{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				typ := ""
				if id, ok := vs.Type.(*ast.Ident); ok {
					typ = id.Name
				}
				for i, n := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					switch v := vs.Values[i].(type) {
					case *ast.BasicLit:
						if s, err := strconv.Unquote(v.Value); err == nil && v.Kind == token.STRING {
							values[n.Name], types[n.Name] = s, typ
						}
					case *ast.Ident:
						refs[n.Name], types[n.Name] = v.Name, typ
					}
				}
			}
		}
	}
	for n, ref := range refs {
		if v, ok := values[ref]; ok {
			values[n] = v
		} else {
			delete(types, n)
		}
	}
	return values, types
}

// TestReasonsFitTheStores: every code the stores keep in a column of
// bounded width fits it. A claim's reason (ClaimReasons) and every code
// the claim statistics count (the cache's refusals, and the error codes
// the claims answer, which RefusalCounter counts) fit MaxClaimReasonLen; a
// distribution row's cause fits MaxCauseLen, and Causes lists every one.
func TestReasonsFitTheStores(t *testing.T) {
	values, types := stringConsts(t)
	fits := func(what, code string, max int) {
		t.Helper()
		if code == "" || len(code) > max {
			t.Errorf("%s %q has %d bytes: want 1 to %d, what the stores' column holds", what, code, len(code), max)
		}
	}
	for _, r := range ClaimReasons() {
		fits("claim reason", r, MaxClaimReasonLen)
	}
	for _, r := range Refusals() {
		fits("refusal", string(r), MaxClaimReasonLen)
	}
	causes := Causes()
	for _, c := range causes {
		fits("cause", string(c), MaxCauseLen)
	}
	var errorCodes, declaredCauses, refusals int
	for name, v := range values {
		switch {
		case types[name] == "Cause":
			declaredCauses++
			if !slices.Contains(causes, Cause(v)) {
				t.Errorf("cause %s (%q) is not in Causes()", name, v)
			}
		case types[name] == "Refusal":
			refusals++
			fits("refusal "+name, v, MaxClaimReasonLen)
		case len(name) > 1 && name[0] == 'E' && strings.ToUpper(name) == name:
			errorCodes++
			fits("error code "+name, v, MaxClaimReasonLen)
		}
	}
	if len(causes) != declaredCauses || errorCodes < 30 || refusals < 8 {
		t.Errorf("read %d causes (Causes has %d), %d error codes, %d refusals: the source was not read right",
			declaredCauses, len(causes), errorCodes, refusals)
	}
}

// TestDescribeClaimReason: every reason a store gives a claim is said in
// words, and a reason of before the codes comes back as it was.
func TestDescribeClaimReason(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range ClaimReasons() {
		d := DescribeClaimReason(r)
		if d == r || len(d) < 20 || seen[d] {
			t.Errorf("DescribeClaimReason(%q) = %q: want words of its own", r, d)
		}
		seen[d] = true
	}
	if !strings.Contains(DescribeClaimReason(ReasonAbandoned), "claim again") {
		t.Errorf("an abandoned claim does not say to claim again: %q", DescribeClaimReason(ReasonAbandoned))
	}
	if old := "hand-off failed: nats: timeout"; DescribeClaimReason(old) != old {
		t.Errorf("DescribeClaimReason(%q) = %q, want it as it is", old, DescribeClaimReason(old))
	}
}
