package quantest

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// chunkNow is when the suite applies chunks: inside the issue window of
// newTemplate's templates.
var chunkNow = base.Add(time.Hour)

// runner is the owner of the suite's running tasks.
const runner = "runner-a"

// activeTemplate stores an active template of shop 1 with stock and
// per-user limit.
func activeTemplate(t testing.TB, s TaskStores, name string, stock, limit int64) *quan.Template {
	t.Helper()
	tpl := newTemplate(t, 1, name)
	tpl.Status = quan.TemplateActive
	tpl.Stock, tpl.TotalStock = stock, stock
	tpl.PerUserLimit = limit
	mustValid(t, tpl)
	return create(t, s.Templates, tpl)
}

// runningTask stores a task distributing tpl, running and held by runner.
func runningTask(t *testing.T, s TaskStores, tpl *quan.Template, name string) *quan.Task {
	t.Helper()
	task := newTask(t, tpl.ShopNo, tpl.ID, name)
	task.Status, task.StartedAt, task.UpdatedAt = quan.TaskRunning, base, base
	task.Owner, task.LeaseUntil = runner, chunkNow.Add(time.Hour)
	return createTask(t, s, task)
}

// user is an undecided row of user id on line.
func user(line, id int64) quan.ChunkRow {
	return quan.ChunkRow{Line: line, UserID: id, Raw: strconv.FormatInt(id, 10)}
}

// bad is a row the file check refused.
func bad(line int64, raw string, cause quan.Cause) quan.ChunkRow {
	return quan.ChunkRow{Line: line, Raw: raw, Cause: cause}
}

// chunk returns chunk seq of task, held by the task's owner, applied at
// chunkNow plus seq seconds, having read 1000 bytes a chunk.
func chunk(task *quan.Task, seq int64, rows ...quan.ChunkRow) *quan.Chunk {
	return &quan.Chunk{
		TaskID:    task.ID,
		Owner:     task.Owner,
		Seq:       seq,
		Rows:      rows,
		BytesRead: seq * 1000,
		Now:       chunkNow.Add(time.Duration(seq) * time.Second),
	}
}

// apply applies c, failing the test on error, and checks the counts it
// returns against want.
func apply(t *testing.T, s TaskStores, c *quan.Chunk, want quan.TaskCounts) {
	t.Helper()
	got, err := s.Tasks.ApplyChunk(t.Context(), c)
	if err != nil {
		t.Fatalf("ApplyChunk(task %d, chunk %d): %v", c.TaskID, c.Seq, err)
	}
	if got != want {
		t.Errorf("ApplyChunk(task %d, chunk %d) counts\n got %+v\nwant %+v", c.TaskID, c.Seq, got, want)
	}
}

// issued is the count of a chunk whose every row got a coupon.
func issued(n int64) quan.TaskCounts { return quan.TaskCounts{Rows: n, Valid: n, Issued: n} }

// coupons returns the coupons user holds of template (0: all).
func coupons(t *testing.T, s TaskStores, user, template int64) []*quan.Coupon {
	t.Helper()
	cs, err := s.Coupons.UserCoupons(t.Context(), user, template)
	if err != nil {
		t.Fatalf("UserCoupons(%d, %d): %v", user, template, err)
	}
	return cs
}

// assertCoupons checks that user holds exactly want of template, newest
// first. IDs are the store's to choose; the rest must be what
// quan.NewCoupon made.
func assertCoupons(t *testing.T, s TaskStores, user, template int64, want ...quan.Coupon) {
	t.Helper()
	got := coupons(t, s, user, template)
	if len(got) != len(want) {
		t.Fatalf("user %d holds %d coupons of template %d, want %d", user, len(got), template, len(want))
	}
	for i, g := range got {
		w := want[i]
		if g.ID <= 0 {
			t.Errorf("user %d's coupon %d has id %d", user, i, g.ID)
		}
		if i > 0 && g.ID >= got[i-1].ID {
			t.Errorf("user %d's coupons are not newest (highest id) first: %d after %d", user, g.ID, got[i-1].ID)
		}
		for _, tm := range []struct {
			field     string
			got, want time.Time
		}{
			{"ValidStart", g.ValidStart, w.ValidStart},
			{"ValidEnd", g.ValidEnd, w.ValidEnd},
			{"CreatedAt", g.CreatedAt, w.CreatedAt},
			{"UpdatedAt", g.UpdatedAt, w.UpdatedAt},
		} {
			if !tm.got.Equal(tm.want) {
				t.Errorf("user %d's coupon seq %d: %s = %v, want %v", user, w.Seq, tm.field, tm.got, tm.want)
			}
		}
		if _, err := quan.ParseCode(g.Code); err != nil {
			t.Errorf("user %d's coupon %d has no valid code: %v", user, i, err)
		}
		gc, wc := *g, w
		for _, c := range []*quan.Coupon{&gc, &wc} {
			c.ID, c.Code = 0, ""
			c.ValidStart, c.ValidEnd, c.CreatedAt, c.UpdatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		}
		if gc != wc {
			t.Errorf("user %d's coupon %d differs:\n got %+v\nwant %+v", user, i, gc, wc)
		}
	}
}

