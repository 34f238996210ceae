package quan_test

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/quanhq/quan"
)

// backendAdapters are the adapters of the backends an outage can take
// down, and the types of each whose methods are the ports.
var backendAdapters = map[string][]string{
	"mysql":  {"Store", "DB"},
	"sqlite": {"Store", "DB"},
	"redis":  {"Cache"},
	"nats":   {"Bus"},
}

// TestEveryMethodTranslatesOutages holds every backend adapter to its
// boundary: each exported method of its port types that returns an error
// (Close aside) translates its driver's transport errors into
// quan.Unavailable, by `defer X.unavailable(&err)` first thing, and each
// that returns an iterator of errors wraps it in unavailableSeq. A method
// added without it would answer 500 for an outage.
func TestEveryMethodTranslatesOutages(t *testing.T) {
	for dir, types := range backendAdapters {
		for _, p := range untranslated(t, dir, types) {
			t.Errorf("%s: %s: does not translate outages (defer ….unavailable(&err) first, or unavailableSeq around an iterator)", dir, p)
		}
	}
}

// TestEveryMethodTranslatesOutagesCatches: the check finds a method that
// returns an error without the deferred translation, one whose deferred
// call is not first, and an iterator left bare, and passes the rest.
func TestEveryMethodTranslatesOutagesCatches(t *testing.T) {
	dir := t.TempDir()
	src := `package x

import "iter"

type Store struct{ db *DB }
type DB struct{}

func (db *DB) unavailable(*error) {}
func unavailableSeq[T any](s iter.Seq2[T, error]) iter.Seq2[T, error] { return s }

func (s *Store) Good() (err error) { defer s.db.unavailable(&err); return nil }
func (s *Store) Bare() error { return nil }
func (s *Store) Late() (n int, err error) { n = 1; defer s.db.unavailable(&err); return n, nil }
func (s *Store) Seq() iter.Seq2[int, error] { return nil }
func (s *Store) GoodSeq() iter.Seq2[int, error] { return unavailableSeq[int](nil) }
func (s *Store) Close() error { return nil }
func (s *Store) NoError() int { return 0 }
func (s *Store) unexported() error { return nil }
`
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	got := untranslated(t, dir, []string{"Store"})
	want := []string{"Store.Bare", "Store.Late", "Store.Seq"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("untranslated %q, want %q", got, want)
	}
}

// untranslated returns the methods of types in the Go files of dir (tests
// aside) that break TestEveryMethodTranslatesOutages, as Type.Method.
func untranslated(t *testing.T, dir string, types []string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, ty := range types {
		want[ty] = true
	}
	var out []string
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || fd.Body == nil || !fd.Name.IsExported() || fd.Name.Name == "Close" {
				continue
			}
			recv := receiverType(fd)
			if !want[recv] {
				continue
			}
			switch resultKind(fd) {
			case "error":
				if !defersUnavailable(fd) {
					out = append(out, recv+"."+fd.Name.Name)
				}
			case "seq":
				if !callsUnavailableSeq(fd) {
					out = append(out, recv+"."+fd.Name.Name)
				}
			}
		}
	}
	return out
}

func receiverType(fd *ast.FuncDecl) string {
	rt := fd.Recv.List[0].Type
	if st, ok := rt.(*ast.StarExpr); ok {
		rt = st.X
	}
	if id, ok := rt.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// resultKind is "error" for a method whose last result is an error,
// "seq" for one that returns an iter.Seq2 of errors, "" otherwise.
func resultKind(fd *ast.FuncDecl) string {
	res := fd.Type.Results
	if res == nil || len(res.List) == 0 {
		return ""
	}
	last := res.List[len(res.List)-1].Type
	if id, ok := last.(*ast.Ident); ok && id.Name == "error" {
		return "error"
	}
	if ix, ok := last.(*ast.IndexListExpr); ok {
		if sel, ok := ix.X.(*ast.SelectorExpr); ok && sel.Sel.Name == "Seq2" {
			if id, ok := ix.Indices[len(ix.Indices)-1].(*ast.Ident); ok && id.Name == "error" {
				return "seq"
			}
		}
	}
	return ""
}

// defersUnavailable reports whether fd's first statement is `defer
// ….unavailable(&err)` with err its error result.
func defersUnavailable(fd *ast.FuncDecl) bool {
	if len(fd.Body.List) == 0 {
		return false
	}
	d, ok := fd.Body.List[0].(*ast.DeferStmt)
	if !ok || len(d.Call.Args) != 1 {
		return false
	}
	sel, ok := d.Call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "unavailable" {
		return false
	}
	u, ok := d.Call.Args[0].(*ast.UnaryExpr)
	if !ok || u.Op != token.AND {
		return false
	}
	arg, ok := u.X.(*ast.Ident)
	last := fd.Type.Results.List[len(fd.Type.Results.List)-1]
	return ok && len(last.Names) > 0 && last.Names[len(last.Names)-1].Name == arg.Name
}

// callsUnavailableSeq reports whether every return of fd returns a call of
// unavailableSeq.
func callsUnavailableSeq(fd *ast.FuncDecl) bool {
	ok, returns := true, 0
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		if _, lit := n.(*ast.FuncLit); lit {
			return false
		}
		r, isRet := n.(*ast.ReturnStmt)
		if !isRet {
			return true
		}
		returns++
		call, isCall := r.Results[0].(*ast.CallExpr)
		if !isCall {
			ok = false
			return true
		}
		fun := call.Fun
		if ix, isIndex := fun.(*ast.IndexExpr); isIndex {
			fun = ix.X
		}
		if id, isID := fun.(*ast.Ident); !isID || id.Name != "unavailableSeq" {
			ok = false
		}
		return true
	})
	return ok && returns > 0
}

// TestUnavailable: an outage's error carries its code, backend and
// Retry-After, keeps its cause in the chain and out of the message.
func TestUnavailable(t *testing.T) {
	cause := fmt.Errorf("dial tcp 10.0.0.7:6379: %w", syscall.ECONNREFUSED)
	err := fmt.Errorf("claim template 3: %w", quan.Unavailable(quan.BackendCache, cause))
	if quan.ErrorCode(err) != quan.EUNAVAILABLE || quan.ErrorBackend(err) != quan.BackendCache ||
		quan.ErrorRetryAfter(err) != quan.UnavailableRetryAfter {
		t.Fatalf("code %q, backend %q, retry after %v", quan.ErrorCode(err), quan.ErrorBackend(err), quan.ErrorRetryAfter(err))
	}
	if !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), "10.0.0.7") {
		t.Fatalf("the cause is lost: %v", err)
	}
	if msg := quan.ErrorMessage(err); strings.Contains(msg, "10.0.0.7") || !strings.Contains(msg, "cache") {
		t.Fatalf("message %q: want the backend named, the cause left out", msg)
	}
	if quan.ErrorBackend(quan.ErrNotFound) != "" {
		t.Fatal("a not-found error names a backend")
	}
}

// TestNoSpace: a full disk's error says what needed how much, and what is
// free.
func TestNoSpace(t *testing.T) {
	err := quan.NoSpace("the upload", 5000, 1200, syscall.ENOSPC)
	if quan.ErrorCode(err) != quan.ENOSPACE || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("%v: code %q", err, quan.ErrorCode(err))
	}
	if msg := quan.ErrorMessage(err); !strings.Contains(msg, "5000 bytes") || !strings.Contains(msg, "1200 are free") {
		t.Fatalf("message %q", msg)
	}
}
