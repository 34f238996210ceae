package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/cmd/quan/internal/app"
	"github.com/quanhq/quan/cmd/quan/internal/cli"
	qhttp "github.com/quanhq/quan/http"
	"github.com/quanhq/quan/tasks"
)

// DistributeCommand runs a distribution task, on the local data folder or
// on a server, showing its progress.
type DistributeCommand struct {
	Main *Main
}

// Run parses args, runs the task and prints its summary.
func (c *DistributeCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("distribute", flag.ContinueOnError)
	var cfg app.Config
	cfg.Register(fs, app.Local)
	template := fs.Int64("template", 0, "template id (required)")
	name := fs.String("name", "", "task name (default: the file name)")
	dry := fs.Bool("dry-run", false, "check the file and count, issue nothing")
	sheetName := fs.String("sheet", "", "worksheet to read (default: the first)")
	notify := fs.String("notify", "", "comma-separated: inbox, popup, email, sms")
	server := fs.String("server", "", "URL of a quan server to run the task on, e.g. http://localhost:8080 (default: the local data folder)")
	token := fs.String("token", "", "bearer token for --server (a merchant's)")
	retry := fs.Int64("retry", 0, "instead of a FILE, retry the failed rows of this finished task that may succeed now "+
		"(out_of_stock, template_inactive, limit_reached) as a new task; --template (default: the task's) and --name apply")
	segment := fs.String("segment", "", "instead of a FILE, the users whose attributes match this rule (CEL over user and now), "+
		"e.g. 'user.level >= 2 && \"vip\" in user.tags': the users matching when the task is created")
	isNew := fs.Bool("new", false, "start this distribution even if an interrupted one is unfinished: by default a rerun resumes the "+
		"same distribution left unfinished, and refuses to start one beside another (with --server: follows the same one if it runs)")
	var out outputFlags
	out.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: quan distribute FILE --template ID [flags]\n       quan distribute --segment RULE --template ID [flags]\n       quan distribute --retry TASK [--template ID] [flags]")
		fs.PrintDefaults()
	}
	pos, err := c.Main.parse(fs, args, "[FILE]")
	if err != nil {
		return err
	}
	if err := cli.CheckOutput(out.Format); err != nil {
		return err
	}
	if *retry != 0 || cli.IsSet(fs, "retry") {
		if cli.IsSet(fs, "segment") {
			return cli.Usagef("distribute: --segment does not apply to --retry: the retry takes the task's failed rows")
		}
		if err := retryUsage(fs, *retry, *template, pos); err != nil {
			return err
		}
		in := tasks.RetryTask{TemplateID: *template, Name: *name}
		if *server != "" {
			return c.remoteRetry(ctx, *server, *token, *retry, in, out)
		}
		return c.localRetry(ctx, cfg, *retry, in, out, *isNew)
	}
	if *template <= 0 {
		return cli.Usagef("distribute: --template is required")
	}
	file, err := distributeSource(fs, pos, *segment)
	if err != nil {
		return err
	}
	if *name == "" {
		*name = filepath.Base(file)
		if file == "" {
			*name = clipName("segment " + *segment)
		}
	}
	notifyTypes, err := quan.ParseNotifyTypes(*notify)
	if err != nil {
		return cli.Usagef("distribute: --notify: %v", err)
	}
	in := tasks.NewTask{Name: *name, TemplateID: *template, Notify: notifyTypes, DryRun: *dry, Sheet: *sheetName, Segment: *segment}
	if file != "" {
		in.FileName = filepath.Base(file)
	}
	same := func(t *quan.Task) bool { // the distribution in, as a task
		return t.TemplateID == in.TemplateID && t.Segment == in.Segment && t.Sheet == in.Sheet && t.DryRun == in.DryRun && t.RetryOf == 0
	}
	if file != "" {
		sha, err := fileSHA256(file)
		if err != nil {
			return fmt.Errorf("distribute: %w", err)
		}
		sameTask := same
		same = func(t *quan.Task) bool { return sameTask(t) && t.FileSHA256 == sha }
	}
	if *server != "" {
		return c.remote(ctx, *server, *token, file, in, out, same, *isNew)
	}
	cfg.Now = c.Main.Now
	logger, err := cfg.NewLogger(c.Main.Stderr)
	if err != nil {
		return err
	}
	a, err := app.Open(ctx, cfg, app.Local, logger)
	if err != nil {
		return err
	}
	defer a.Close()
	unfinished, err := a.Unfinished(ctx)
	if err != nil {
		return fmt.Errorf("distribute: %w", err)
	}
	resume, err := pick(c.Main.Stderr, unfinished, same, *isNew, a.Config.DataDir, "distribute")
	if err != nil {
		return err
	}
	p := out.progress(c.Main.Stderr)
	var (
		t    *quan.Task
		wall time.Duration
	)
	if resume != nil {
		t, wall, err = a.ResumeTask(ctx, resume, p.Update)
	} else {
		t, wall, err = a.RunTask(ctx, file, in, p.Update)
	}
	if err != nil {
		p.Stop()
		if file == "" {
			err = fmt.Errorf("distribute --segment: %w", err)
		} else {
			err = fmt.Errorf("distribute %s: %w", file, err)
		}
		return interrupted(err)
	}
	p.Done(t, wall)
	if err := (cli.Summary{Task: t, Wall: wall, Report: t.ReportPath}).Write(c.Main.Stdout, out.Format); err != nil {
		return err
	}
	return taskExit(t)
}

