package quantest

import (
	"maps"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// TestLongestValues writes the longest valid value of each text the
// claims and the distributions have their store keep, and reads it back
// whole: a store whose column is narrower than the value (MySQL's
// VARCHARs) refuses it, which SQLite never does. What is longest comes
// from the root's bounds (quan.MaxClaimReasonLen, MaxNameLen,
// MaxSheetLen, MaxFileNameLen, MaxTaskReasonLen, MaxRawBytes,
// MaxCodePrefix …); text counted in characters is made of 4-byte ones.
func TestLongestValues(t *testing.T, newStores func(t *testing.T) StatsStores) {
	t.Helper()
	run := func(name string, test func(*testing.T, StatsStores)) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, newStores(t))
		})
	}
	run("Claims/EveryReason", testLongestClaimReasons)
	run("Claims/LongestID", testLongestClaimID)
	run("Refusals/LongestCode", testLongestRefusalCode)
	run("Tasks/LongestText", testLongestTaskText)
	run("Tasks/EveryCauseLongestRaw", testLongestFailures)
	run("Codes/LongestCode", testLongestRedeemCode)
}

// wide is n characters of 4 bytes each, the most bytes n characters take.
func wide(n int) string { return strings.Repeat("𠀀", n) }

// longestActor is the longest Identity.String a store keeps as who
// created or changed something: a merchant of the largest shop number
// with a subject of the most characters it keeps.
func longestActor() string {
	return quan.Identity{Role: quan.RoleMerchant, ShopNo: math.MaxInt64, Subject: wide(200)}.String()
}

// testLongestClaimReasons fails a claim with each reason a store records,
// and one of quan.MaxClaimReasonLen bytes: each is kept on its claim and
// counted under itself in the statistics.
func testLongestClaimReasons(t *testing.T, s StatsStores) {
	tpl := activeTemplate(t, s.TaskStores, "reasons", 10, 1)
	longest := strings.Repeat("r", quan.MaxClaimReasonLen)
	want := map[string]int64{}
	for i, reason := range append(quan.ClaimReasons(), longest) {
		c := newClaim(tpl.ID, int64(100+i))
		rec, err := s.Claims.FailClaim(t.Context(), c, reason, claimAt)
		if err != nil {
			t.Fatalf("FailClaim with %q (%d bytes): %v", reason, len(reason), err)
		}
		assertClaim(t, rec, quan.ClaimFailed, reason)
		got, err := s.Claims.Claim(t.Context(), c.ID)
		if err != nil {
			t.Fatal(err)
		}
		assertClaim(t, got, quan.ClaimFailed, reason)
		want[reason] = 1
	}
	if st := templateStats(t, s, tpl.ID); !maps.Equal(st.Claims.Failed, want) {
		t.Errorf("claims failed by reason %v, want %v", st.Claims.Failed, want)
	}
}

// testLongestClaimID: a claim id of the largest template and user ids,
// failed, and a claim of the largest user id issued, are kept whole.
func testLongestClaimID(t *testing.T, s StatsStores) {
	failed := newClaim(math.MaxInt64, math.MaxInt64)
	if _, _, err := quan.ParseClaimID(failed.ID); err != nil {
		t.Fatalf("the suite built a claim id that is not one: %v", err)
	}
	if _, err := s.Claims.FailClaim(t.Context(), failed, quan.ReasonAbandoned, claimAt); err != nil {
		t.Fatalf("FailClaim of %s (%d bytes): %v", failed.ID, len(failed.ID), err)
	}
	if got, err := s.Claims.Claim(t.Context(), failed.ID); err != nil || got.ID != failed.ID {
		t.Fatalf("Claim(%s) = %+v, %v", failed.ID, got, err)
	}
	tpl := activeTemplate(t, s.TaskStores, "largest user", 10, 1)
	issued := issueClaims(t, s.ClaimStores, newClaim(tpl.ID, math.MaxInt64))
	assertClaim(t, issued[0], quan.ClaimIssued, "")
	if got, err := s.Claims.Claim(t.Context(), issued[0].ID); err != nil || got.ID != issued[0].ID || got.CouponID != issued[0].CouponID {
		t.Fatalf("Claim(%s) = %+v, %v; want %+v", issued[0].ID, got, err, issued[0])
	}
}

// testLongestRefusalCode: every refusal of the cache, and a code of
// quan.MaxClaimReasonLen bytes, are counted under themselves; a longer one
// is refused as invalid and adds nothing.
func testLongestRefusalCode(t *testing.T, s StatsStores) {
	tpl := activeTemplate(t, s.TaskStores, "refused", 10, 1)
	longest := strings.Repeat("c", quan.MaxClaimReasonLen)
	var counts []quan.RefusalCount
	want := map[string]int64{}
	for _, code := range append(quan.Refusals(), quan.Refusal(longest)) {
		counts = append(counts, quan.RefusalCount{TemplateID: tpl.ID, Code: string(code), N: 2})
		want[string(code)] = 2
	}
	if err := s.Stats.AddRefusals(t.Context(), counts); err != nil {
		t.Fatalf("AddRefusals: %v", err)
	}
	tooLong := quan.RefusalCount{TemplateID: tpl.ID, Code: longest + "c", N: 1}
	if err := s.Stats.AddRefusals(t.Context(), []quan.RefusalCount{counts[0], tooLong}); quan.ErrorCode(err) != quan.EINVALID {
		t.Errorf("AddRefusals of a code of %d bytes: %v, want invalid", len(tooLong.Code), err)
	}
	if st := templateStats(t, s, tpl.ID); !maps.Equal(st.Claims.Refused, want) {
		t.Errorf("claims refused by code %v, want %v", st.Claims.Refused, want)
	}
}

