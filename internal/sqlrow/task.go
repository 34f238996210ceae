package sqlrow

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/quanhq/quan"
)

// ScanTask reads a task from a row of the columns
//
//	id, shop_no, template_id, name, file_name, file_path, file_size,
//	file_sha256, sheet, notify, send_at, dry_run, chunk_size, status, reason,
//	count_rows, count_valid, count_issued, count_canceled,
//	failed_invalid_id, failed_inexact_number, failed_duplicate,
//	failed_limit_reached, failed_out_of_stock, failed_template_inactive,
//	chunks_done, chunks_total, bytes_read, bytes_total, report_path, created_by,
//	created_at, started_at, finished_at, updated_at, owner, lease_until, retry_of,
//	trace_parent, segment, failed_not_eligible,
//	stalled_code, stalled_backend, stalled_reason, stalled_since
//
// in that order, notify the comma list TaskValues writes, stalled_code empty
// for a task not stalled. The row's own error (sql.ErrNoRows) is returned
// as it is.
func ScanTask(row Scanner) (*quan.Task, error) {
	var (
		t      quan.Task
		notify string
		stall  quan.TaskStall
	)
	c, f := &t.Counts, &t.Counts.Failed
	if err := row.Scan(&t.ID, &t.ShopNo, &t.TemplateID, &t.Name, &t.FileName, &t.FilePath, &t.FileSize,
		&t.FileSHA256, &t.Sheet, &notify, NullTime(&t.SendAt), &t.DryRun, &t.ChunkSize, &t.Status, &t.Reason,
		&c.Rows, &c.Valid, &c.Issued, &c.Canceled,
		&f.InvalidID, &f.InexactNumber, &f.Duplicate, &f.LimitReached, &f.OutOfStock, &f.TemplateInactive,
		&t.ChunksDone, &t.ChunksTotal, &t.BytesRead, &t.BytesTotal, &t.ReportPath, &t.CreatedBy,
		Time(&t.CreatedAt), NullTime(&t.StartedAt), NullTime(&t.FinishedAt), Time(&t.UpdatedAt), &t.Owner, NullTime(&t.LeaseUntil),
		&t.RetryOf, &t.TraceParent, &t.Segment, &f.NotEligible, &c.Blank,
		&stall.Code, &stall.Backend, &stall.Reason, NullTime(&stall.Since),
	); err != nil {
		return nil, err
	}
	if stall.Code != "" {
		t.Stalled = &stall
	}
	var err error
	if t.Notify, err = quan.ParseNotifyTypes(notify); err != nil {
		return nil, fmt.Errorf("task %d: notify: %w", t.ID, err)
	}
	return &t, nil
}

// TaskValues returns the values of t's columns after id and shop_no,
// template_id … failed_not_eligible, count_blank, stalled_code …
// stalled_since in ScanTask's order, for an INSERT (after shop_no) or an
// UPDATE (before id). notify is a comma list, the form
// quan.ParseNotifyTypes reads back. at is how the store writes an instant;
// send_at, started_at, finished_at and lease_until are NULL for the zero
// time.
func TaskValues[V any](t *quan.Task, at func(time.Time) V) []any {
	notify := make([]string, len(t.Notify))
	for i, n := range t.Notify {
		notify[i] = string(n)
	}
	c, f := t.Counts, t.Counts.Failed
	var stall quan.TaskStall
	if t.Stalled != nil {
		stall = *t.Stalled
	}
	return []any{t.TemplateID, t.Name, t.FileName, t.FilePath, t.FileSize,
		t.FileSHA256, t.Sheet, strings.Join(notify, ","), Null(at, t.SendAt), t.DryRun, t.ChunkSize, t.Status, t.Reason,
		c.Rows, c.Valid, c.Issued, c.Canceled,
		f.InvalidID, f.InexactNumber, f.Duplicate, f.LimitReached, f.OutOfStock, f.TemplateInactive,
		t.ChunksDone, t.ChunksTotal, t.BytesRead, t.BytesTotal, t.ReportPath, t.CreatedBy,
		at(t.CreatedAt), Null(at, t.StartedAt), Null(at, t.FinishedAt), at(t.UpdatedAt),
		t.Owner, Null(at, t.LeaseUntil), t.RetryOf, t.TraceParent, t.Segment, f.NotEligible, c.Blank,
		stall.Code, stall.Backend, stall.Reason, Null(at, stall.Since),
	}
}

// ScanFailure reads a failed row of a task from a row of the columns
// line, raw, cause, in that order.
func ScanFailure(row Scanner) (quan.Failure, error) {
	var f quan.Failure
	err := row.Scan(&f.Line, &f.Raw, &f.Cause)
	return f, err
}

// ChunkFailures returns the failed rows of c, in order, as a task records
// them: the line, the user id as written or, when the row carries no
// text, as parsed, and the cause. (A runner may keep the text of the rows
// its file check refused only; a row the plan refused then reports its
// id.)
func ChunkFailures(c *quan.Chunk) []quan.Failure {
	var fs []quan.Failure
	for _, r := range c.Rows {
		if r.Cause == "" {
			continue
		}
		raw := r.Raw
		if raw == "" && r.UserID > 0 {
			raw = strconv.FormatInt(r.UserID, 10)
		}
		fs = append(fs, quan.Failure{Line: r.Line, Raw: raw, Cause: r.Cause})
	}
	return fs
}
