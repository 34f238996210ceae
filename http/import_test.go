package http_test

import (
	"slices"
	"testing"

	"github.com/quanhq/quan"
)

// importFailure is a failed row of an import's answer, but its message.
type importFailure struct {
	Line                  int64
	UserID, Reason, Field string
}

// checkImport checks an import's answer: its rows and how many were
// imported, the failures counted by reason and listed in line order, each
// with a message.
func checkImport(t *testing.T, res *quan.ImportReport, rows, imported int64, byReason map[string]int64, failures []importFailure) {
	t.Helper()
	if res.Rows != rows || res.Imported != imported || res.Failed != rows-imported || res.FailuresTruncated {
		t.Errorf("rows %d, imported %d, failed %d, truncated %v; want %d, %d, %d, false",
			res.Rows, res.Imported, res.Failed, res.FailuresTruncated, rows, imported, rows-imported)
	}
	if !mapsEqual(res.FailedByReason, byReason) {
		t.Errorf("by reason %v, want %v", res.FailedByReason, byReason)
	}
	got := make([]importFailure, len(res.Failures))
	for i, f := range res.Failures {
		got[i] = importFailure{f.Line, f.UserID, f.Reason, f.Field}
		if f.Message == "" {
			t.Errorf("line %d has no message", f.Line)
		}
	}
	if !slices.Equal(got, failures) {
		t.Errorf("failures\n%+v\nwant\n%+v", got, failures)
	}
}