// failures returns every failed row of task.
func failures(t *testing.T, s TaskStores, task int64) []quan.Failure {
	t.Helper()
	fs, err := s.Tasks.Failures(t.Context(), task, 0, 1_000_000)
	if err != nil {
		t.Fatalf("Failures(%d): %v", task, err)
	}
	return fs
}

func assertFailures(t *testing.T, s TaskStores, task int64, want ...quan.Failure) {
	t.Helper()
	if got := failures(t, s, task); !slices.Equal(got, want) {
		t.Errorf("failures of task %d:\n got %+v\nwant %+v", task, got, want)
	}
}

// failed is the failure a row records.
func failed(r quan.ChunkRow, cause quan.Cause) quan.Failure {
	return quan.Failure{Line: r.Line, Raw: r.Raw, Cause: cause}
}

func stats(t *testing.T, s TaskStores, template, task int64) quan.CouponStats {
	t.Helper()
	st, err := s.Coupons.CouponStats(t.Context(), template, task)
	if err != nil {
		t.Fatalf("CouponStats(%d, %d): %v", template, task, err)
	}
	return st
}

// assertInvariants checks what must hold of template tpl whatever
// happened, when only tasks, all of its tasks, took its stock: the stock
// taken is the coupons created, nobody holds more than the limit, and the
// coupons from each task are its issued count.
func assertInvariants(t *testing.T, s TaskStores, tpl *quan.Template, tasks ...*quan.Task) {
	t.Helper()
	got := get(t, s.Templates, tpl.ID)
	st := stats(t, s, tpl.ID, 0)
	if taken := got.TotalStock - got.Stock; taken != st.Coupons {
		t.Errorf("template %d: %d of the stock taken, %d coupons created", tpl.ID, taken, st.Coupons)
	}
	if got.Stock < 0 {
		t.Errorf("template %d: stock %d", tpl.ID, got.Stock)
	}
	if st.MaxPerUser > got.PerUserLimit {
		t.Errorf("template %d: a user holds %d coupons, above the limit of %d", tpl.ID, st.MaxPerUser, got.PerUserLimit)
	}
	var sum int64
	for _, task := range tasks {
		n := getTask(t, s, task.ID).Counts.Issued
		sum += n
		if from := stats(t, s, tpl.ID, task.ID).FromTask; from != n {
			t.Errorf("template %d: %d coupons from task %d, which counts %d issued", tpl.ID, from, task.ID, n)
		}
	}
	if st.FromTask != sum || st.Coupons != sum {
		t.Errorf("template %d: %d coupons, %d from tasks; the tasks count %d issued", tpl.ID, st.Coupons, st.FromTask, sum)
	}
}

func testApplyIssues(t *testing.T, s TaskStores) {
	fixed := activeTemplate(t, s, "fixed validity", 10, 1)
	relative := withKind(t, newTemplate(t, 1, "relative validity"), quan.KindDiscount) // 72 h from receipt
	relative.Status = quan.TemplateActive
	relative.Stock, relative.TotalStock = 10, 10
	relative.IssueEnd = chunkNow.Add(24 * time.Hour) // cuts the validity short
	create(t, s.Templates, relative)

	for _, tpl := range []*quan.Template{fixed, relative} {
		task := runningTask(t, s, tpl, "issue")
		c := chunk(task, 1, user(2, 1001), user(3, 1002), user(4, 9_223_372_036_854_775_807))
		apply(t, s, c, issued(3))

		for _, r := range c.Rows {
			assertCoupons(t, s, r.UserID, tpl.ID, quan.NewCoupon(tpl, r.UserID, 1, task.ID, c.Now))
		}
		if got := get(t, s.Templates, tpl.ID); got.Stock != 7 || got.TotalStock != 10 {
			t.Errorf("template %d: stock %d of %d, want 7 of 10", tpl.ID, got.Stock, got.TotalStock)
		}
		want := *task
		want.Counts = issued(3)
		want.ChunksDone, want.BytesRead, want.UpdatedAt = 1, 1000, c.Now
		assertTask(t, getTask(t, s, task.ID), &want)
		assertFailures(t, s, task.ID)
		assertInvariants(t, s, tpl, task)
	}
}