// testLongestTaskText: a task whose every text is as long as a valid task
// may have it is stored and read back whole, and so is the longest reason
// it may fail with.
func testLongestTaskText(t *testing.T, s StatsStores) {
	tpl := create(t, s.Templates, newTemplate(t, 1, "long task"))
	task := newTask(t, 1, tpl.ID, wide(quan.MaxNameLen))
	task.FileName = wide(quan.MaxFileNameLen)
	task.Sheet = wide(quan.MaxSheetLen)
	task.Notify = []quan.NotifyType{quan.NotifyInbox, quan.NotifyPopup, quan.NotifyEmail, quan.NotifySMS}
	task.CreatedBy = longestActor()
	task.TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	task.Segment = strings.Repeat("1", 4096-len(" > 0")) + " > 0" // the rule engine's default bound
	if err := task.Validate(); err != nil {
		t.Fatalf("the suite built an invalid task: %v", err)
	}
	for _, tooLong := range []func(*quan.Task){
		func(t *quan.Task) { t.Name += "x" },
		func(t *quan.Task) { t.FileName += "x" },
		func(t *quan.Task) { t.Sheet += "x" },
	} {
		over := *task
		tooLong(&over)
		if err := over.Validate(); quan.ErrorCode(err) != quan.EINVALID {
			t.Errorf("a task with one character more is valid: %q %q %q", over.Name, over.FileName, over.Sheet)
		}
	}
	createTask(t, s.TaskStores, task)
	assertTask(t, getTask(t, s.TaskStores, task.ID), task)

	reason := strings.Repeat("失", 2*quan.MaxTaskReasonLen) // cut by Fail
	now := base.Add(time.Minute)
	got, err := s.Tasks.UpdateTask(t.Context(), quan.AnyShop, task.ID, func(t *quan.Task) error { return t.Fail(reason, now) })
	if err != nil {
		t.Fatalf("fail the task with a reason of %d bytes: %v", len(reason), err)
	}
	if len(got.Reason) > quan.MaxTaskReasonLen || len(got.Reason) < quan.MaxTaskReasonLen-len("失") || !strings.HasSuffix(got.Reason, "…") {
		t.Errorf("the reason failing the task has %d bytes, want it cut to %d and marked", len(got.Reason), quan.MaxTaskReasonLen)
	}
	read := getTask(t, s.TaskStores, task.ID)
	if read.Reason != got.Reason || read.Status != quan.TaskFailed {
		t.Errorf("the failed task reads %s with a reason of %d bytes, want failed with the %d written", read.Status, len(read.Reason), len(got.Reason))
	}
}

// testLongestFailures: a chunk's rows failed for every cause, each row's
// text as long as a chunk keeps it, are recorded whole.
func testLongestFailures(t *testing.T, s StatsStores) {
	tpl := activeTemplate(t, s.TaskStores, "every cause", 100, 1)
	task := runningTask(t, s.TaskStores, tpl, "every cause")
	raw := quan.ClipRaw(wide(quan.MaxRawBytes))
	var rows []quan.ChunkRow
	var want []quan.Failure
	var counts quan.TaskCounts
	for i, cause := range quan.Causes() {
		r := quan.ChunkRow{Line: int64(2 + i), Raw: raw, Cause: cause}
		if cause != quan.CauseInvalidID && cause != quan.CauseInexactNumber {
			r.UserID = int64(100 + i)
		}
		rows = append(rows, r)
		want = append(want, failed(r, cause))
		counts.Rows++
		counts.AddFailure(cause)
	}
	got, err := s.Tasks.ApplyChunk(t.Context(), chunk(task, 1, rows...))
	if err != nil {
		t.Fatalf("ApplyChunk of a row of each cause: %v", err)
	}
	if got.FailedTotal() != int64(len(rows)) || got.Issued != 0 {
		t.Errorf("ApplyChunk counts %+v, want every row failed: %+v", got, counts)
	}
	assertFailures(t, s.TaskStores, task.ID, want...)
}

// testLongestRedeemCode: a batch by the longest actor keeps it, and a
// code of the longest prefix is kept whole.
func testLongestRedeemCode(t *testing.T, s StatsStores) {
	tpl := activeTemplate(t, s.TaskStores, "codes", 10, 1)
	b := &quan.CodeBatch{TemplateID: tpl.ID, ShopNo: tpl.ShopNo, Count: 1, Status: quan.CodeBatchGenerating,
		CreatedBy: longestActor(), CreatedAt: base, UpdatedAt: base}
	if err := s.Codes.CreateCodeBatch(t.Context(), b); err != nil {
		t.Fatalf("CreateCodeBatch by %q: %v", b.CreatedBy, err)
	}
	code, err := quan.NewCode(strings.Repeat("Q", quan.MaxCodePrefix))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Codes.AddCodes(t.Context(), b.ID, []string{code}, base); err != nil {
		t.Fatalf("AddCodes(%q): %v", code, err)
	}
	got, err := s.Codes.CodeBatch(t.Context(), tpl.ShopNo, b.ID)
	if err != nil || got.CreatedBy != b.CreatedBy {
		t.Errorf("CodeBatch = %+v, %v; want it created by %q", got, err, b.CreatedBy)
	}
	if rc, err := s.Codes.Code(t.Context(), code); err != nil || rc.Code != code {
		t.Errorf("Code(%q) = %+v, %v", code, rc, err)
	}
}
