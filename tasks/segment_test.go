package tasks_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/disk"
	"github.com/quanhq/quan/internal/testrig"
	"github.com/quanhq/quan/report"
	"github.com/quanhq/quan/rules"
	"github.com/quanhq/quan/sheet"
	"github.com/quanhq/quan/sqlite"
	"github.com/quanhq/quan/tasks"
	"github.com/quanhq/quan/templates"
)

// segmentFixture is a store holding the facts of 1,000 users, a template
// and the services that distribute it to a segment, on one clock.
type segmentFixture struct {
	st    *sqlite.Store
	tasks *tasks.Service
	tpl   *quan.Template
	now   time.Time
	files *disk.Files
	// facts are the users' facts on file, by user.
	facts map[int64]quan.UserFacts
}

// segmentRule targets users 4k+2 and 4k+3 that are tagged vip (every
// third user): 1,000 users hold 167 such.
const segmentRule = `user.level >= 2 && "vip" in user.tags`

func newSegmentFixture(t *testing.T, stock int64) *segmentFixture {
	t.Helper()
	ctx := t.Context()
	st := testrig.Store(t)
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	engine, err := rules.New(rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	files := &disk.Files{Dir: t.TempDir()}
	f := &segmentFixture{st: st, now: now, files: files, facts: map[int64]quan.UserFacts{}}
	f.tasks = &tasks.Service{
		Tasks: st, Templates: st, Files: files, Now: clock, ChunkSize: 50,
		Rules: engine, Facts: st,
		Check: func(ctx context.Context, path, fileName, name string) error {
			return sheet.Check(ctx, path, sheet.Options{Name: fileName, Sheet: name})
		},
		Count: func(ctx context.Context, path, name string) (int64, error) {
			return sheet.Count(ctx, path, sheet.Options{Sheet: name})
		},
	}
	var facts []quan.UserFacts
	for i := range int64(1000) {
		u := quan.UserFacts{UserID: 10_000 + i, Level: i % 4, Tags: []string{}}
		if i%3 == 0 {
			u.Tags = append(u.Tags, "vip")
		}
		facts = append(facts, u)
		f.facts[u.UserID] = u
	}
	if err := st.PutUserFacts(ctx, now, facts); err != nil {
		t.Fatal(err)
	}
	templates := &templates.Service{Store: st, Now: clock}
	spec := testrig.DirectSpec(now.Add(-time.Hour))
	spec.Stock = stock
	if f.tpl, err = templates.Create(ctx, testrig.Merchant1, spec); err != nil {
		t.Fatal(err)
	}
	if f.tpl, err = templates.Activate(ctx, testrig.Merchant1, f.tpl.ID); err != nil {
		t.Fatal(err)
	}
	return f
}

// matching returns the users on file the segment rule is true of, in
// ascending order, decided in Go.
func (f *segmentFixture) matching() []int64 {
	var out []int64
	for _, u := range slices.Sorted(maps.Keys(f.facts)) {
		if fs := f.facts[u]; fs.Level >= 2 && slices.Contains(fs.Tags, "vip") {
			out = append(out, u)
		}
	}
	return out
}

// runner is a distributor of the fixture's tasks named owner, reading
// their files as the app does.
func (f *segmentFixture) runner(owner string) *tasks.Runner {
	return &tasks.Runner{
		Store: f.st, Templates: f.st, Coupons: f.st,
		Open: func(_ context.Context, t *quan.Task) (quan.RowReader, error) {
			return sheet.OpenRows(t.FilePath, sheet.Options{Sheet: t.Sheet})
		},
		Report: report.Failures{}, ReportPath: f.files.ReportPath,
		Owner: owner, Lease: time.Minute,
		Now: func() time.Time { return f.now },
	}
}

// run has a runner run the one due task to its end.
func (f *segmentFixture) run(t *testing.T, owner string) {
	t.Helper()
	if ran, err := f.runner(owner).RunOne(t.Context()); err != nil || !ran {
		t.Fatalf("RunOne = %v, %v; want the task run", ran, err)
	}
}

// holders returns, by user, how many coupons of the template each holds.
func (f *segmentFixture) holders(t *testing.T) map[int64]int64 {
	t.Helper()
	out := map[int64]int64{}
	for h, err := range f.st.Holdings(t.Context(), f.tpl.ID, time.Time{}) {
		if err != nil {
			t.Fatal(err)
		}
		out[h.UserID] = h.Count
	}
	return out
}

func (f *segmentFixture) task(t *testing.T, id int64) *quan.Task {
	t.Helper()
	task, err := f.st.Task(t.Context(), quan.AnyShop, id)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

func TestSegmentTask(t *testing.T) {
	t.Run("DryRunCountsThenRunForRealIssuesEachOnce", func(t *testing.T) {
		f := newSegmentFixture(t, 1000)
		want := f.matching()
		if len(want) != 167 {
			t.Fatalf("the fixture matches %d users, want 167", len(want))
		}
		dry, err := f.tasks.Create(t.Context(), testrig.Merchant1, tasks.NewTask{Name: "会员专享", TemplateID: f.tpl.ID, DryRun: true, Segment: segmentRule})
		if err != nil {
			t.Fatal(err)
		}
		if dry.Segment != segmentRule || dry.FileName != tasks.SegmentFileName || dry.FileSize == 0 {
			t.Fatalf("created %+v; want the segment recorded and its file kept", dry)
		}
		f.run(t, "runner")
		got := f.task(t, dry.ID)
		if got.Status != quan.TaskSucceeded || got.Counts.Rows != int64(len(want)) || got.Counts.Valid != int64(len(want)) ||
			got.Counts.Issued != 0 || got.Segment != segmentRule {
			t.Fatalf("dry run %s: %+v segment %q; want succeeded, %d rows valid, none issued", got.Status, got.Counts, got.Segment, len(want))
		}
		if n := len(f.holders(t)); n != 0 {
			t.Fatalf("a dry run issued to %d users", n)
		}

		// The facts change after the dry run: the real run issues to the
		// users the dry run counted.
		late := quan.UserFacts{UserID: 10_001, Level: 3, Tags: []string{"vip"}}
		if err := f.st.PutUserFacts(t.Context(), f.now, []quan.UserFacts{late}); err != nil {
			t.Fatal(err)
		}
		real, err := f.tasks.RunForReal(t.Context(), testrig.Merchant1, dry.ID, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		f.run(t, "runner")
		got = f.task(t, real.ID)
		if got.Status != quan.TaskSucceeded || got.Counts.Issued != int64(len(want)) || got.Counts.FailedTotal() != 0 ||
			got.Segment != segmentRule {
			t.Fatalf("real run %s (%s): %+v segment %q; want %d issued", got.Status, got.Reason, got.Counts, got.Segment, len(want))
		}
		checkHolders(t, f.holders(t), want)
	})

	t.Run("FailuresReportTheSegmentsUsers", func(t *testing.T) {
		f := newSegmentFixture(t, 100)
		want := f.matching()
		task, err := f.tasks.Create(t.Context(), testrig.Merchant1, tasks.NewTask{Name: "vip", TemplateID: f.tpl.ID, Segment: segmentRule})
		if err != nil {
			t.Fatal(err)
		}
		f.run(t, "runner")
		got := f.task(t, task.ID)
		if got.Status != quan.TaskSucceeded || got.Counts.Issued != 100 || got.Counts.Failed.OutOfStock != int64(len(want)-100) ||
			got.ReportPath == "" {
			t.Fatalf("task %s: %+v, report %q; want 100 issued, the rest out of stock, and a report", got.Status, got.Counts, got.ReportPath)
		}
		checkHolders(t, f.holders(t), want[:100])
		// The report names the users the file holds, from line 102 on.
		fails, err := f.tasks.Failures(t.Context(), testrig.Merchant1, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		i := 100
		for r, err := range fails {
			if err != nil {
				t.Fatal(err)
			}
			if r.Line != int64(i+2) || r.Raw != fmt.Sprint(want[i]) || r.Cause != quan.CauseOutOfStock {
				t.Fatalf("failure %+v; want line %d, user %d out of stock", r, i+2, want[i])
			}
			i++
		}
		if i != len(want) {
			t.Fatalf("report ends at row %d of %d", i, len(want))
		}
	})

	t.Run("ResumedAfterACrashIssuesEachOnce", func(t *testing.T) {
		f := newSegmentFixture(t, 1000)
		want := f.matching()
		task, err := f.tasks.Create(t.Context(), testrig.Merchant1, tasks.NewTask{Name: "vip", TemplateID: f.tpl.ID, Segment: segmentRule})
		if err != nil {
			t.Fatal(err)
		}
		// A runner claims the task, applies its first chunk (the first 50
		// users of the segment, as its file holds them) and dies.
		ctx := t.Context()
		if got, err := f.st.ClaimTask(ctx, "dead", f.now, f.now); err != nil || got == nil || got.ID != task.ID {
			t.Fatalf("ClaimTask = %v, %v", got, err)
		}
		c := &quan.Chunk{TaskID: task.ID, Seq: 1, Owner: "dead", Now: f.now}
		for i, u := range want[:50] {
			c.Rows = append(c.Rows, quan.ChunkRow{Line: int64(i + 2), UserID: u, Raw: fmt.Sprint(u)})
		}
		if _, err := f.st.ApplyChunk(ctx, c); err != nil {
			t.Fatal(err)
		}
		// Meanwhile the facts change: a user of the first chunk leaves the
		// segment and one joins it, which a runner reading the facts
		// again would see.
		if err := f.st.PutUserFacts(ctx, f.now, []quan.UserFacts{
			{UserID: want[0], Level: 0, Tags: []string{}},
			{UserID: 10_001, Level: 3, Tags: []string{"vip"}},
		}); err != nil {
			t.Fatal(err)
		}
		// The next runner (the dead one's lease has expired) finishes it.
		f.now = f.now.Add(time.Second)
		f.run(t, "next")
		got := f.task(t, task.ID)
		if got.Status != quan.TaskSucceeded || got.Counts.Rows != int64(len(want)) || got.Counts.Issued != int64(len(want)) ||
			got.ChunksDone != got.ChunksTotal || got.ChunksTotal != 4 {
			t.Fatalf("task %s (%s) after %d of %d chunks: %+v; want %d issued in 4 chunks",
				got.Status, got.Reason, got.ChunksDone, got.ChunksTotal, got.Counts, len(want))
		}
		checkHolders(t, f.holders(t), want)
	})

	t.Run("TheFileHoldsWhatTheRuleMatches", func(t *testing.T) {
		// Rules the store decides alone (the rule is its filter), rules
		// it narrows for the rule to decide, and one it cannot narrow;
		// users across the ranges the segment reads at once.
		f := newSegmentFixture(t, 10)
		attrs := []quan.UserFacts{}
		for u := int64(10_000); u < 10_300; u += 3 {
			fs := f.facts[u]
			fs.Attrs = map[string]string{"city": []string{"hz", "sh"}[u/3%2]}
			fs.Region = []string{"sh", "sh ", "上海"}[u/3%3]
			attrs = append(attrs, fs)
			f.facts[u] = fs
		}
		if err := f.st.PutUserFacts(t.Context(), f.now, attrs); err != nil {
			t.Fatal(err)
		}
		engine, err := rules.New(rules.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, rule := range []string{
			segmentRule,
			`user.level in [1, 3] || user.userId < 10010`,
			`user.region == "sh" && user.level != 0`,
			`user.level >= 2 && user.attrs["city"] == "hz"`,
			`"vip" in user.tags && user.attrs.?city.orValue("") == "sh"`,
			`user.tags.exists(t, t.startsWith("v")) || user.userId % 7 == 0`,
		} {
			r, err := engine.Compile(quan.RuleSegment, rule)
			if err != nil {
				t.Fatal(err)
			}
			var want []int64
			for _, u := range slices.Sorted(maps.Keys(f.facts)) {
				fs := f.facts[u]
				if ok, err := r.Eval(&fs, nil, f.now); ok && err == nil {
					want = append(want, u)
				}
			}
			task, err := f.tasks.Create(t.Context(), testrig.Merchant1, tasks.NewTask{Name: "vip", TemplateID: f.tpl.ID, DryRun: true, Segment: rule})
			if err != nil {
				t.Fatalf("%s: %v", rule, err)
			}
			data, err := os.ReadFile(task.FilePath)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
			var got []int64
			for _, l := range lines[1:] {
				u, err := strconv.ParseInt(l, 10, 64)
				if err != nil {
					t.Fatalf("%s: line %q of the file", rule, l)
				}
				got = append(got, u)
			}
			if lines[0] != "userId" || !slices.Equal(got, want) {
				t.Errorf("%s: the file holds %s and %d users %v...; want %d users %v...", rule, lines[0], len(got), got[:min(5, len(got))], len(want), want[:min(5, len(want))])
			}
		}
	})

	t.Run("ErrInvalid", func(t *testing.T) {
		f := newSegmentFixture(t, 10)
		upload, err := f.tasks.Upload(t.Context(), strings.NewReader("userId\n1\n"))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name  string
			in    tasks.NewTask
			field string
			msg   string
		}{
			{"Undeclared", tasks.NewTask{Segment: "user.levl >= 2"}, "segment", "1:5: "},
			{"NotBool", tasks.NewTask{Segment: "user.level"}, "segment", "must give true or false"},
			{"Order", tasks.NewTask{Segment: "order.total > 0"}, "segment", "1:1: undeclared reference to 'order'"},
			{"NoUserMatches", tasks.NewTask{Segment: "user.level > 3"}, "segment", "no user matches the segment: 1000 users"},
			{"Undecided", tasks.NewTask{Segment: `user.attrs["city"] == "shanghai"`}, "segment", "could not decide on 1000 of them"},
			{"FileAndSegment", tasks.NewTask{Segment: segmentRule, FileName: "users.csv", File: upload}, "segment", "not both"},
			{"Sheet", tasks.NewTask{Segment: segmentRule, Sheet: "Sheet1"}, "sheet", "file only"},
			{"Neither", tasks.NewTask{}, "file", "or give a segment"},
		} {
			t.Run(c.name, func(t *testing.T) {
				in := c.in
				in.Name, in.TemplateID = "vip", f.tpl.ID
				_, err := f.tasks.Create(t.Context(), testrig.Merchant1, in)
				e, ok := err.(*quan.Error)
				if !ok || e.Code != quan.EINVALID || len(e.Fields) == 0 || e.Fields[0].Field != c.field ||
					!strings.Contains(e.Fields[0].Message, c.msg) {
					t.Fatalf("Create = %v (%+v); want EINVALID naming %s with %q", err, e, c.field, c.msg)
				}
			})
		}
		if n, _, err := f.st.Tasks(t.Context(), quan.TaskFilter{ShopNo: quan.AnyShop, Limit: 10}); err != nil || len(n) != 0 {
			t.Fatalf("tasks %v, %v; want none created", n, err)
		}
	})
}

// checkHolders checks that exactly the users want hold one coupon each.
func checkHolders(t *testing.T, got map[int64]int64, want []int64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d users hold coupons, want %d", len(got), len(want))
	}
	for _, u := range want {
		if got[u] != 1 {
			t.Fatalf("user %d holds %d coupons, want 1", u, got[u])
		}
	}
}