func testApplyPerUserLimit(t *testing.T, s TaskStores) {
	one := activeTemplate(t, s, "one per user", 100, 1)
	two := activeTemplate(t, s, "two per user", 100, 2)

	// Limit 1: a user who holds one is refused; the others are served.
	t1 := runningTask(t, s, one, "first")
	apply(t, s, chunk(t1, 1, user(2, 1), user(3, 2)), issued(2))
	t2 := runningTask(t, s, one, "again")
	c := chunk(t2, 1, user(2, 1), user(3, 3))
	apply(t, s, c, quan.TaskCounts{Rows: 2, Valid: 1, Issued: 1, Failed: quan.FailedCounts{LimitReached: 1}})
	assertFailures(t, s, t2.ID, failed(c.Rows[0], quan.CauseLimitReached))
	assertCoupons(t, s, 1, one.ID, quan.NewCoupon(one, 1, 1, t1.ID, chunkNow.Add(time.Second)))
	assertCoupons(t, s, 3, one.ID, quan.NewCoupon(one, 3, 1, t2.ID, c.Now))

	// Limit 2: user 1 holds a coupon of the other template, which does not
	// count; then one of this one, so the next is seq 2; then two.
	t3 := runningTask(t, s, two, "first of two")
	c3 := chunk(t3, 1, user(2, 1))
	apply(t, s, c3, issued(1))
	t4 := runningTask(t, s, two, "second of two")
	c4 := chunk(t4, 1, user(2, 1), user(3, 2))
	apply(t, s, c4, issued(2))
	t5 := runningTask(t, s, two, "third of two")
	c5 := chunk(t5, 1, user(2, 2), user(3, 1))
	apply(t, s, c5, quan.TaskCounts{Rows: 2, Valid: 1, Issued: 1, Failed: quan.FailedCounts{LimitReached: 1}})
	assertFailures(t, s, t5.ID, failed(c5.Rows[1], quan.CauseLimitReached))

	assertCoupons(t, s, 1, two.ID,
		quan.NewCoupon(two, 1, 2, t4.ID, c4.Now),
		quan.NewCoupon(two, 1, 1, t3.ID, c3.Now))
	assertCoupons(t, s, 2, two.ID,
		quan.NewCoupon(two, 2, 2, t5.ID, c5.Now),
		quan.NewCoupon(two, 2, 1, t4.ID, c4.Now))
	if got := coupons(t, s, 1, 0); len(got) != 3 {
		t.Errorf("user 1 holds %d coupons in all, want 3", len(got))
	}
	assertInvariants(t, s, one, t1, t2)
	assertInvariants(t, s, two, t3, t4, t5)
}

func testApplyOutOfStock(t *testing.T, s TaskStores) {
	tpl := activeTemplate(t, s, "scarce", 4, 1)
	early := runningTask(t, s, tpl, "early")
	apply(t, s, chunk(early, 1, user(2, 50)), issued(1)) // user 50 holds one; 3 left

	task := runningTask(t, s, tpl, "runs out")
	c := chunk(task, 1,
		user(2, 1),
		user(3, 50), // at the limit: refused without taking stock
		user(4, 2),
		bad(5, "x", quan.CauseInvalidID),
		user(6, 3),
		user(7, 4),
		user(8, 5),
	)
	apply(t, s, c, quan.TaskCounts{Rows: 7, Valid: 3, Issued: 3, Failed: quan.FailedCounts{
		InvalidID: 1, LimitReached: 1, OutOfStock: 2}})
	for _, u := range []int64{1, 2, 3} {
		if n := len(coupons(t, s, u, tpl.ID)); n != 1 {
			t.Errorf("user %d holds %d coupons, want 1: stock goes in file order", u, n)
		}
	}
	for _, u := range []int64{4, 5} {
		if n := len(coupons(t, s, u, tpl.ID)); n != 0 {
			t.Errorf("user %d holds %d coupons, want none: the stock ran out before", u, n)
		}
	}
	if got := get(t, s.Templates, tpl.ID); got.Stock != 0 {
		t.Errorf("stock %d, want 0", got.Stock)
	}

	// Once out, a user at the limit is still limit_reached: the limit is
	// checked first.
	c2 := chunk(task, 2, user(9, 6), user(10, 50))
	apply(t, s, c2, quan.TaskCounts{Rows: 2, Failed: quan.FailedCounts{OutOfStock: 1, LimitReached: 1}})
	assertFailures(t, s, task.ID,
		failed(c.Rows[1], quan.CauseLimitReached),
		failed(c.Rows[3], quan.CauseInvalidID),
		failed(c.Rows[5], quan.CauseOutOfStock),
		failed(c.Rows[6], quan.CauseOutOfStock),
		failed(c2.Rows[0], quan.CauseOutOfStock),
		failed(c2.Rows[1], quan.CauseLimitReached),
	)
	assertInvariants(t, s, tpl, early, task)
}

