package tasks

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/quanhq/quan"
)

// RetryTask is what a merchant sends to try the failed rows of a finished
// task again. The zero value retries onto the same template.
type RetryTask struct {
	// TemplateID is the template the rows get a coupon of: one of the
	// task's shop; 0 means the finished task's template.
	TemplateID int64
	// Name is the new task's name; "" means the finished task's name
	// followed by "(retry of task N)".
	Name string
}

// SkippedCounts counts the failed rows a retry leaves out, by cause: rows
// that would fail the same way however often they were tried.
type SkippedCounts struct {
	InvalidID     int64 `json:"invalid_id"`
	InexactNumber int64 `json:"inexact_number"`
	Duplicate     int64 `json:"duplicate_in_file"`
}

// Total is the number of rows skipped, all causes together.
func (c SkippedCounts) Total() int64 { return c.InvalidID + c.InexactNumber + c.Duplicate }

func (c *SkippedCounts) add(cause quan.Cause) {
	switch cause {
	case quan.CauseInvalidID:
		c.InvalidID++
	case quan.CauseInexactNumber:
		c.InexactNumber++
	case quan.CauseDuplicate:
		c.Duplicate++
	}
}

// Retry is the task Service.Retry created and what it took from the
// finished task.
type Retry struct {
	Task *quan.Task
	// Retried is the number of failed rows the new task tries again, one
	// row of its file each.
	Retried int64
	// Skipped counts the failed rows left out, which cannot succeed.
	Skipped SkippedCounts
}

// Retry creates a new task over the failed rows of finished task id whose
// cause can change (Cause.Retryable: out of stock, template inactive,
// limit reached), in file order, linked to it by RetryOf. Each row keeps
// its user id exactly: the new task's file, kept through Upload like any
// upload, holds one id a line in plain digits, so the new task runs,
// checkpoints and reports like any other. It notifies as the finished task
// did. Rows the finished task did not reach (canceled) are not failed rows
// and are not retried.
//
// ErrNotFound if the caller's shop has no task id; ECONFLICT if the task
// has not finished; EINVALID if it was a dry run, if none of its failed
// rows can be retried (the message counts them by cause), or naming
// templateId or name if the new task could not be created.
func (s *Service) Retry(ctx context.Context, who quan.Identity, id int64, in RetryTask) (*Retry, error) {
	old, err := s.Get(ctx, who, id)
	if err != nil {
		return nil, err
	}
	if !old.Status.Done() {
		return nil, quan.Errorf(quan.ECONFLICT, "task %d is %s: retry its failed rows once it has finished", id, old.Status)
	}
	if old.DryRun {
		return nil, quan.Errorf(quan.EINVALID, "task %d was a dry run, which issues nothing: distribute its file for real instead of retrying it", id)
	}
	tplID := in.TemplateID
	if tplID == 0 {
		tplID = old.TemplateID
	}
	// The rows are the users of the task's shop: they stay in it, whoever
	// asks (an admin sees every shop's templates).
	switch _, err := s.Templates.Template(ctx, old.ShopNo, tplID); {
	case quan.ErrorCode(err) == quan.ENOTFOUND:
		return nil, fieldErr("templateId", fmt.Sprintf("no template %d in shop %d, whose task %d is", tplID, old.ShopNo, id))
	case err != nil:
		return nil, fmt.Errorf("retry task %d: %w", id, err)
	}
	name := strings.TrimSpace(in.Name)
	if name == "" {
		name = retryName(old)
	}

	var (
		r      = Retry{}
		pr, pw = io.Pipe()
		done   = make(chan error, 1)
	)
	go func() {
		err := s.writeRetryFile(ctx, pw, old.ID, &r)
		pw.CloseWithError(err)
		done <- err
	}()
	stored, err := s.Upload(ctx, pr)
	pr.CloseWithError(io.ErrClosedPipe) // stops the writer if Upload gave up early
	if werr := <-done; werr != nil && !errors.Is(werr, io.ErrClosedPipe) {
		if err == nil {
			s.Files.Remove(stored.Path)
		}
		return nil, fmt.Errorf("retry task %d: %w", id, werr)
	}
	if err != nil {
		return nil, fmt.Errorf("retry task %d: %w", id, err)
	}
	if r.Retried == 0 {
		s.Files.Remove(stored.Path)
		return nil, nothingToRetry(old, r.Skipped)
	}
	t, err := s.create(ctx, who, NewTask{
		Name:       name,
		TemplateID: tplID,
		Notify:     old.Notify,
		FileName:   fmt.Sprintf("task-%d-retry.csv", old.ID),
		File:       stored,
	}, old.ID)
	if err != nil {
		return nil, err
	}
	r.Task = t
	return &r, nil
}

// writeRetryFile writes to w, as CSV, a header and the user id of every
// retryable failed row of task id, counting them in r.Retried and the
// others in r.Skipped.
func (s *Service) writeRetryFile(ctx context.Context, w io.Writer, id int64, r *Retry) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString("userId\n")
	for f, err := range quan.FailureRows(ctx, s.Tasks, id) {
		if err != nil {
			return fmt.Errorf("read failed rows: %w", err)
		}
		if !f.Cause.Retryable() {
			r.Skipped.add(f.Cause)
			continue
		}
		// A row fails for a retryable cause only once its id was read:
		// the store records it as written or as parsed, either way one
		// ParseUserID takes back.
		user, ok := quan.ParseUserID(f.Raw)
		if !ok {
			return quan.Errorf(quan.EINTERNAL, "line %d failed %s with user id %q, which is not a user id", f.Line, f.Cause, f.Raw)
		}
		bw.WriteString(strconv.FormatInt(user, 10))
		if err := bw.WriteByte('\n'); err != nil {
			return err
		}
		r.Retried++
	}
	return bw.Flush()
}

// retryName is the default name of the retry of t, within MaxNameLen.
func retryName(t *quan.Task) string {
	suffix := fmt.Sprintf(" (retry of task %d)", t.ID)
	name := []rune(t.Name)
	if keep := quan.MaxNameLen - len([]rune(suffix)); len(name) > keep {
		name = name[:max(0, keep)]
	}
	return strings.TrimSpace(string(name)) + suffix
}

// nothingToRetry is the error of retrying task t, none of whose failed
// rows can be retried.
func nothingToRetry(t *quan.Task, skipped SkippedCounts) error {
	if skipped.Total() == 0 {
		return quan.Errorf(quan.EINVALID, "task %d has no failed row to retry", t.ID)
	}
	return quan.Errorf(quan.EINVALID, "task %d has no failed row worth retrying: its %d failed rows would fail the same way again "+
		"(%s %d, %s %d, %s %d); only rows that failed %s, %s, %s or %s are retried",
		t.ID, skipped.Total(), quan.CauseInvalidID, skipped.InvalidID, quan.CauseInexactNumber, skipped.InexactNumber,
		quan.CauseDuplicate, skipped.Duplicate, quan.CauseOutOfStock, quan.CauseTemplateInactive, quan.CauseLimitReached, quan.CauseNotEligible)
}
