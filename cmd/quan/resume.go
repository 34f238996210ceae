package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/cmd/quan/internal/app"
	"github.com/quanhq/quan/cmd/quan/internal/cli"
	qhttp "github.com/quanhq/quan/http"
)

// A distribution interrupted (Ctrl-C) stays unfinished in its store, and
// the runner of the next command on that store resumes it. So that a
// rerun never starts a second distribution unasked, demo and distribute
// look for unfinished tasks first (pick): one that is the distribution
// the command asks for is resumed instead of a new one; another one
// refuses the command unless --new says to start the new one beside it.

// pick returns the unfinished task of the store that the command's
// distribution is (match), to resume, or nil to start the new one. It
// refuses to start one beside another unfinished task unless isNew, and
// tells w what it decided.
func pick(w io.Writer, unfinished []*quan.Task, match func(*quan.Task) bool, isNew bool, dataDir, command string) (*quan.Task, error) {
	if len(unfinished) == 0 {
		return nil, nil
	}
	if isNew {
		for _, t := range unfinished {
			fmt.Fprintf(w, "task %d (%s) is unfinished too: this run resumes it beside the new one\n", t.ID, t.Name)
		}
		return nil, nil
	}
	for _, t := range unfinished {
		if match(t) {
			fmt.Fprintf(w, "resuming task %d (%s), left unfinished at %s: nothing is issued twice (--new starts another distribution beside it)\n",
				t.ID, t.Name, doneSoFar(t))
			return t, nil
		}
	}
	t := unfinished[0]
	return nil, fmt.Errorf("%s: task %d (%s, template %d) is unfinished in %s, at %s: run its command again to finish it, "+
		"or add --new to start this distribution beside it (both then run)", command, t.ID, t.Name, t.TemplateID, dataDir, doneSoFar(t))
}

// doneSoFar says how far task t is: its file read and its rows decided.
func doneSoFar(t *quan.Task) string {
	pct := 0.0
	if t.BytesTotal > 0 {
		pct = float64(min(t.BytesRead, t.BytesTotal)) * 100 / float64(t.BytesTotal)
	}
	issued := fmt.Sprintf("%s issued", cli.Thousands(t.Counts.Issued))
	if t.DryRun {
		issued = fmt.Sprintf("%s valid, a dry run", cli.Thousands(t.Counts.Valid))
	}
	return fmt.Sprintf("%.1f%% (%s rows done, %s)", pct, cli.Thousands(t.Counts.Rows), issued)
}

// interrupted turns the *app.Interrupted of a local run into the
// command's last word: where the task is and what a rerun does. A run
// canceled before its task was created says so.
func interrupted(err error) error {
	var it *app.Interrupted
	switch {
	case errors.As(err, &it):
		t := it.Task
		return fmt.Errorf("interrupted: task %d (%s) stopped at %s and stays unfinished; nothing is lost or issued twice: "+
			"running the same command again resumes it", t.ID, t.Name, doneSoFar(t))
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("interrupted before the distribution started: nothing was issued (%w)", err)
	}
	return err
}

// fileSHA256 is the hex SHA-256 of the file at path, as quan keeps it of
// an upload (Task.FileSHA256).
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// remoteUnfinished returns the tasks of server that are running or
// pending, oldest first, as token's shop sees them.
func remoteUnfinished(ctx context.Context, server, token string) ([]*quan.Task, error) {
	var out []*quan.Task
	for _, status := range []quan.TaskStatus{quan.TaskRunning, quan.TaskPending} {
		req, err := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/api/v1/tasks?status=%s&limit=%d", server, status, quan.MaxPageSize), nil)
		if err != nil {
			return nil, err
		}
		var page struct {
			Items []qhttp.TaskView `json:"items"`
		}
		if err := apiCall(req, token, http.StatusOK, &page); err != nil {
			return nil, fmt.Errorf("list %s tasks: %w", status, err)
		}
		for _, v := range page.Items {
			out = append(out, v.Task)
		}
	}
	slices.SortFunc(out, func(x, y *quan.Task) int { return cmp.Compare(x.ID, y.ID) })
	return out, nil
}
