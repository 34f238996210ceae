package quan

import (
	"regexp"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

func TestParseUserID(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1", 1, true},
		{" 1234567890123456789 ", 1234567890123456789, true},
		{"9223372036854775807", 9223372036854775807, true},
		{"9223372036854775808", 0, false},
		{"0", 0, false},
		{"-5", 0, false},
		{"+5", 0, false},
		{"", 0, false},
		{"abc", 0, false},
		{"1.5", 0, false},
		{"1e9", 0, false},
		{"00000000000000000000123", 0, false},
	}
	for _, tt := range tests {
		got, ok := ParseUserID(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseUserID(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestPlanChunk(t *testing.T) {
	now := time.Date(2026, 11, 11, 0, 0, 0, 0, time.UTC)
	tpl := &Template{Status: TemplateActive, TemplateSpec: TemplateSpec{PerUserLimit: 2, IssueStart: now.Add(-time.Hour), IssueEnd: now.Add(time.Hour)}}
	rows := func() *Chunk {
		return &Chunk{Now: now, Rows: []ChunkRow{
			{Line: 2, UserID: 1},
			{Line: 3, Raw: "x", Cause: CauseInvalidID},
			{Line: 4, UserID: 2}, // holds 2: limit
			{Line: 5, UserID: 3}, // holds 1: seq 2
			{Line: 6, UserID: 4},
			{Line: 7, UserID: 5},
		}}
	}
	held := map[int64]int64{2: 2, 3: 1}
	t.Run("OutOfStockInFileOrder", func(t *testing.T) {
		c := rows()
		issues := PlanChunk(c, tpl, held, nil, 3)
		if len(issues) != 3 || issues[0] != (Issue{Row: 0, Seq: 1}) || issues[1] != (Issue{Row: 3, Seq: 2}) || issues[2] != (Issue{Row: 4, Seq: 1}) {
			t.Fatalf("issues %+v", issues)
		}
		causes := []Cause{"", CauseInvalidID, CauseLimitReached, "", "", CauseOutOfStock}
		for i, r := range c.Rows {
			if r.Cause != causes[i] {
				t.Errorf("row %d cause %q, want %q", r.Line, r.Cause, causes[i])
			}
		}
		n := ChunkCounts(c, false)
		if n.Rows != 6 || n.Issued != 3 || n.FailedTotal() != 3 || n.Failed.OutOfStock != 1 {
			t.Fatalf("counts %+v", n)
		}
	})
	inactive := map[string]func(t *Template){
		"Paused":      func(t *Template) { t.Status = TemplatePaused },
		"Draft":       func(t *Template) { t.Status = TemplateDraft },
		"NotStarted":  func(t *Template) { t.IssueStart = now.Add(time.Minute) },
		"WindowEnded": func(t *Template) { t.IssueEnd = now },
	}
	for name, change := range inactive {
		t.Run(name, func(t *testing.T) {
			tp := *tpl
			change(&tp)
			c := rows()
			if issues := PlanChunk(c, &tp, held, nil, 10); len(issues) != 0 {
				t.Fatalf("issued %v from an inactive template", issues)
			}
			for _, r := range c.Rows {
				if r.Cause != CauseTemplateInactive && r.Cause != CauseInvalidID {
					t.Fatalf("row %d cause %q", r.Line, r.Cause)
				}
			}
		})
	}
}

func TestTaskTransitions(t *testing.T) {
	now := time.Now()
	task := &Task{Status: TaskPending}
	if err := task.Succeed(now); ErrorCode(err) != ETRANSITION {
		t.Fatalf("pending → succeeded: %v", err)
	}
	if err := task.Start(now); err != nil || task.Status != TaskRunning {
		t.Fatal(err)
	}
	if err := task.Start(now); ErrorCode(err) != ETRANSITION {
		t.Fatalf("running → running: %v", err)
	}
	if err := task.Succeed(now); err != nil || task.Status != TaskSucceeded {
		t.Fatal(err)
	}
	for _, f := range []func() error{func() error { return task.Cancel(now) }, func() error { return task.Fail("x", now) }} {
		if err := f(); ErrorCode(err) != ETRANSITION {
			t.Fatalf("from succeeded: %v", err)
		}
	}
	if _, err := ParseNotifyTypes("inbox, sms"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"fax", "sms,sms"} {
		if _, err := ParseNotifyTypes(bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}

// TestFailureReportTextsBilingual: every text of the failure reports —
// the headers, each cause's label and what it means, each failed
// notification's reason — reads in Chinese, then in English.
func TestFailureReportTextsBilingual(t *testing.T) {
	english := regexp.MustCompile(`[A-Za-z]{3,}`)
	chineseFirst := func(s string) bool {
		r, _ := utf8.DecodeRuneInString(s)
		return unicode.Is(unicode.Han, r) && english.MatchString(s)
	}
	var texts []string
	texts = append(texts, FailureColumns()...)
	texts = append(texts, NotificationFailureColumns()...)
	for _, c := range []Cause{CauseInvalidID, CauseInexactNumber, CauseDuplicate, CauseLimitReached, CauseOutOfStock,
		CauseTemplateInactive, CauseDailyLimit, CauseWeeklyLimit, CauseNotEligible} {
		texts = append(texts, c.Label(), c.Describe())
	}
	for _, r := range []string{ReasonNoContact, ReasonInvalidContact, ReasonOptedOut} {
		texts = append(texts, DescribeReason(r))
	}
	for _, s := range texts {
		if !chineseFirst(s) {
			t.Errorf("%q does not read in Chinese, then in English", s)
		}
	}
}
