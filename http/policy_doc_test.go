package http_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	qhttp "github.com/quanhq/quan/http"
)

// TestPolicyIsDocumented: docs/reference.md's table of who may do what
// is http.Policy, row for row: each route once, with who may call it as
// Access.Who says.
func TestPolicyIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/reference.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "\n| route | who may call it |\n|---|---|\n")
	if !ok {
		t.Fatal("docs/reference.md has no table | route | who may call it |")
	}
	documented := map[string]string{}
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| `") {
			break
		}
		cells := strings.Split(strings.Trim(line, "| "), "|")
		if len(cells) != 2 {
			t.Fatalf("row %q: want two cells", line)
		}
		route := strings.Trim(strings.TrimSpace(cells[0]), "`")
		if _, dup := documented[route]; dup {
			t.Errorf("route %s documented twice", route)
		}
		documented[route] = strings.TrimSpace(cells[1])
	}
	policy := qhttp.Policy()
	var want []string
	for route, a := range policy {
		want = append(want, "| `"+route+"` | "+a.Who()+" |")
		if got, ok := documented[route]; !ok {
			t.Errorf("route %s is not in the table", route)
		} else if got != a.Who() {
			t.Errorf("route %s: the table says %q, the code %q", route, got, a.Who())
		}
	}
	for route := range documented {
		if _, ok := policy[route]; !ok {
			t.Errorf("the table has %s, which http.Policy has not", route)
		}
	}
	if t.Failed() {
		slices.Sort(want)
		t.Logf("the table as the code has it:\n%s", strings.Join(want, "\n"))
	}
}