func testApplyTemplateInactive(t *testing.T, s TaskStores) {
	relative := func(name string) *quan.Template {
		tpl := withKind(t, newTemplate(t, 1, name), quan.KindDirect)
		tpl.Validity = quan.Validity{Kind: quan.ValidRelative, Hours: 24}
		tpl.Status = quan.TemplateActive
		return tpl
	}
	paused := relative("paused")
	paused.Status = quan.TemplatePaused
	ended := relative("ended")
	ended.Status = quan.TemplateEnded
	draft := relative("draft")
	draft.Status = quan.TemplateDraft
	early := relative("not yet issuing")
	early.IssueStart = chunkNow.Add(time.Hour)
	late := relative("issue window closed")
	late.IssueEnd = chunkNow.Add(time.Second) // the chunk's Now: the end is excluded

	for _, tpl := range []*quan.Template{paused, ended, draft, early, late} {
		mustValid(t, tpl)
		create(t, s.Templates, tpl)
		task := runningTask(t, s, tpl, tpl.Name)
		c := chunk(task, 1, user(2, 1), bad(3, "", quan.CauseInvalidID), user(4, 2))
		apply(t, s, c, quan.TaskCounts{Rows: 3, Failed: quan.FailedCounts{InvalidID: 1, TemplateInactive: 2}})
		assertFailures(t, s, task.ID,
			failed(c.Rows[0], quan.CauseTemplateInactive),
			failed(c.Rows[1], quan.CauseInvalidID),
			failed(c.Rows[2], quan.CauseTemplateInactive))
		if got := get(t, s.Templates, tpl.ID); got.Stock != tpl.Stock {
			t.Errorf("%s template: stock %d, want %d", tpl.Name, got.Stock, tpl.Stock)
		}
		assertCoupons(t, s, 1, tpl.ID)
		assertInvariants(t, s, tpl, task)
	}
}

func testApplyPreDecided(t *testing.T, s TaskStores) {
	tpl := activeTemplate(t, s, "checked file", 100, 1)
	task := runningTask(t, s, tpl, "checked")
	c := chunk(task, 1,
		bad(2, "abc", quan.CauseInvalidID),
		bad(3, "1.23456789012346E+18", quan.CauseInexactNumber),
		user(4, 7),
		bad(5, " 7", quan.CauseDuplicate),
		bad(6, "", quan.CauseInvalidID),
		user(7, 8),
		bad(8, "用户", quan.CauseInvalidID),
		// Refused by the template's eligibility rule before the store.
		quan.ChunkRow{Line: 9, UserID: 9, Raw: "9", Cause: quan.CauseNotEligible},
	)
	apply(t, s, c, quan.TaskCounts{Rows: 8, Valid: 2, Issued: 2, Failed: quan.FailedCounts{
		InvalidID: 3, InexactNumber: 1, Duplicate: 1, NotEligible: 1}})
	assertFailures(t, s, task.ID,
		failed(c.Rows[0], quan.CauseInvalidID),
		failed(c.Rows[1], quan.CauseInexactNumber),
		failed(c.Rows[3], quan.CauseDuplicate),
		failed(c.Rows[4], quan.CauseInvalidID),
		failed(c.Rows[6], quan.CauseInvalidID),
		failed(c.Rows[7], quan.CauseNotEligible),
	)
	assertCoupons(t, s, 7, tpl.ID, quan.NewCoupon(tpl, 7, 1, task.ID, c.Now))
	assertInvariants(t, s, tpl, task)
}

func testApplyAcrossChunks(t *testing.T, s TaskStores) {
	tpl := activeTemplate(t, s, "three chunks", 5, 1)
	task := runningTask(t, s, tpl, "chunked")
	chunks := []*quan.Chunk{
		chunk(task, 1, user(2, 1), bad(3, "-1", quan.CauseInvalidID), user(4, 2)),
		chunk(task, 2, user(5, 3), bad(6, "1", quan.CauseDuplicate), user(7, 4)),
		chunk(task, 3, user(8, 5), user(9, 6), bad(10, "0", quan.CauseInvalidID)),
	}
	wants := []quan.TaskCounts{
		{Rows: 3, Valid: 2, Issued: 2, Failed: quan.FailedCounts{InvalidID: 1}},
		{Rows: 3, Valid: 2, Issued: 2, Failed: quan.FailedCounts{Duplicate: 1}},
		{Rows: 3, Valid: 1, Issued: 1, Failed: quan.FailedCounts{InvalidID: 1, OutOfStock: 1}},
	}
	var sum quan.TaskCounts
	for i, c := range chunks {
		apply(t, s, c, wants[i])
		sum.Add(wants[i])
		got := getTask(t, s, task.ID)
		if got.Counts != sum || got.ChunksDone != c.Seq || got.BytesRead != c.BytesRead || !got.UpdatedAt.Equal(c.Now) {
			t.Errorf("after chunk %d: counts %+v, checkpoint %d at %d bytes, updated %v; want %+v, %d, %d, %v",
				c.Seq, got.Counts, got.ChunksDone, got.BytesRead, got.UpdatedAt, sum, c.Seq, c.BytesRead, c.Now)
		}
		if got.Status != quan.TaskRunning || got.Owner != runner {
			t.Errorf("after chunk %d the task is %s held by %q, want running held by %q", c.Seq, got.Status, got.Owner, runner)
		}
	}
	assertFailures(t, s, task.ID,
		failed(chunks[0].Rows[1], quan.CauseInvalidID),
		failed(chunks[1].Rows[1], quan.CauseDuplicate),
		failed(chunks[2].Rows[1], quan.CauseOutOfStock),
		failed(chunks[2].Rows[2], quan.CauseInvalidID),
	)
	assertInvariants(t, s, tpl, task)
}

// distState is what a store holds of one distribution, to show that a
// refused chunk wrote nothing.
type distState struct {
	template *quan.Template
	task     *quan.Task
	coupons  map[int64][]*quan.Coupon
	failures []quan.Failure
	stats    quan.CouponStats
}