// distributeSource returns the FILE of the command line, or "" for a
// --segment, refusing both or neither.
func distributeSource(fs *flag.FlagSet, pos []string, segment string) (string, error) {
	switch {
	case cli.IsSet(fs, "segment") && strings.TrimSpace(segment) == "":
		return "", cli.Usagef("distribute: --segment is empty: give a rule such as 'user.level >= 2'")
	case segment != "" && len(pos) > 0:
		return "", cli.Usagef("distribute: give a FILE or --segment, not both")
	case segment != "" && cli.IsSet(fs, "sheet"):
		return "", cli.Usagef("distribute: --sheet applies to a FILE, not to --segment")
	case segment != "":
		return "", nil
	case len(pos) == 0:
		return "", cli.Usagef("distribute: want one FILE, --segment RULE, or --retry TASK to retry the failed rows of a task")
	}
	return pos[0], nil
}

// clipName clips a default task name to quan.MaxNameLen characters.
func clipName(s string) string {
	if r := []rune(s); len(r) > quan.MaxNameLen {
		return strings.TrimSpace(string(r[:quan.MaxNameLen-1])) + "…"
	}
	return s
}

// retryUsage returns the usage error of a --retry command line, if any:
// a retry reads no file and takes the task's sheet, notifications and
// real (not dry) run.
func retryUsage(fs *flag.FlagSet, retry, template int64, pos []string) error {
	switch {
	case retry <= 0:
		return cli.Usagef("distribute: --retry %d: want the id of a finished task", retry)
	case len(pos) > 0:
		return cli.Usagef("distribute: --retry reads no file: drop %q", pos[0])
	case template < 0:
		return cli.Usagef("distribute: --template %d: want a template id", template)
	}
	for _, f := range []string{"dry-run", "sheet", "notify"} {
		if cli.IsSet(fs, f) {
			return cli.Usagef("distribute: --%s does not apply to --retry: the retry notifies as the task did and issues for real", f)
		}
	}
	return nil
}

