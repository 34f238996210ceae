package sqlite_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/sqlite"
)

// distribution stores an active template of stock with a per-user limit of
// 1 and a task running it, held by "runner".
func distribution(t *testing.T, s *sqlite.Store, stock int64) (*quan.Template, *quan.Task) {
	t.Helper()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tpl := &quan.Template{
		ShopNo: 1,
		TemplateSpec: quan.TemplateSpec{
			Name: "bulk", Kind: quan.KindDirect, Rule: quan.Rule{Amount: 100}, Source: quan.SourceShop,
			Scope: quan.Scope{Kind: quan.ScopeAll}, IssueStart: now, IssueEnd: now.AddDate(0, 1, 0),
			Validity: quan.Validity{Kind: quan.ValidRelative, Hours: 24}, PerUserLimit: 1,
		},
		Stock: stock, TotalStock: stock, Status: quan.TemplateActive, CreatedBy: "test", CreatedAt: now, UpdatedAt: now,
	}
	if err := s.CreateTemplate(t.Context(), tpl, "test"); err != nil {
		t.Fatal(err)
	}
	task := &quan.Task{
		ShopNo: 1, TemplateID: tpl.ID, Name: "bulk", FileName: "u.csv", FileSize: 10, ChunkSize: 2,
		Status: quan.TaskRunning, Owner: "runner", LeaseUntil: now.Add(time.Hour),
		CreatedBy: "test", CreatedAt: now, StartedAt: now, UpdatedAt: now,
	}
	if err := s.CreateTask(t.Context(), task); err != nil {
		t.Fatal(err)
	}
	return tpl, task
}

func TestApplyChunkSetsCausesOnlyOnCommit(t *testing.T) {
	s := sqlite.NewStore(openDB(t, filepath.Join(t.TempDir(), "quan.db")))
	tpl, task := distribution(t, s, 2)
	first := &quan.Chunk{TaskID: task.ID, Owner: "runner", Seq: 1, Rows: []quan.ChunkRow{{Line: 2, UserID: 20, Raw: "20"}}, Now: tpl.IssueStart}
	if _, err := s.ApplyChunk(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	c := &quan.Chunk{TaskID: task.ID, Owner: "runner", Seq: 1, Now: tpl.IssueStart,
		Rows: []quan.ChunkRow{{Line: 3, UserID: 10, Raw: "10"}, {Line: 4, UserID: 11, Raw: "11"}}}
	if _, err := s.ApplyChunk(t.Context(), c); !errors.Is(err, quan.ErrChunkApplied) {
		t.Fatalf("chunk 1 again: %v, want ErrChunkApplied", err)
	}
	// A runner may retry a refused chunk as it is: its rows are undecided
	// still, not decided against a plan that was rolled back.
	for _, r := range c.Rows {
		if r.Cause != "" {
			t.Errorf("a refused chunk's line %d has cause %q", r.Line, r.Cause)
		}
	}
	c.Seq = 2
	if _, err := s.ApplyChunk(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	if c.Rows[0].Cause != "" || c.Rows[1].Cause != quan.CauseOutOfStock {
		t.Errorf("an applied chunk's causes are %q, %q; want \"\", %q", c.Rows[0].Cause, c.Rows[1].Cause, quan.CauseOutOfStock)
	}
}

func TestApplyChunkRefusesUndecidableRows(t *testing.T) {
	s := sqlite.NewStore(openDB(t, filepath.Join(t.TempDir(), "quan.db")))
	tpl, task := distribution(t, s, 10)
	for name, rows := range map[string][]quan.ChunkRow{
		"a user undecided twice": {{Line: 2, UserID: 10, Raw: "10"}, {Line: 3, UserID: 10, Raw: "10"}},
		"no user":                {{Line: 2, Raw: "?"}},
		"an unknown cause":       {{Line: 2, Raw: "x", Cause: "smudged"}},
	} {
		c := &quan.Chunk{TaskID: task.ID, Owner: "runner", Seq: 1, Rows: rows, Now: tpl.IssueStart}
		if _, err := s.ApplyChunk(t.Context(), c); !errors.Is(err, quan.ErrInvalid) {
			t.Errorf("%s: ApplyChunk error %v, want ErrInvalid", name, err)
		}
	}
	got, err := s.Task(t.Context(), 1, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ChunksDone != 0 || got.Counts != (quan.TaskCounts{}) {
		t.Errorf("after refused chunks the task is at chunk %d with counts %+v; want nothing applied", got.ChunksDone, got.Counts)
	}
	if _, err := s.ApplyChunk(t.Context(), &quan.Chunk{TaskID: 999, Owner: "runner", Seq: 1}); !errors.Is(err, quan.ErrNotFound) {
		t.Errorf("a chunk of a missing task: %v, want ErrNotFound", err)
	}
}

func TestCheckpointEmptiesTheWAL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "quan.db")
	db := openDB(t, path)
	s := sqlite.NewStore(db)
	tpl, task := distribution(t, s, 100)
	c := &quan.Chunk{TaskID: task.ID, Owner: "runner", Seq: 1, Now: tpl.IssueStart}
	for u := range int64(50) {
		c.Rows = append(c.Rows, quan.ChunkRow{Line: u + 2, UserID: u + 1, Raw: "u"})
	}
	if _, err := s.ApplyChunk(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	walSize := func() int64 {
		t.Helper()
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	if walSize() == 0 {
		t.Fatal("the WAL is empty before the checkpoint; want the chunk's pages")
	}
	if err := db.Checkpoint(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := walSize(); n != 0 {
		t.Errorf("after the checkpoint the WAL is %d bytes, want 0", n)
	}
	if got, err := s.UserCoupons(t.Context(), 7, tpl.ID); err != nil || len(got) != 1 {
		t.Errorf("after the checkpoint user 7 holds %d coupons, %v; want 1", len(got), err)
	}
}

func TestFailuresFallBackToTheParsedID(t *testing.T) {
	s := sqlite.NewStore(openDB(t, filepath.Join(t.TempDir(), "quan.db")))
	tpl, task := distribution(t, s, 1)
	// The runner keeps the text of the rows its file check refused only.
	c := &quan.Chunk{TaskID: task.ID, Owner: "runner", Seq: 1, Now: tpl.IssueStart, Rows: []quan.ChunkRow{
		{Line: 2, UserID: 10}, {Line: 3, UserID: 11}, {Line: 4, Raw: "x1", Cause: quan.CauseInvalidID}}}
	if _, err := s.ApplyChunk(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	got, err := s.Failures(t.Context(), task.ID, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []quan.Failure{{Line: 3, Raw: "11", Cause: quan.CauseOutOfStock}, {Line: 4, Raw: "x1", Cause: quan.CauseInvalidID}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("failures %+v, want %+v", got, want)
	}
}
