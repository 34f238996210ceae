package tasks_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/disk"
	"github.com/quanhq/quan/internal/testrig"
	"github.com/quanhq/quan/sheet"
	"github.com/quanhq/quan/tasks"
	"github.com/quanhq/quan/templates"
)

func TestRunForReal(t *testing.T) {
	st := testrig.Store(t)
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	dir := t.TempDir()
	files := &disk.Files{Dir: dir}
	uploads := func() int {
		es, _ := os.ReadDir(filepath.Join(dir, "uploads"))
		return len(es)
	}
	svc := &tasks.Service{
		Tasks: st, Templates: st, Files: files, Now: clock,
		Check: func(ctx context.Context, path, fileName, name string) error {
			return sheet.Check(ctx, path, sheet.Options{Name: fileName, Sheet: name})
		},
	}
	templates := &templates.Service{Store: st, Now: clock}
	tpl, err := templates.Create(t.Context(), testrig.Merchant1, testrig.DirectSpec(now))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	csv := []byte("userId\n1\n2\nx\n")
	newTask := func(t *testing.T, dry bool) *quan.Task {
		t.Helper()
		f, err := svc.Upload(ctx, bytes.NewReader(csv))
		if err != nil {
			t.Fatal(err)
		}
		task, err := svc.Create(ctx, testrig.Merchant1, tasks.NewTask{Name: "双十一", TemplateID: tpl.ID, DryRun: dry,
			Notify: []quan.NotifyType{quan.NotifyInbox, quan.NotifySMS}, Sheet: "名单", FileName: "users.csv", File: f})
		if err != nil {
			t.Fatal(err)
		}
		return task
	}
	// finish ends task as the runner would.
	finish := func(t *testing.T, id int64, end func(*quan.Task) error) {
		t.Helper()
		if _, err := st.UpdateTask(ctx, quan.AnyShop, id, func(task *quan.Task) error {
			if err := task.Start(now); err != nil {
				return err
			}
			return end(task)
		}); err != nil {
			t.Fatal(err)
		}
	}
	succeed := func(task *quan.Task) error { return task.Succeed(now) }

	t.Run("OK", func(t *testing.T) {
		dry := newTask(t, true)
		finish(t, dry.ID, succeed)
		sendAt := now.Add(2 * time.Hour)
		real, err := svc.RunForReal(ctx, testrig.Merchant1, dry.ID, sendAt)
		if err != nil {
			t.Fatal(err)
		}
		if real.ID == dry.ID || real.DryRun || real.Status != quan.TaskPending || real.TemplateID != tpl.ID ||
			real.Name != dry.Name || real.Sheet != "名单" || real.FileName != "users.csv" || !real.SendAt.Equal(sendAt) ||
			strings.Join(notifyNames(real.Notify), ",") != "inbox,sms" {
			t.Fatalf("real task %+v from dry run %+v", real, dry)
		}
		if real.FilePath == dry.FilePath || real.FileSHA256 != dry.FileSHA256 || real.FileSize != dry.FileSize {
			t.Fatalf("file %s (%s) shared or changed from %s (%s)", real.FilePath, real.FileSHA256, dry.FilePath, dry.FileSHA256)
		}
		// Each task owns its file: removing the dry run's leaves the real one.
		if err := files.Remove(dry.FilePath); err != nil {
			t.Fatal(err)
		}
		r, err := files.Open(real.FilePath)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(r)
		r.Close()
		if !bytes.Equal(got, csv) {
			t.Fatalf("real task's file %q", got)
		}
		// A dry run whose file is gone cannot be run again.
		if _, err := svc.RunForReal(ctx, testrig.Merchant1, dry.ID, time.Time{}); quan.ErrorCode(err) != quan.ENOTFOUND {
			t.Fatalf("file gone: %v", err)
		}
	})
	t.Run("ErrNotFinished", func(t *testing.T) {
		dry := newTask(t, true)
		if _, err := svc.RunForReal(ctx, testrig.Merchant1, dry.ID, time.Time{}); quan.ErrorCode(err) != quan.ECONFLICT {
			t.Fatalf("pending dry run: %v", err)
		}
	})
	t.Run("ErrCanceled", func(t *testing.T) {
		dry := newTask(t, true)
		finish(t, dry.ID, func(task *quan.Task) error { return task.Cancel(now) })
		if _, err := svc.RunForReal(ctx, testrig.Merchant1, dry.ID, time.Time{}); quan.ErrorCode(err) != quan.EINVALID {
			t.Fatalf("canceled dry run: %v", err)
		}
	})
	t.Run("ErrNotDryRun", func(t *testing.T) {
		task := newTask(t, false)
		finish(t, task.ID, succeed)
		if _, err := svc.RunForReal(ctx, testrig.Merchant1, task.ID, time.Time{}); quan.ErrorCode(err) != quan.EINVALID {
			t.Fatalf("real task: %v", err)
		}
	})
	t.Run("ErrOtherShop", func(t *testing.T) {
		dry := newTask(t, true)
		finish(t, dry.ID, succeed)
		other := quan.Identity{Subject: "merchant:2", Role: quan.RoleMerchant, ShopNo: 2}
		if _, err := svc.RunForReal(ctx, other, dry.ID, time.Time{}); quan.ErrorCode(err) != quan.ENOTFOUND {
			t.Fatalf("another shop's dry run: %v", err)
		}
	})
	t.Run("ErrTemplateEnded", func(t *testing.T) {
		dry := newTask(t, true)
		finish(t, dry.ID, succeed)
		if _, err := templates.Terminate(ctx, testrig.Merchant1, tpl.ID); err != nil {
			t.Fatal(err)
		}
		before := uploads()
		_, err := svc.RunForReal(ctx, testrig.Merchant1, dry.ID, time.Time{})
		if n := uploads(); n != before {
			t.Errorf("a refused run left %d files in uploads, was %d", n, before)
		}
		var qe *quan.Error
		if quan.ErrorCode(err) != quan.EINVALID || !errors.As(err, &qe) || len(qe.Fields) != 1 || qe.Fields[0].Field != "templateId" {
			t.Fatalf("ended template: %v", err)
		}
	})
}

func notifyNames(ns []quan.NotifyType) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = string(n)
	}
	return out
}