// localRetry retries task id's failed rows on the local data folder, or
// resumes the retry an earlier run left unfinished.
func (c *DistributeCommand) localRetry(ctx context.Context, cfg app.Config, id int64, in tasks.RetryTask, out outputFlags, isNew bool) error {
	cfg.Now = c.Main.Now
	logger, err := cfg.NewLogger(c.Main.Stderr)
	if err != nil {
		return err
	}
	a, err := app.Open(ctx, cfg, app.Local, logger)
	if err != nil {
		return err
	}
	defer a.Close()
	unfinished, err := a.Unfinished(ctx)
	if err != nil {
		return fmt.Errorf("distribute: %w", err)
	}
	resume, err := pick(c.Main.Stderr, unfinished, func(t *quan.Task) bool { return t.RetryOf == id }, isNew, a.Config.DataDir, "distribute --retry")
	if err != nil {
		return err
	}
	p := out.progress(c.Main.Stderr)
	var (
		t     *quan.Task
		wall  time.Duration
		retry *cli.Retry
	)
	if resume != nil {
		t, wall, err = a.ResumeTask(ctx, resume, p.Update)
		retry = &cli.Retry{Of: id} // what it retried: its rows, once it is done
	} else {
		var r *tasks.Retry
		r, t, wall, err = a.RetryTask(ctx, id, in, p.Update)
		if r != nil {
			retry = &cli.Retry{Of: id, Retried: r.Retried, Skipped: r.Skipped, SkippedTotal: r.Skipped.Total()}
		}
	}
	if err != nil {
		p.Stop()
		return interrupted(fmt.Errorf("distribute --retry %d: %w", id, err))
	}
	if resume != nil {
		retry.Retried = t.Counts.Rows
	}
	p.Done(t, wall)
	s := cli.Summary{Task: t, Wall: wall, Report: t.ReportPath, Retry: retry}
	if err := s.Write(c.Main.Stdout, out.Format); err != nil {
		return err
	}
	return taskExit(t)
}

// remoteRetry asks a server to retry task id's failed rows, then follows
// the new task.
func (c *DistributeCommand) remoteRetry(ctx context.Context, server, token string, id int64, in tasks.RetryTask, out outputFlags) error {
	server = strings.TrimSuffix(server, "/")
	body, err := json.Marshal(map[string]any{"templateId": in.TemplateID, "name": in.Name})
	if err != nil {
		return err
	}
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, "POST", fmt.Sprintf("%s/api/v1/tasks/%d/retry", server, id), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("distribute: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	var r qhttp.RetryView
	if err := apiCall(req, token, http.StatusCreated, &r); err != nil {
		return fmt.Errorf("distribute --retry %d: %w", id, err)
	}
	retry := &cli.Retry{Of: id, Retried: r.Retried, Skipped: r.Skipped, SkippedTotal: r.SkippedTotal}
	return c.follow(ctx, server, token, r.TaskView, start, out, retry)
}

// outputFlags are --quiet and --output, of the commands that run a task.
type outputFlags struct {
	Quiet  bool
	Format string
}

func (o *outputFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&o.Quiet, "quiet", false, "show no progress (the summary is still printed)")
	fs.StringVar(&o.Format, "output", cli.OutputText, "the summary's form: text or json")
}

func (o outputFlags) progress(w io.Writer) *cli.Progress {
	return cli.NewProgress(w, o.Quiet)
}

// taskExit turns a task that did not succeed into the command's error.
func taskExit(t *quan.Task) error {
	if t.Status != quan.TaskSucceeded {
		return fmt.Errorf("task %d %s", t.ID, t.Status)
	}
	return nil
}

