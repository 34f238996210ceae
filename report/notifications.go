package report

import (
	"context"
	"fmt"
	"io"
	"iter"

	"github.com/quanhq/quan"
)

// NotificationFailures writes a task's failed notifications as an .xlsx
// workbook: one sheet headed by quan.NotificationFailureColumns, a row a
// message, the address masked, as failures.csv has them.
type NotificationFailures struct{}

var _ quan.NotificationFailuresExport = NotificationFailures{}

// Write streams ns into a workbook written to w.
func (NotificationFailures) Write(ctx context.Context, w io.Writer, ns iter.Seq2[*quan.Notification, error]) error {
	cells := func(yield func([]any, error) bool) {
		for n, err := range ns {
			if err != nil {
				yield(nil, err)
				return
			}
			// The user id as text: an id beyond 2^53 keeps its digits.
			row := []any{fmt.Sprint(n.UserID), string(n.Channel), quan.MaskAddress(n.Channel, n.Address), n.Reason, quan.DescribeReason(n.Reason)}
			if !yield(row, nil) {
				return
			}
		}
	}
	if err := writeSheet(ctx, w, "Notifications", []float64{22, 12, 28, 18, 80}, quan.NotificationFailureColumns(), cells); err != nil {
		return fmt.Errorf("notification failures: %w", err)
	}
	return nil
}
