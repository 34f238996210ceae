package tasks

import (
	"context"
	"fmt"
	"io"
	"iter"
	"strings"
	"time"

	"github.com/quanhq/quan"
)

// Service is the merchant's use of distribution tasks.
type Service struct {
	Tasks     quan.TaskStore
	Templates quan.TemplateStore
	Files     quan.FileStore
	// Check opens a stored file as the runner will, reads its header and
	// first rows, and returns what is wrong with it in words a merchant
	// can act on. fileName is its name as uploaded (Task.FileName): its
	// extension says what the merchant meant it to be (a corrupt .xlsx is
	// not a CSV file with a bad header).
	Check func(ctx context.Context, path, fileName, sheet string) error
	// Count returns the number of data rows of a stored file; canceling a
	// task that never started counts its rows as canceled with it.
	Count func(ctx context.Context, path, sheet string) (int64, error)
	// Wake tells the runners a task was created; nil does nothing.
	Wake func()
	Now  quan.Clock
	// MaxFileSize bounds an upload; 0 means DefaultMaxFileSize.
	MaxFileSize int64
	// ChunkSize is the rows applied per transaction; 0 means
	// DefaultChunkSize.
	ChunkSize int
	// Tracer, if set, keeps the trace of the request that creates a task
	// with it (Task.TraceParent), for the runner to continue; nil traces
	// nothing.
	Tracer quan.Tracer
	// Outbox holds the notifications the tasks' chunks record, for their
	// progress (NotificationProgress) and failed notifications; nil shows
	// none.
	Outbox quan.NotificationStore
	// Rules compiles a task's segment and Facts holds the facts it
	// is evaluated over (task_segment.go); without both, a task needs a
	// file.
	Rules quan.RuleEngine
	Facts quan.FactsStore
	// Stalls, if set, tells why a task the runner of this process holds
	// is stuck (Runner.Stalled): Get and List show it on the task even
	// when the store could not record it. nil shows the store's only.
	Stalls StallSource
}

// StallSource tells why a running task is stuck, if it is.
type StallSource interface {
	Stalled(id int64) (quan.TaskStall, bool)
}

// NewTask is what a merchant sends to start a distribution.
type NewTask struct {
	Name       string
	TemplateID int64
	Notify     []quan.NotifyType
	SendAt     time.Time // zero: now
	DryRun     bool
	Sheet      string          // worksheet name; "" the first
	FileName   string          // as uploaded
	File       quan.StoredFile // from Upload; Create removes it if it fails
	// Segment, instead of a file, targets the users whose facts match
	// this rule (RuleSegment) when the task is created.
	Segment string
	// frozenFrom is the segment File was frozen from, for a task that
	// runs a segment's dry run for real (RunForReal): the same users.
	frozenFrom string
}

// Upload keeps the content of r for a task, refusing more than
// MaxFileSize bytes with ErrTooLarge.
func (s *Service) Upload(ctx context.Context, r io.Reader) (quan.StoredFile, error) {
	max := s.MaxFileSize
	if max <= 0 {
		max = quan.DefaultMaxFileSize
	}
	return s.Files.Save(ctx, r, max)
}

// Create checks an uploaded file and the template and schedules the task.
// Every problem is an EINVALID error naming its field: a file that cannot
// be read is refused here rather than failing later. Unless Create
// succeeds, it removes the uploaded file.
func (s *Service) Create(ctx context.Context, who quan.Identity, in NewTask) (*quan.Task, error) {
	return s.create(ctx, who, in, 0)
}