// remote uploads the file to a server, then follows the task's progress.
// If the server runs the same distribution already (same, as an earlier
// run left it when interrupted), it follows that one instead, unless
// isNew.
func (c *DistributeCommand) remote(ctx context.Context, server, token, file string, in tasks.NewTask, out outputFlags, same func(*quan.Task) bool, isNew bool) error {
	server = strings.TrimSuffix(server, "/")
	if !isNew {
		running, err := remoteUnfinished(ctx, server, token)
		if err != nil {
			return fmt.Errorf("distribute: %w", err)
		}
		running = slices.DeleteFunc(running, func(t *quan.Task) bool { return !same(t) })
		if len(running) > 0 {
			t := running[0]
			fmt.Fprintf(c.Main.Stderr, "following task %d (%s), which the server runs already, at %s: --new distributes the file again beside it\n",
				t.ID, t.Name, doneSoFar(t))
			return c.follow(ctx, server, token, qhttp.TaskView{Task: t}, time.Now(), out, nil)
		}
	}
	var f *os.File // nil for a segment
	if file != "" {
		var err error
		if f, err = os.Open(file); err != nil {
			return fmt.Errorf("distribute: %w", err)
		}
		defer f.Close()
	}
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		fields := map[string]string{"name": in.Name, "templateId": strconv.FormatInt(in.TemplateID, 10),
			"notify": joinNotify(in.Notify), "dryRun": strconv.FormatBool(in.DryRun), "sheet": in.Sheet}
		if in.Segment != "" {
			fields["segment"] = in.Segment
		}
		for k, v := range fields {
			if err := mw.WriteField(k, v); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		var err error
		if f != nil {
			var part io.Writer
			part, err = mw.CreateFormFile("file", filepath.Base(file))
			if err == nil {
				_, err = io.Copy(part, f)
			}
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, "POST", server+"/api/v1/tasks", pr)
	if err != nil {
		return fmt.Errorf("distribute: %w", err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	var t qhttp.TaskView
	if err := apiCall(req, token, http.StatusCreated, &t); err != nil {
		return fmt.Errorf("distribute: create task: %w", err)
	}
	return c.follow(ctx, server, token, t, start, out, nil)
}

// follow polls task t on server until it has ended and its report is
// written, showing its progress, and prints its summary.
func (c *DistributeCommand) follow(ctx context.Context, server, token string, t qhttp.TaskView, start time.Time, out outputFlags, retry *cli.Retry) error {
	p := out.progress(c.Main.Stderr)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			p.Stop()
			return stoppedFollowing(t)
		case <-tick.C:
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/api/v1/tasks/%d", server, t.ID), nil)
		var cur qhttp.TaskView
		if err := apiCall(req, token, http.StatusOK, &cur); err != nil {
			if ctx.Err() != nil {
				p.Stop()
				return stoppedFollowing(t)
			}
			return fmt.Errorf("distribute: follow task: %w", err)
		}
		t = cur
		if t.Status.Done() && (t.Report != "" || t.Failed == 0 || t.Status == quan.TaskFailed) {
			wall := time.Since(start)
			p.Done(t.Task, wall)
			report := ""
			if t.Report != "" {
				report = server + t.Report
			}
			if err := (cli.Summary{Task: t.Task, Wall: wall, Report: report, Retry: retry}).Write(c.Main.Stdout, out.Format); err != nil {
				return err
			}
			return taskExit(t.Task)
		}
		p.Update(t.Task, time.Since(start))
	}
}

// stoppedFollowing is the error of a command interrupted (Ctrl-C) while
// it followed task t on a server, which runs on.
func stoppedFollowing(t qhttp.TaskView) error {
	return fmt.Errorf("interrupted: stopped following task %d (%s) at %s; the server runs it on: "+
		"running the same command again follows it while it runs, and GET /api/v1/tasks/%d shows it",
		t.ID, t.Name, doneSoFar(t.Task), t.ID)
}

// apiCall sends req with token and decodes a reply of status want into v,
// or returns the server's problem.
func apiCall(req *http.Request, token string, want int, v any) error {
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != want {
		var p qhttp.Problem
		if json.Unmarshal(body, &p) == nil && p.Code != "" {
			msg := fmt.Sprintf("%d %s: %s", p.Status, p.Code, p.Detail)
			for _, f := range p.Errors {
				msg += fmt.Sprintf("; %s %s", f.Field, f.Message)
			}
			return errors.New(msg)
		}
		return fmt.Errorf("%s: %s", res.Status, strings.TrimSpace(string(body)))
	}
	return json.Unmarshal(body, v)
}

func joinNotify(ns []quan.NotifyType) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = string(n)
	}
	return strings.Join(s, ",")
}
