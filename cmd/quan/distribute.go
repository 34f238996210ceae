package main

import (
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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/quanhq/quan"
	qhttp "github.com/quanhq/quan/http"
)

// DistributeCommand runs a distribution task, on the local data folder or
// on a server, showing its progress.
type DistributeCommand struct {
	Main *Main
}

// cliIdentity is who local commands act as: they have the data folder, so
// they may do anything.
var cliIdentity = quan.Identity{Role: quan.RoleAdmin, Subject: "cli"}

// Run parses args, runs the task and prints its summary.
func (c *DistributeCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("distribute", flag.ContinueOnError)
	local := localFlags{}
	local.register(fs)
	template := fs.Int64("template", 0, "template id (required)")
	name := fs.String("name", "", "task name (default: the file name)")
	dry := fs.Bool("dry-run", false, "check the file and count, issue nothing")
	sheetName := fs.String("sheet", "", "worksheet to read (default: the first)")
	notify := fs.String("notify", "", "comma-separated: inbox, popup, email, sms")
	server := fs.String("server", "", "URL of a quan server to run the task on, e.g. http://localhost:8080 (default: the local data folder)")
	token := fs.String("token", "", "bearer token for --server (a merchant's)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: quan distribute --template ID [flags] FILE")
		fs.PrintDefaults()
	}
	file, err := c.Main.parseFlagsArg(fs, args, "FILE")
	if err != nil {
		return err
	}
	if *template <= 0 {
		return errors.New("distribute: --template is required")
	}
	if *name == "" {
		*name = filepath.Base(file)
	}
	notifyTypes, err := quan.ParseNotifyTypes(*notify)
	if err != nil {
		return fmt.Errorf("distribute: --notify: %w", err)
	}
	in := quan.NewTask{Name: *name, TemplateID: *template, Notify: notifyTypes, DryRun: *dry, Sheet: *sheetName, FileName: filepath.Base(file)}
	if *server != "" {
		return c.remote(ctx, *server, *token, file, in)
	}
	a, closeStore, err := local.open(ctx, c.Main)
	if err != nil {
		return err
	}
	defer closeStore()
	t, wall, err := runLocalTask(ctx, c.Main, a, file, in)
	if err != nil {
		return err
	}
	printSummary(c.Main.Stdout, t, wall, t.ReportPath)
	return taskExit(t)
}

// taskExit turns a task that did not succeed into the command's error.
func taskExit(t *quan.Task) error {
	if t.Status != quan.TaskSucceeded {
		return fmt.Errorf("task %d %s", t.ID, t.Status)
	}
	return nil
}

// runLocalTask uploads file into the data folder, creates the task and runs
// it in this process, drawing progress on stderr. It returns the finished
// task and the wall time from creation to its end.
func runLocalTask(ctx context.Context, m *Main, a *app, file string, in quan.NewTask) (*quan.Task, time.Duration, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, 0, fmt.Errorf("distribute: %w", err)
	}
	start := time.Now()
	stored, err := a.tasks.Upload(ctx, f)
	f.Close()
	if err != nil {
		return nil, 0, fmt.Errorf("distribute: %w", err)
	}
	in.File = stored
	t, err := a.tasks.Create(ctx, cliIdentity, in)
	if err != nil {
		return nil, 0, fmt.Errorf("distribute: %w", err)
	}
	var wg sync.WaitGroup
	defer wg.Wait() // after stop: nothing may use the backends once they close
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	if a.distributor.Bus != nil {
		// Chunks travel over the bus: this process applies them too, with
		// any worker running.
		wg.Go(func() {
			if err := a.distributor.ServeChunks(runCtx); err != nil {
				fmt.Fprintf(m.Stderr, "chunk consumer: %v\n", err)
			}
		})
	}
	runErr := make(chan error, 1)
	quit, runnerDone := make(chan struct{}), make(chan struct{})
	wg.Go(func() {
		defer close(runnerDone)
		for {
			ran, err := a.distributor.RunOne(runCtx)
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
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		case err := <-runErr:
			if err != nil {
				return nil, 0, err
			}
		case <-tick.C:
		}
		cur, err := a.tasks.Get(ctx, cliIdentity, t.ID)
		if err != nil {
			return nil, 0, err
		}
		fmt.Fprintf(m.Stderr, "\r%s", progressLine(cur, time.Since(start)))
		if cur.Status.Done() && (cur.ReportPath != "" || cur.Counts.FailedTotal() == 0 || cur.Status == quan.TaskFailed) {
			fmt.Fprintln(m.Stderr)
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
	}
}

// remote uploads the file to a server, then follows the task's progress.
func (c *DistributeCommand) remote(ctx context.Context, server, token, file string, in quan.NewTask) error {
	server = strings.TrimSuffix(server, "/")
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("distribute: %w", err)
	}
	defer f.Close()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		fields := map[string]string{"name": in.Name, "templateId": strconv.FormatInt(in.TemplateID, 10),
			"notify": joinNotify(in.Notify), "dryRun": strconv.FormatBool(in.DryRun), "sheet": in.Sheet}
		for k, v := range fields {
			if err := mw.WriteField(k, v); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		part, err := mw.CreateFormFile("file", filepath.Base(file))
		if err == nil {
			_, err = io.Copy(part, f)
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
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/api/v1/tasks/%d", server, t.ID), nil)
		t = qhttp.TaskView{}
		if err := apiCall(req, token, http.StatusOK, &t); err != nil {
			return fmt.Errorf("distribute: follow task: %w", err)
		}
		fmt.Fprintf(c.Main.Stderr, "\r%s", progressLine(t.Task, time.Since(start)))
		if t.Status.Done() && (t.Report != "" || t.Failed == 0 || t.Status == quan.TaskFailed) {
			fmt.Fprintln(c.Main.Stderr)
			report := ""
			if t.Report != "" {
				report = server + t.Report
			}
			printSummary(c.Main.Stdout, t.Task, time.Since(start), report)
			return taskExit(t.Task)
		}
	}
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
