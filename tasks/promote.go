package tasks

import (
	"context"
	"fmt"
	"time"

	"github.com/quanhq/quan"
)

// RunForReal creates a real task from a finished dry run: the same
// template, name, worksheet, notification channels and file, sent at
// sendAt (zero or past: now). The file is copied into a new stored file,
// checked against the dry run's SHA-256, so that each task owns its own:
// removing one task's file never breaks the other. A segment's dry run
// gives its frozen users: the ones it counted.
//
// ErrNotFound if the caller's shop has no task id; EINVALID if it is not a
// dry run, or a dry run that failed or was canceled (upload the file again);
// ECONFLICT if the dry run has not finished yet; and the errors of Create
// (EINVALID naming templateId if the template has ended meanwhile).
func (s *Service) RunForReal(ctx context.Context, who quan.Identity, id int64, sendAt time.Time) (*quan.Task, error) {
	dry, err := s.Get(ctx, who, id)
	if err != nil {
		return nil, err
	}
	switch {
	case !dry.DryRun:
		return nil, quan.Errorf(quan.EINVALID, "task %d is not a dry run: it distributed for real already", id)
	case !dry.Status.Done():
		return nil, quan.Errorf(quan.ECONFLICT, "dry run %d is %s: distribute for real once the preview has finished", id, dry.Status)
	case dry.Status != quan.TaskSucceeded:
		return nil, quan.Errorf(quan.EINVALID, "dry run %d %s, so its preview is incomplete: upload the file again", id, dry.Status)
	}
	f, err := s.copyFile(ctx, dry)
	if err != nil {
		return nil, fmt.Errorf("run task %d for real: %w", id, err)
	}
	// create removes the copy unless the task is created.
	return s.create(ctx, who, NewTask{
		Name:       dry.Name,
		TemplateID: dry.TemplateID,
		Notify:     dry.Notify,
		SendAt:     sendAt,
		Sheet:      dry.Sheet,
		FileName:   dry.FileName,
		File:       f,
		frozenFrom: dry.Segment, // the users the dry run counted, not the segment's users now
	}, 0)
}

// copyFile stores a copy of t's file, refusing one that is not what was
// uploaded.
func (s *Service) copyFile(ctx context.Context, t *quan.Task) (quan.StoredFile, error) {
	r, err := s.Files.Open(t.FilePath)
	if err != nil {
		return quan.StoredFile{}, err
	}
	defer r.Close()
	f, err := s.Upload(ctx, r)
	if err != nil {
		return quan.StoredFile{}, err
	}
	if f.SHA256 != t.FileSHA256 || f.Size != t.FileSize {
		s.Files.Remove(f.Path)
		return quan.StoredFile{}, quan.Errorf(quan.EINTERNAL, "the stored file of task %d changed since it was uploaded", t.ID)
	}
	return f, nil
}
