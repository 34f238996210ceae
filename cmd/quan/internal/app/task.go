package app

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/tasks"
	"github.com/quanhq/quan/templates"
)

// CLI is who local commands act as: they have the data folder, so they may
// do anything.
var CLI = quan.Identity{Role: quan.RoleAdmin, Subject: "cli"}

// RunTask uploads file into the data folder, creates the task in and runs
// it in this process (with a shared bus, any worker applies chunks too),
// calling progress with the task about five times a second. It returns the
// finished task and the wall time from the upload to its end. With file
// "", in names a segment (in.Segment): the wall time starts as its users
// are read.
func (a *App) RunTask(ctx context.Context, file string, in tasks.NewTask, progress func(*quan.Task, time.Duration)) (*quan.Task, time.Duration, error) {
	start := time.Now()
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return nil, 0, err
		}
		start = time.Now()
		stored, err := a.Tasks.Upload(ctx, f)
		f.Close()
		if err != nil {
			return nil, 0, err
		}
		in.File = stored
	}
	t, err := a.Tasks.Create(ctx, CLI, in)
	if err != nil {
		return nil, 0, err
	}
	return a.run(ctx, t, start, progress)
}

// RetryTask creates a new task over the retryable failed rows of finished
// task id (tasks.Service.Retry) and runs it like RunTask. It returns
// what the retry took, the finished task and the wall time from the
// retry's start to the task's end.
func (a *App) RetryTask(ctx context.Context, id int64, in tasks.RetryTask, progress func(*quan.Task, time.Duration)) (*tasks.Retry, *quan.Task, time.Duration, error) {
	start := time.Now()
	r, err := a.Tasks.Retry(ctx, CLI, id, in)
	if err != nil {
		return nil, nil, 0, err
	}
	t, wall, err := a.run(ctx, r.Task, start, progress)
	if err != nil {
		return nil, nil, 0, err
	}
	return r, t, wall, nil
}

// ResumeTask runs unfinished task t (Unfinished) in this process until
// it ends, like RunTask; the wall time counts from now.
func (a *App) ResumeTask(ctx context.Context, t *quan.Task, progress func(*quan.Task, time.Duration)) (*quan.Task, time.Duration, error) {
	return a.run(ctx, t, time.Now(), progress)
}

// Unfinished returns the tasks that a runner has yet to finish, oldest
// first: the running ones (a command interrupted left them, or a runner
// that died, or one at work elsewhere on a shared store) and the pending
// ones whose time has come. A local command's runner resumes them all.
func (a *App) Unfinished(ctx context.Context) ([]*quan.Task, error) {
	now := time.Now()
	if a.Config.Now != nil {
		now = a.Config.Now()
	}
	var out []*quan.Task
	for _, status := range []quan.TaskStatus{quan.TaskRunning, quan.TaskPending} {
		for offset := 0; ; offset += quan.MaxPageSize {
			page, _, err := a.Tasks.List(ctx, CLI, quan.TaskFilter{ShopNo: quan.AnyShop, Status: status, Offset: offset, Limit: quan.MaxPageSize})
			if err != nil {
				return nil, fmt.Errorf("unfinished tasks: %w", err)
			}
			for _, t := range page {
				if t.Status == quan.TaskRunning || !t.SendAt.After(now) {
					out = append(out, t)
				}
			}
			if len(page) < quan.MaxPageSize {
				break
			}
		}
	}
	slices.SortFunc(out, func(x, y *quan.Task) int { return cmp.Compare(x.ID, y.ID) })
	return out, nil
}

// Interrupted is the error of a task run whose context ended (Ctrl-C)
// before the task did: the task stays unfinished, its lease given up so
// that the next run on the same store resumes it at once.
type Interrupted struct {
	Task *quan.Task // as the run left it
}

func (e *Interrupted) Error() string {
	return fmt.Sprintf("task %d interrupted before its end", e.Task.ID)
}

// Unwrap makes an Interrupted a context.Canceled.
func (e *Interrupted) Unwrap() error { return context.Canceled }