func snapshot(t *testing.T, s TaskStores, tpl *quan.Template, task *quan.Task, users ...int64) distState {
	t.Helper()
	st := distState{
		template: get(t, s.Templates, tpl.ID),
		task:     getTask(t, s, task.ID),
		coupons:  map[int64][]*quan.Coupon{},
		failures: failures(t, s, task.ID),
		stats:    stats(t, s, tpl.ID, 0),
	}
	for _, u := range users {
		st.coupons[u] = coupons(t, s, u, 0)
	}
	return st
}

func assertUnchanged(t *testing.T, s TaskStores, before distState, what string) {
	t.Helper()
	users := make([]int64, 0, len(before.coupons))
	for u := range before.coupons {
		users = append(users, u)
	}
	after := snapshot(t, s, before.template, before.task, users...)
	assertTemplate(t, after.template, before.template)
	assertTask(t, after.task, before.task)
	if !slices.Equal(after.failures, before.failures) {
		t.Errorf("%s: failures changed from %+v to %+v", what, before.failures, after.failures)
	}
	if after.stats != before.stats {
		t.Errorf("%s: coupon stats changed from %+v to %+v", what, before.stats, after.stats)
	}
	for _, u := range users {
		if !reflect.DeepEqual(after.coupons[u], before.coupons[u]) {
			t.Errorf("%s: user %d's coupons changed", what, u)
		}
	}
}

func testApplyLeaseLost(t *testing.T, s TaskStores) {
	tpl := activeTemplate(t, s, "contested", 100, 1)
	task := runningTask(t, s, tpl, "held")
	apply(t, s, chunk(task, 1, user(2, 1)), issued(1))

	refuse := func(c *quan.Chunk, what string) {
		t.Helper()
		before := snapshot(t, s, tpl, &quan.Task{ID: c.TaskID}, 1, 2, 3)
		if n, err := s.Tasks.ApplyChunk(t.Context(), c); !errors.Is(err, quan.ErrLeaseLost) {
			t.Errorf("%s: ApplyChunk = %+v, %v; want ErrLeaseLost", what, n, err)
		}
		assertUnchanged(t, s, before, what)
	}
	rows := []quan.ChunkRow{user(3, 2), bad(4, "x", quan.CauseInvalidID), user(5, 3)}

	pending := createTask(t, s, newTask(t, 1, tpl.ID, "never claimed"))
	refuse(chunk(pending, 1, rows...), "a pending task")

	if _, err := s.Tasks.UpdateTask(t.Context(), 1, task.ID, func(t *quan.Task) error {
		return t.Cancel(chunkNow)
	}); err != nil {
		t.Fatal(err)
	}
	refuse(chunk(task, 2, rows...), "a canceled task")
	assertInvariants(t, s, tpl, task, pending)
}

func testApplyOutOfOrder(t *testing.T, s TaskStores) {
	tpl := activeTemplate(t, s, "any order", 100, 2)
	task := runningTask(t, s, tpl, "unordered")
	first := chunk(task, 1, user(2, 1), bad(3, "y", quan.CauseInvalidID))
	apply(t, s, first, quan.TaskCounts{Rows: 2, Valid: 1, Issued: 1, Failed: quan.FailedCounts{InvalidID: 1}})

	// The same chunk again, as a bus redelivers it: a replay would issue
	// user 1 a second coupon.
	again := chunk(task, 1, user(2, 1), bad(3, "y", quan.CauseInvalidID), user(4, 2))
	before := snapshot(t, s, tpl, task, 1, 2)
	if n, err := s.Tasks.ApplyChunk(t.Context(), again); !errors.Is(err, quan.ErrChunkApplied) {
		t.Errorf("chunk 1 twice: ApplyChunk = %+v, %v; want ErrChunkApplied", n, err)
	}
	assertUnchanged(t, s, before, "chunk 1 twice")
	for _, r := range again.Rows {
		if r.Cause != "" && r.Cause != quan.CauseInvalidID {
			t.Errorf("a refused chunk's line %d has cause %q", r.Line, r.Cause)
		}
	}

	// Chunk 3 overtakes chunk 2; the further one sets BytesRead.
	third := chunk(task, 3, user(6, 3))
	apply(t, s, third, issued(1))
	second := chunk(task, 2, user(4, 2), user(5, 4))
	apply(t, s, second, issued(2))
	got := getTask(t, s, task.ID)
	if got.ChunksDone != 3 || got.BytesRead != third.BytesRead {
		t.Errorf("after chunks 1, 3, 2: ChunksDone %d, BytesRead %d; want 3, %d", got.ChunksDone, got.BytesRead, third.BytesRead)
	}
	seqs, err := s.Tasks.AppliedChunks(t.Context(), task.ID)
	if err != nil || !slices.Equal(seqs, []int64{1, 2, 3}) {
		t.Errorf("AppliedChunks = %v, %v; want [1 2 3]", seqs, err)
	}
	if seqs, err := s.Tasks.AppliedChunks(t.Context(), task.ID+1000); err != nil || len(seqs) != 0 {
		t.Errorf("AppliedChunks of no task = %v, %v; want none", seqs, err)
	}
	for _, seq := range []int64{0, -1} {
		if _, err := s.Tasks.ApplyChunk(t.Context(), chunk(task, seq, user(7, 5))); !errors.Is(err, quan.ErrInvalid) {
			t.Errorf("chunk %d: %v, want invalid", seq, err)
		}
	}
	assertInvariants(t, s, tpl, task)
}