// create is Create of a task that retries task retryOf (0: none).
func (s *Service) create(ctx context.Context, who quan.Identity, in NewTask, retryOf int64) (*quan.Task, error) {
	f := in.File
	keep := false
	defer func() {
		if !keep && f.Path != "" {
			s.Files.Remove(f.Path)
		}
	}()
	shop, err := who.ShopScope()
	if err != nil {
		return nil, err
	}
	var v quan.Validation
	var segment quan.CompiledRule
	switch {
	case in.Segment != "" && f.Path != "":
		v.Add("segment", "send a file or a segment, not both")
	case in.Segment != "" && in.Sheet != "":
		v.Add("sheet", "applies to a file only, not to a segment")
	case in.Segment != "":
		segment = s.compileSegment(in.Segment, &v)
	case f.Path == "" || in.FileName == "":
		v.Add("file", "is required: upload the .xlsx or .csv file of target users, or give a segment")
	}
	if in.TemplateID <= 0 {
		v.Add("templateId", "is required")
	}
	if strings.TrimSpace(in.Name) == "" {
		v.Add("name", "is required")
	}
	// A time before now means now (below): one out of range is refused
	// first.
	v.Time("sendAt", in.SendAt)
	var tpl *quan.Template
	if in.TemplateID > 0 {
		tpl, err = s.Templates.Template(ctx, shop, in.TemplateID)
		switch {
		case err == nil && tpl.Status == quan.TemplateEnded:
			v.Add("templateId", fmt.Sprintf("template %d has ended: it issues no more coupons", tpl.ID))
		case err == nil:
		case quan.ErrorCode(err) == quan.ENOTFOUND:
			v.Add("templateId", fmt.Sprintf("no template %d in your shop", in.TemplateID))
		default:
			return nil, fmt.Errorf("create task: %w", err)
		}
	}
	if err := v.Err("the task has invalid fields"); err != nil {
		return nil, err
	}
	if segment != nil {
		if f, err = s.segmentFile(ctx, segment); err != nil {
			return nil, err
		}
		in.FileName = SegmentFileName
	}
	if f.Size == 0 {
		return nil, fieldErr("file", "the file is empty: upload an .xlsx or .csv with a header row and one user per row")
	}
	if err := s.Check(ctx, f.Path, in.FileName, in.Sheet); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if in.Segment != "" { // too many users for one task, say
			return nil, fieldErr("segment", err.Error())
		}
		return nil, fieldErr("file", err.Error())
	}
	now := s.Now.UTC()
	chunk := s.ChunkSize
	if chunk <= 0 {
		chunk = quan.DefaultChunkSize
	}
	t := &quan.Task{
		ShopNo:     tpl.ShopNo,
		TemplateID: tpl.ID,
		Name:       strings.TrimSpace(in.Name),
		FileName:   in.FileName,
		FilePath:   f.Path,
		FileSize:   f.Size,
		FileSHA256: f.SHA256,
		Sheet:      in.Sheet,
		Notify:     in.Notify,
		SendAt:     in.SendAt.UTC().Truncate(time.Microsecond),
		DryRun:     in.DryRun,
		ChunkSize:  chunk,
		Status:     quan.TaskPending,
		CreatedBy:  who.String(),
		CreatedAt:  now,
		UpdatedAt:  now,
		RetryOf:    retryOf,
		Segment:    in.Segment,
	}
	if in.frozenFrom != "" {
		t.Segment = in.frozenFrom
	}
	if t.SendAt.IsZero() || t.SendAt.Before(now) {
		t.SendAt = now
	}
	if t.Notify == nil {
		t.Notify = []quan.NotifyType{}
	}
	if s.Tracer != nil {
		t.TraceParent = s.Tracer.TraceParent(ctx)
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if err := s.Tasks.CreateTask(ctx, t); err != nil {
		return nil, fmt.Errorf("create task: %w", err)
	}
	keep = true
	if s.Wake != nil {
		s.Wake()
	}
	return t, nil
}

func fieldErr(field, msg string) error {
	return &quan.Error{Code: quan.EINVALID, Message: "the task has invalid fields", Fields: []quan.FieldError{{Field: field, Message: msg}}}
}

// Get returns task id if the caller's shop owns it, else ErrNotFound.
func (s *Service) Get(ctx context.Context, who quan.Identity, id int64) (*quan.Task, error) {
	shop, err := who.ShopScope()
	if err != nil {
		return nil, err
	}
	t, err := s.Tasks.Task(ctx, shop, id)
	if err != nil {
		return nil, err
	}
	s.showStall(t)
	return t, nil
}

