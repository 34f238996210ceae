package quan

import (
	"context"
	"iter"
)

// FailureColumns heads the columns of a failure report, in both its forms
// (.xlsx and .csv): the row number in the file, the user id as written, the
// cause in words (Cause.Label), its code and what it means (Cause.Describe).
// The user id column's name is one a distribution file may use, so a report
// whose rows the merchant corrected can be uploaded again as it is; the
// other columns name nothing a distribution reads.
func FailureColumns() []string {
	return []string{"行号 Row", "用户ID User ID", "原因 Reason", "代码 Code", "说明 Details"}
}

// failurePage is how many failed rows FailureRows reads at a time.
const failurePage = 10_000

// FailureRows yields the failed rows of task id from store, in line order,
// a page at a time; an error ends the sequence.
func FailureRows(ctx context.Context, store TaskStore, id int64) iter.Seq2[Failure, error] {
	return func(yield func(Failure, error) bool) {
		var after int64
		for {
			page, err := store.Failures(ctx, id, after, failurePage)
			if err != nil {
				yield(Failure{}, err)
				return
			}
			for _, f := range page {
				if !yield(f, nil) {
					return
				}
				after = f.Line
			}
			if len(page) < failurePage {
				return
			}
		}
	}
}