// testApplyRedeliveryRace applies one chunk from many goroutines at once,
// as several workers do when a bus redelivers it: exactly one applies it.
func testApplyRedeliveryRace(t *testing.T, s TaskStores) {
	tpl := activeTemplate(t, s, "raced", 1000, 1)
	task := runningTask(t, s, tpl, "redelivered")
	const workers = 8
	var (
		wg              sync.WaitGroup
		applied, repeat atomic.Int64
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := chunk(task, 1, user(2, 1), user(3, 2), user(4, 3))
			_, err := s.Tasks.ApplyChunk(t.Context(), c)
			switch {
			case err == nil:
				applied.Add(1)
			case errors.Is(err, quan.ErrChunkApplied):
				repeat.Add(1)
			default:
				t.Errorf("ApplyChunk: %v", err)
			}
		}()
	}
	wg.Wait()
	if applied.Load() != 1 || repeat.Load() != workers-1 {
		t.Errorf("%d applied and %d refused as applied; want 1 and %d", applied.Load(), repeat.Load(), workers-1)
	}
	if got := getTask(t, s, task.ID); got.Counts.Issued != 3 || got.ChunksDone != 1 {
		t.Errorf("task issued %d in %d chunks; want 3 in 1", got.Counts.Issued, got.ChunksDone)
	}
	if st := stats(t, s, tpl.ID, 0); st.Coupons != 3 {
		t.Errorf("%d coupons, want 3", st.Coupons)
	}
	assertInvariants(t, s, tpl, task)
}