// showStall puts on t the stall the runner of this process knows of: more
// recent than the store's, which it may have failed to record.
func (s *Service) showStall(t *quan.Task) {
	if s.Stalls == nil || t.Status != quan.TaskRunning {
		return
	}
	if st, ok := s.Stalls.Stalled(t.ID); ok {
		t.Stalled = &st
	}
}

// List returns a page of the caller's tasks, newest first, and the total.
func (s *Service) List(ctx context.Context, who quan.Identity, f quan.TaskFilter) ([]*quan.Task, int, error) {
	shop, err := who.ShopScope()
	if err != nil {
		return nil, 0, err
	}
	if shop != quan.AnyShop {
		f.ShopNo = shop
	}
	var v quan.Validation
	switch f.Status {
	case "", quan.TaskPending, quan.TaskRunning, quan.TaskSucceeded, quan.TaskFailed, quan.TaskCanceled:
	default:
		v.Add("status", fmt.Sprintf("%q is not a task status: use pending, running, succeeded, failed or canceled", f.Status))
	}
	v.Page(f.Offset, f.Limit)
	if err := v.Err("invalid list parameters"); err != nil {
		return nil, 0, err
	}
	if f.Limit == 0 {
		f.Limit = quan.DefaultPageSize
	}
	ts, n, err := s.Tasks.Tasks(ctx, f)
	if err != nil {
		return nil, 0, err
	}
	for _, t := range ts {
		s.showStall(t)
	}
	return ts, n, nil
}

// Cancel stops a pending or running task. Coupons issued stay; the runner
// counts the rows it did not reach as canceled.
func (s *Service) Cancel(ctx context.Context, who quan.Identity, id int64) (*quan.Task, error) {
	shop, err := who.ShopScope()
	if err != nil {
		return nil, err
	}
	now := s.Now.UTC()
	wasPending := false
	t, err := s.Tasks.UpdateTask(ctx, shop, id, func(t *quan.Task) error {
		wasPending = t.Status == quan.TaskPending
		return t.Cancel(now)
	})
	if err != nil {
		return nil, fmt.Errorf("cancel task %d: %w", id, err)
	}
	if wasPending && s.Count != nil {
		// No runner will read the file: count its rows here.
		n, err := s.Count(ctx, t.FilePath, t.Sheet)
		if err != nil {
			return nil, fmt.Errorf("cancel task %d: count rows: %w", id, err)
		}
		t, err = s.Tasks.UpdateTask(ctx, shop, id, func(t *quan.Task) error {
			t.Counts.Canceled = n
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("cancel task %d: %w", id, err)
		}
	}
	return t, nil
}

// Report returns the path of a task's failure report, or ErrNotFound with
// the reason there is none.
func (s *Service) Report(ctx context.Context, who quan.Identity, id int64) (string, error) {
	t, err := s.reported(ctx, who, id)
	if err != nil {
		return "", err
	}
	return t.ReportPath, nil
}

// Failures returns the failed rows of a task, in line order, for a failure
// report made on the fly: the rows of the report Report names, from the
// same records. Like Report, it returns ErrNotFound with the reason when
// the task has no report (yet).
func (s *Service) Failures(ctx context.Context, who quan.Identity, id int64) (iter.Seq2[quan.Failure, error], error) {
	t, err := s.reported(ctx, who, id)
	if err != nil {
		return nil, err
	}
	return quan.FailureRows(ctx, s.Tasks, t.ID), nil
}

// reported returns task id if the caller's shop owns it and its failure
// report is written, else ErrNotFound saying why not.
func (s *Service) reported(ctx context.Context, who quan.Identity, id int64) (*quan.Task, error) {
	t, err := s.Get(ctx, who, id)
	if err != nil {
		return nil, err
	}
	if t.ReportPath == "" {
		if t.Counts.FailedTotal() == 0 && t.Status.Done() {
			return nil, quan.Errorf(quan.ENOTFOUND, "task %d has no failure report: no row failed", id)
		}
		return nil, quan.Errorf(quan.ENOTFOUND, "task %d has no failure report yet: it is %s", id, t.Status)
	}
	return t, nil
}