// run runs task t, created at start, in this process until it ends and
// its report is written; see RunTask. If ctx ends first it returns an
// *Interrupted once the runner has stopped and released its tasks.
func (a *App) run(ctx context.Context, t *quan.Task, start time.Time, progress func(*quan.Task, time.Duration)) (*quan.Task, time.Duration, error) {
	var wg sync.WaitGroup
	defer wg.Wait() // after stop: nothing may use the backends once they close
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	if a.Distributor.Bus != nil {
		wg.Go(func() {
			if err := a.Distributor.ServeChunks(runCtx); err != nil && runCtx.Err() == nil {
				a.Logger.Error("chunk consumer stopped", "err", err)
			}
		})
	}
	runErr := make(chan error, 1)
	quit, runnerDone := make(chan struct{}), make(chan struct{})
	wg.Go(func() {
		defer close(runnerDone)
		for {
			ran, err := a.Distributor.RunOne(runCtx)
			if err != nil || runCtx.Err() != nil {
				runErr <- err
				return
			}
			if !ran {
				select {
				case <-runCtx.Done():
				case <-quit:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}
	})
	// halt stops the runner, then tells where ctx's end left the task.
	halt := func() error {
		stop()
		wg.Wait()
		return a.interrupted(ctx, t.ID)
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, 0, halt()
		case err := <-runErr:
			if ctx.Err() != nil {
				return nil, 0, halt()
			}
			if err != nil {
				return nil, 0, err
			}
		case <-tick.C:
		}
		cur, err := a.Tasks.Get(ctx, CLI, t.ID)
		if ctx.Err() != nil {
			return nil, 0, halt()
		}
		if err != nil {
			return nil, 0, err
		}
		if cur.Status.Done() && (cur.ReportPath != "" || cur.Counts.FailedTotal() == 0 || cur.Status == quan.TaskFailed) {
			wall := time.Since(start)
			// Let the runner finish what follows the task's end (bringing
			// the cache in line with the store) rather than cancel it.
			close(quit)
			select {
			case <-runnerDone:
			case <-time.After(10 * time.Second):
			}
			return cur, wall, nil
		}
		if progress != nil {
			progress(cur, time.Since(start))
		}
	}
}

// interrupted gives up the leases of this process's runner, whose context
// ctx ended, and returns the *Interrupted of task id.
func (a *App) interrupted(ctx context.Context, id int64) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := a.Distributor.Release(ctx); err != nil {
		a.Logger.Warn("interrupted: the next run resumes when the lease runs out", "err", err)
	}
	t, err := a.Tasks.Get(ctx, CLI, id)
	if err != nil {
		return fmt.Errorf("interrupted: %w", err)
	}
	return &Interrupted{Task: t}
}

// CreateDemoTemplate makes an active 满100减10 template for shop 1 with
// stock, one per user, valid 72 hours after receipt: the demo's and the
// benchmarks'.
func (a *App) CreateDemoTemplate(ctx context.Context, stock int64) (*quan.Template, error) {
	now := time.Now()
	if a.Config.Now != nil {
		now = a.Config.Now()
	}
	tpl, err := a.Templates.Create(ctx, CLI, templates.NewTemplate{
		ShopNo: 1,
		Stock:  stock,
		TemplateSpec: quan.TemplateSpec{
			Name:         "满100减10 demo",
			Kind:         quan.KindThreshold,
			Rule:         quan.Rule{Amount: 1000, Threshold: 10000},
			Source:       quan.SourceShop,
			Scope:        quan.Scope{Kind: quan.ScopeAll},
			IssueStart:   now.Add(-time.Hour),
			IssueEnd:     now.Add(30 * 24 * time.Hour),
			Validity:     quan.Validity{Kind: quan.ValidRelative, Hours: 72},
			PerUserLimit: 1,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("create template: %w", err)
	}
	return a.Templates.Activate(ctx, CLI, tpl.ID)
}

// secretFile holds the token signing secret in the data folder.
const secretFile = "jwt-secret"

// LoadSecret returns the token signing secret: explicit if given,
// otherwise the one kept in dataDir, generated on first use.
func LoadSecret(dataDir, explicit string) ([]byte, error) {
	if explicit != "" {
		return []byte(explicit), nil
	}
	path := filepath.Join(dataDir, secretFile)
	b, err := os.ReadFile(path)
	if err == nil {
		s := strings.TrimSpace(string(b))
		if s == "" {
			return nil, fmt.Errorf("token secret file %s is empty: delete it to generate a new one", path)
		}
		return []byte(s), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read token secret: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data folder: %w", err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("generate token secret: %w", err)
	}
	secret := hex.EncodeToString(raw)
	// O_EXCL: if two processes race to create it, one wins and the other
	// reads the winner's secret.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return LoadSecret(dataDir, "")
	}
	if err != nil {
		return nil, fmt.Errorf("create token secret: %w", err)
	}
	if _, err := f.WriteString(secret + "\n"); err != nil {
		f.Close()
		return nil, fmt.Errorf("write token secret: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("write token secret: %w", err)
	}
	return []byte(secret), nil
}