// testApplyConcurrentTasks applies the chunks of several tasks of one
// template at once, from many goroutines, as workers sharing the tasks
// do: the tasks name many of the same users, and there is not stock for
// all. Every row gets one outcome, and the invariants hold.
func testApplyConcurrentTasks(t *testing.T, s TaskStores) {
	const (
		tasks, chunks, rows = 4, 5, 40 // 800 rows
		users, stock        = 300, 250 // of 300 users, 250 get a coupon
	)
	tpl := activeTemplate(t, s, "shared", stock, 1)
	var (
		all []*quan.Task
		cs  []*quan.Chunk
	)
	for i := range tasks {
		task := runningTask(t, s, tpl, fmt.Sprintf("task %d", i))
		all = append(all, task)
		line := int64(2)
		for seq := range chunks {
			c := chunk(task, int64(seq+1))
			for r := range rows {
				// Each task names every user of the pool at most once.
				id := int64((i*37+seq*rows+r)%users) + 1
				c.Rows = append(c.Rows, user(line, id))
				line++
			}
			cs = append(cs, c)
		}
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, c := range cs {
		wg.Go(func() {
			<-start
			if _, err := s.Tasks.ApplyChunk(t.Context(), c); err != nil {
				t.Errorf("ApplyChunk %d of task %d: %v", c.Seq, c.TaskID, err)
			}
		})
	}
	close(start)
	wg.Wait()
	var issued int64
	for _, task := range all {
		got := getTask(t, s, task.ID)
		n := got.Counts
		if n.Rows != chunks*rows || n.Issued+n.FailedTotal() != n.Rows || got.ChunksDone != chunks {
			t.Errorf("task %d: %d chunks, counts %+v", task.ID, got.ChunksDone, n)
		}
		issued += n.Issued
	}
	if issued != stock {
		t.Errorf("%d issued in all, want the whole stock of %d", issued, stock)
	}
	assertInvariants(t, s, tpl, all...)
}

func testApplyDryRun(t *testing.T, s TaskStores) {
	tpl := activeTemplate(t, s, "tried", 1, 1)
	task := newTask(t, 1, tpl.ID, "dry")
	task.DryRun = true
	task.Status, task.StartedAt = quan.TaskRunning, base
	task.Owner, task.LeaseUntil = runner, chunkNow.Add(time.Hour)
	createTask(t, s, task)

	// More rows than stock: a dry run tries no stock.
	c := chunk(task, 1, user(2, 1), bad(3, "1e3", quan.CauseInvalidID), user(4, 2), user(5, 3))
	want := quan.TaskCounts{Rows: 4, Valid: 3, Failed: quan.FailedCounts{InvalidID: 1}}
	apply(t, s, c, want)
	assertFailures(t, s, task.ID, failed(c.Rows[1], quan.CauseInvalidID))
	for _, u := range []int64{1, 2, 3} {
		assertCoupons(t, s, u, 0)
	}
	if got := get(t, s.Templates, tpl.ID); got.Stock != 1 {
		t.Errorf("stock %d after a dry run, want 1", got.Stock)
	}
	if got := getTask(t, s, task.ID); got.Counts != want || got.ChunksDone != 1 || got.BytesRead != c.BytesRead {
		t.Errorf("task counts %+v, checkpoint %d at %d bytes; want %+v, 1, %d",
			got.Counts, got.ChunksDone, got.BytesRead, want, c.BytesRead)
	}
	if st := stats(t, s, tpl.ID, 0); st != (quan.CouponStats{}) {
		t.Errorf("coupon stats %+v after a dry run, want zero", st)
	}
	assertInvariants(t, s, tpl, task)
}

func testFailuresPaging(t *testing.T, s TaskStores) {
	tpl := activeTemplate(t, s, "paged failures", 100, 1)
	task := runningTask(t, s, tpl, "failing")
	c1 := chunk(task, 1, bad(2, "a", quan.CauseInvalidID), user(3, 1), bad(5, "b", quan.CauseInvalidID),
		bad(9, "1", quan.CauseDuplicate))
	c2 := chunk(task, 2, bad(10, "c", quan.CauseInvalidID), bad(11, "d", quan.CauseInvalidID), user(12, 2),
		bad(20, "e", quan.CauseInexactNumber))
	apply(t, s, c1, quan.TaskCounts{Rows: 4, Valid: 1, Issued: 1, Failed: quan.FailedCounts{InvalidID: 2, Duplicate: 1}})
	apply(t, s, c2, quan.TaskCounts{Rows: 4, Valid: 1, Issued: 1, Failed: quan.FailedCounts{InvalidID: 2, InexactNumber: 1}})
	other := runningTask(t, s, tpl, "other task")
	apply(t, s, chunk(other, 1, bad(4, "z", quan.CauseInvalidID)), quan.TaskCounts{Rows: 1, Failed: quan.FailedCounts{InvalidID: 1}})

	all := []quan.Failure{
		failed(c1.Rows[0], quan.CauseInvalidID), failed(c1.Rows[2], quan.CauseInvalidID),
		failed(c1.Rows[3], quan.CauseDuplicate), failed(c2.Rows[0], quan.CauseInvalidID),
		failed(c2.Rows[1], quan.CauseInvalidID), failed(c2.Rows[3], quan.CauseInexactNumber),
	}
	for _, c := range []struct {
		after int64
		limit int
		want  []quan.Failure
	}{
		{0, 2, all[:2]},
		{5, 2, all[2:4]},
		{10, 10, all[4:]},
		{6, 1, all[2:3]}, // after a line that is not a failure
		{20, 10, nil},
		{0, 100, all},
	} {
		got, err := s.Tasks.Failures(t.Context(), task.ID, c.after, c.limit)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("Failures(after %d, limit %d) = %+v, %v; want %+v", c.after, c.limit, got, err, c.want)
		}
	}
	// Paging by the last line returned reads each failure once.
	var paged []quan.Failure
	for after := int64(0); ; {
		page, err := s.Tasks.Failures(t.Context(), task.ID, after, 4)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		paged = append(paged, page...)
		after = page[len(page)-1].Line
	}
	if !slices.Equal(paged, all) {
		t.Errorf("paging through the failures read %+v, want %+v", paged, all)
	}
	if got, err := s.Tasks.Failures(t.Context(), 999_999, 0, 10); err != nil || len(got) != 0 {
		t.Errorf("Failures of a missing task = %+v, %v; want none", got, err)
	}
	assertInvariants(t, s, tpl, task, other)
}

func testCouponsAgree(t *testing.T, s TaskStores) {
	a := activeTemplate(t, s, "a", 100, 3)
	b := activeTemplate(t, s, "b", 100, 1)
	untouched := activeTemplate(t, s, "untouched", 100, 1)
	ta1, ta2 := runningTask(t, s, a, "a1"), runningTask(t, s, a, "a2")
	tb := runningTask(t, s, b, "b")

	apply(t, s, chunk(ta1, 1, user(2, 1), user(3, 2), user(4, 3)), issued(3))
	apply(t, s, chunk(tb, 1, user(2, 1), user(3, 4)), issued(2))
	apply(t, s, chunk(ta2, 1, user(2, 1), user(3, 2)), issued(2))
	apply(t, s, chunk(ta1, 2, user(5, 1)), issued(1)) // user 1's third of a

	for _, c := range []struct {
		template, task int64
		want           quan.CouponStats
	}{
		{a.ID, 0, quan.CouponStats{Coupons: 6, Users: 3, MaxPerUser: 3, FromTask: 6}},
		{a.ID, ta1.ID, quan.CouponStats{Coupons: 6, Users: 3, MaxPerUser: 3, FromTask: 4}},
		{a.ID, ta2.ID, quan.CouponStats{Coupons: 6, Users: 3, MaxPerUser: 3, FromTask: 2}},
		{a.ID, tb.ID, quan.CouponStats{Coupons: 6, Users: 3, MaxPerUser: 3, FromTask: 0}},
		{b.ID, 0, quan.CouponStats{Coupons: 2, Users: 2, MaxPerUser: 1, FromTask: 2}},
		{untouched.ID, 0, quan.CouponStats{}},
		{999_999, 0, quan.CouponStats{}},
	} {
		if got := stats(t, s, c.template, c.task); got != c.want {
			t.Errorf("CouponStats(%d, %d) = %+v, want %+v", c.template, c.task, got, c.want)
		}
	}

	// The coupons listed per user add up to the stats.
	byTask := map[int64]int64{}
	var total, users int64
	for _, u := range []int64{1, 2, 3, 4, 5} {
		all := coupons(t, s, u, 0)
		ofA := coupons(t, s, u, a.ID)
		var n int64
		for _, c := range all {
			if c.UserID != u {
				t.Errorf("user %d's list holds a coupon of user %d", u, c.UserID)
			}
			if c.TemplateID == a.ID {
				n++
				byTask[c.TaskID]++
			}
		}
		if int64(len(ofA)) != n {
			t.Errorf("user %d: %d coupons of template a, but %d in the full list", u, len(ofA), n)
		}
		if n > 0 {
			users++
		}
		total += n
	}
	if total != 6 || users != 3 || byTask[ta1.ID] != 4 || byTask[ta2.ID] != 2 {
		t.Errorf("listed coupons of a: %d, of %d users, by task %v; want 6 of 3, {%d:4 %d:2}",
			total, users, byTask, ta1.ID, ta2.ID)
	}
	got := coupons(t, s, 1, 0)
	if len(got) != 4 {
		t.Fatalf("user 1 holds %d coupons, want 4", len(got))
	}
	// Newest first across templates: a seq 3, a seq 2, b, a seq 1.
	var order []int64
	for _, c := range got {
		order = append(order, c.TemplateID*10+c.Seq)
	}
	if want := []int64{a.ID*10 + 3, a.ID*10 + 2, b.ID*10 + 1, a.ID*10 + 1}; !slices.Equal(order, want) {
		t.Errorf("user 1's coupons as template*10+seq: %v, want %v (newest first)", order, want)
	}
	if got := coupons(t, s, 999, 0); len(got) != 0 {
		t.Errorf("a user without coupons holds %d", len(got))
	}
	assertInvariants(t, s, a, ta1, ta2)
	assertInvariants(t, s, b, tb)
}

// testCouponPageAndHeld checks UserCouponPage and UserHeld against
// UserCoupons: every page of every size is the list's slice from its
// offset, whole coupons with codes; the total and the counts per template
// are the list's; another user's coupons are in neither.
func testCouponPageAndHeld(t *testing.T, s TaskStores) {
	a := activeTemplate(t, s, "a", 100, 3)
	b := activeTemplate(t, s, "b", 100, 1)
	ta, tb := runningTask(t, s, a, "a"), runningTask(t, s, b, "b")
	apply(t, s, chunk(ta, 1, user(2, 1), user(3, 2)), issued(2))
	apply(t, s, chunk(tb, 1, user(2, 1), user(3, 2)), issued(2))
	apply(t, s, chunk(ta, 2, user(2, 1)), issued(1))
	apply(t, s, chunk(ta, 3, user(2, 1)), issued(1))
	ctx := t.Context()

	for _, u := range []int64{1, 2, 999} {
		all := coupons(t, s, u, 0)
		for limit := 1; limit <= len(all)+1; limit++ {
			for offset := 0; offset <= len(all)+1; offset++ {
				page, total, err := s.Coupons.UserCouponPage(ctx, u, offset, limit)
				if err != nil {
					t.Fatalf("UserCouponPage(%d, %d, %d): %v", u, offset, limit, err)
				}
				if total != len(all) {
					t.Errorf("UserCouponPage(%d, %d, %d): total %d, want %d", u, offset, limit, total, len(all))
				}
				want := all[min(offset, len(all)):min(offset+limit, len(all))]
				if len(page) != len(want) {
					t.Errorf("UserCouponPage(%d, %d, %d): %d coupons, want %d", u, offset, limit, len(page), len(want))
					continue
				}
				for i := range want {
					if !reflect.DeepEqual(page[i], want[i]) {
						t.Errorf("UserCouponPage(%d, %d, %d)[%d] = %+v, want %+v", u, offset, limit, i, page[i], want[i])
					}
				}
			}
		}
		held, err := s.Coupons.UserHeld(ctx, u)
		if err != nil {
			t.Fatalf("UserHeld(%d): %v", u, err)
		}
		want := map[int64]int64{}
		for _, c := range all {
			want[c.TemplateID]++
		}
		if !maps.Equal(held, want) {
			t.Errorf("UserHeld(%d) = %v, want %v", u, held, want)
		}
	}
	if held, _ := s.Coupons.UserHeld(ctx, 1); held[a.ID] != 3 || held[b.ID] != 1 || len(held) != 2 {
		t.Errorf("UserHeld(1) = %v, want {%d:3 %d:1}", held, a.ID, b.ID)
	}
}
