package quan

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// TaskStatus is where a distribution task is: pending (scheduled) →
// running → succeeded | failed | canceled.
type TaskStatus string

// Task statuses.
const (
	TaskPending   TaskStatus = "pending"
	TaskRunning   TaskStatus = "running"
	TaskSucceeded TaskStatus = "succeeded"
	TaskFailed    TaskStatus = "failed"
	TaskCanceled  TaskStatus = "canceled"
)

// Done reports whether the status is final.
func (s TaskStatus) Done() bool {
	return s == TaskSucceeded || s == TaskFailed || s == TaskCanceled
}

// NotifyType is a channel that tells users about their new coupon once a
// distribution ends.
type NotifyType string

// Notification channels.
const (
	NotifyInbox NotifyType = "inbox"
	NotifyPopup NotifyType = "popup"
	NotifyEmail NotifyType = "email"
	NotifySMS   NotifyType = "sms"
)

// ParseNotifyTypes parses a comma-separated list such as "inbox,sms",
// refusing unknown or repeated channels. No channel is an empty slice, not
// nil: stores read a task's Notify with it, and the API shows [] for none.
func ParseNotifyTypes(s string) ([]NotifyType, error) {
	out := []NotifyType{}
	seen := map[NotifyType]bool{}
	for _, part := range strings.Split(s, ",") {
		n := NotifyType(strings.TrimSpace(part))
		switch n {
		case "":
			continue
		case NotifyInbox, NotifyPopup, NotifyEmail, NotifySMS:
		default:
			return nil, fmt.Errorf("%q is not a notification type: use inbox, popup, email or sms", n)
		}
		if seen[n] {
			return nil, fmt.Errorf("%q is listed twice", n)
		}
		seen[n] = true
		out = append(out, n)
	}
	return out, nil
}

// Cause is why a row of a distribution file got no coupon.
type Cause string

// Causes, in the order the report explains them.
const (
	CauseInvalidID        Cause = "invalid_id"        // not a positive whole number that fits 64 bits
	CauseInexactNumber    Cause = "inexact_number"    // a numeric cell beyond 2^53 as a double prints it: Excel lost digits
	CauseDuplicate        Cause = "duplicate_in_file" // the user appears earlier in the file
	CauseLimitReached     Cause = "limit_reached"     // the user holds the per-user limit already
	CauseOutOfStock       Cause = "out_of_stock"      // the template's stock ran out
	CauseTemplateInactive Cause = "template_inactive" // the template stopped issuing (paused, ended, window closed)
	// The period limits (PerUserDaily, PerUserWeekly). A task counts
	// their rows in FailedCounts.LimitReached, with the lifetime limit's:
	// the row's own cause says which limit.
	CauseDailyLimit  Cause = EDAILYLIMIT    // the user received the daily limit today (Asia/Shanghai)
	CauseWeeklyLimit Cause = EWEEKLYLIMIT   // the user received the weekly limit this week (from Monday, Asia/Shanghai)
	CauseNotEligible Cause = "not_eligible" // the template's eligibility rule refuses the user
)

// MaxCauseLen is the most bytes of a Cause: the stores keep a failed
// row's cause in a column this wide (task_failures.cause).
const MaxCauseLen = 32

// Causes returns every Cause, in the order the report explains them.
func Causes() []Cause {
	return []Cause{CauseInvalidID, CauseInexactNumber, CauseDuplicate, CauseLimitReached, CauseOutOfStock,
		CauseTemplateInactive, CauseDailyLimit, CauseWeeklyLimit, CauseNotEligible}
}

// Describe says what a cause means and, where it can, how to fix it, in
// Chinese and then in English, as the failure report's 说明 Details column
// shows it (for merchants who read either).
func (c Cause) Describe() string {
	switch c {
	case CauseInvalidID:
		return "用户ID无效：须为正整数，最多19位（不超过 9223372036854775807）。 " +
			"Invalid user id: it must be a positive whole number of at most 19 digits (up to 9223372036854775807)."
	case CauseInexactNumber:
		return "用户ID以数字存储，超出了 Excel 能精确保存的范围（2^53），末几位已丢失：请把该列设为文本格式，重新输入ID。 " +
			"The user id is stored as a number too large for Excel to keep exactly (beyond 2^53), so its last digits are lost: format the column as text and type the ids again."
	case CauseDuplicate:
		return "文件内重复：该用户在文件中更早的一行已出现，并在那一行发放（或未发放）。 " +
			"Duplicate: the user appears earlier in the file and got (or was refused) a coupon there."
	case CauseLimitReached:
		return "已领取：该用户持有本模板的券已达每人限领数量。 " +
			"Already received: the user holds as many coupons of this template as the per-user limit allows."
	case CauseOutOfStock:
		return "库存不足：模板已没有剩余的券。 " +
			"Out of stock: the template had no coupons left."
	case CauseTemplateInactive:
		return "模板未在发放（已暂停、已结束或不在发放时间内）。 " +
			"The template was not issuing (paused, ended or outside its issue window)."
	case CauseDailyLimit:
		return "今日已领：该用户今天（北京时间）领取本模板的券已达每日限领数量，请明天再试。 " +
			"Received today: the user received as many coupons of this template today (Asia/Shanghai) as the daily limit allows; try again tomorrow."
	case CauseWeeklyLimit:
		return "本周已领：该用户本周（周一起，北京时间）领取本模板的券已达每周限领数量，请下周再试。 " +
			"Received this week: the user received as many coupons of this template this week (from Monday, Asia/Shanghai) as the weekly limit allows; try again next week."
	case CauseNotEligible:
		return "不符合领取条件：模板的资格规则根据该用户的已知属性拒绝了该用户（PUT /users/{id}/attributes 或导入属性可更改）。 " +
			"Not eligible: the template's eligibility rule refuses this user on the facts known of them (PUT /users/{id}/attributes, or an attributes import, changes them)."
	}
	return string(c)
}

// Label names the cause in a few words, in Chinese and in English, as the
// failure report's 原因 Reason column shows it.
func (c Cause) Label() string {
	switch c {
	case CauseInvalidID:
		return "用户ID无效 invalid user id"
	case CauseInexactNumber:
		return "数字精度丢失 number lost its digits"
	case CauseDuplicate:
		return "文件内重复 duplicate in file"
	case CauseLimitReached:
		return "已达领取上限 per-user limit reached"
	case CauseOutOfStock:
		return "库存不足 out of stock"
	case CauseTemplateInactive:
		return "模板未在发放 template not issuing"
	case CauseDailyLimit:
		return "已达每日领取上限 daily limit reached"
	case CauseWeeklyLimit:
		return "已达每周领取上限 weekly limit reached"
	case CauseNotEligible:
		return "不符合领取条件 not eligible"
	}
	return string(c)
}

// Retryable reports whether a row that failed for c may succeed if tried
// again: stock can be added, a template resumed, a per-user limit raised,
// a user's facts changed (not eligible).
// A row whose id is invalid, inexact or repeated fails the same way every
// time, so retrying it is pointless.
func (c Cause) Retryable() bool {
	return c == CauseOutOfStock || c == CauseTemplateInactive || c == CauseLimitReached ||
		c == CauseDailyLimit || c == CauseWeeklyLimit || c == CauseNotEligible
}

// FailedCounts counts failed rows by cause.
type FailedCounts struct {
	InvalidID        int64 `json:"invalid_id"`
	InexactNumber    int64 `json:"inexact_number"`
	Duplicate        int64 `json:"duplicate_in_file"`
	LimitReached     int64 `json:"limit_reached"`
	OutOfStock       int64 `json:"out_of_stock"`
	TemplateInactive int64 `json:"template_inactive"`
	NotEligible      int64 `json:"not_eligible"`
}

// TaskCounts are a task's outcomes so far. Once a task succeeds, every
// data row of its file has exactly one outcome: Rows = Issued + Failed().
// In a dry run nothing is issued and Valid counts the rows that would be
// tried. Blank rows are no data rows: they are counted apart, once the
// file has been read to its end.
type TaskCounts struct {
	Rows     int64        `json:"rows"`
	Valid    int64        `json:"valid"`
	Issued   int64        `json:"issued"`
	Failed   FailedCounts `json:"failed"`
	Canceled int64        `json:"canceled"` // rows not reached because the task was canceled
	// Blank is how many blank rows lie among the data rows (FileRow.
	// BlankBefore): no user, no outcome, no failure; 0 until the runner
	// has read the file to its end.
	Blank int64 `json:"blank"`
}

// FailedTotal is the number of failed rows, all causes together.
func (c TaskCounts) FailedTotal() int64 {
	f := c.Failed
	return f.InvalidID + f.InexactNumber + f.Duplicate + f.LimitReached + f.OutOfStock + f.TemplateInactive + f.NotEligible
}

// AddFailure counts one failed row of cause.
func (c *TaskCounts) AddFailure(cause Cause) {
	switch cause {
	case CauseInvalidID:
		c.Failed.InvalidID++
	case CauseInexactNumber:
		c.Failed.InexactNumber++
	case CauseDuplicate:
		c.Failed.Duplicate++
	case CauseLimitReached, CauseDailyLimit, CauseWeeklyLimit:
		c.Failed.LimitReached++
	case CauseOutOfStock:
		c.Failed.OutOfStock++
	case CauseTemplateInactive:
		c.Failed.TemplateInactive++
	case CauseNotEligible:
		c.Failed.NotEligible++
	default:
		panic("quan: unknown cause " + string(cause))
	}
}

// Add adds o's counts to c.
func (c *TaskCounts) Add(o TaskCounts) {
	c.Rows += o.Rows
	c.Valid += o.Valid
	c.Issued += o.Issued
	c.Canceled += o.Canceled
	c.Blank += o.Blank
	c.Failed.InvalidID += o.Failed.InvalidID
	c.Failed.InexactNumber += o.Failed.InexactNumber
	c.Failed.Duplicate += o.Failed.Duplicate
	c.Failed.LimitReached += o.Failed.LimitReached
	c.Failed.OutOfStock += o.Failed.OutOfStock
	c.Failed.TemplateInactive += o.Failed.TemplateInactive
	c.Failed.NotEligible += o.Failed.NotEligible
}

// Task is one bulk distribution: a file of target users and the template
// each of them gets one coupon of.
type Task struct {
	ID          int64        `json:"id"`
	ShopNo      int64        `json:"shopNo"`
	TemplateID  int64        `json:"templateId"`
	Name        string       `json:"name"`
	FileName    string       `json:"fileName"` // as uploaded
	FilePath    string       `json:"-"`        // where quan keeps it
	FileSize    int64        `json:"fileSize"`
	FileSHA256  string       `json:"fileSha256"`
	Sheet       string       `json:"sheet,omitempty"` // worksheet to read; "" the first
	Notify      []NotifyType `json:"notify"`          // never nil: empty for none, so JSON shows []
	SendAt      time.Time    `json:"sendAt"`
	DryRun      bool         `json:"dryRun"`
	ChunkSize   int          `json:"chunkSize"`
	Status      TaskStatus   `json:"status"`
	Reason      string       `json:"reason,omitempty"` // why it failed
	Counts      TaskCounts   `json:"counts"`
	ChunksDone  int64        `json:"chunksDone"`  // chunks applied, in whatever order they came
	ChunksTotal int64        `json:"chunksTotal"` // chunks in the file; 0 until it is read to its end
	BytesRead   int64        `json:"bytesRead"`   // of the file's data, as far as the furthest chunk applied
	BytesTotal  int64        `json:"bytesTotal"`  // of the file's data; 0 until known
	ReportPath  string       `json:"-"`           // the failure report, once written
	CreatedBy   string       `json:"createdBy"`
	CreatedAt   time.Time    `json:"createdAt"`
	StartedAt   time.Time    `json:"startedAt,omitzero"`
	FinishedAt  time.Time    `json:"finishedAt,omitzero"`
	UpdatedAt   time.Time    `json:"updatedAt"`

	// The runner that holds the task, until LeaseUntil. Another runner may
	// take over a running task whose lease has expired (its runner died).
	Owner      string    `json:"-"`
	LeaseUntil time.Time `json:"-"`

	// RetryOf is the finished task whose retryable failed rows this task
	// tries again (tasks.Service.Retry); 0 for a task of an uploaded file.
	RetryOf int64 `json:"retryOf,omitempty"`

	// TraceParent is the trace of the request that created the task
	// (Tracer), kept so that the runner that takes the task, later and
	// maybe elsewhere, continues it; "" when not traced.
	TraceParent string `json:"-"`

	// Segment is the rule (RuleSegment) whose users, as they matched when
	// the task was created, are the task's file (SegmentFileName); "" for
	// a task of an uploaded file.
	Segment string `json:"segment,omitempty"`

	// Stalled, on a running task, says why it makes no progress while its
	// runner tries again (a backend down, a full disk); nil when it is not
	// stalled. It clears once the task moves on, and when it ends.
	Stalled *TaskStall `json:"stalled,omitempty"`
}

// TaskStall is why a running task is stuck, since when, while its runner
// tries again.
type TaskStall struct {
	// Code is the error's code: EUNAVAILABLE for a backend down, ENOSPACE
	// for a full disk, EINTERNAL for anything else (the runner's log says
	// what).
	Code string `json:"code"`
	// Backend is the backend down, for EUNAVAILABLE: store, cache or bus.
	Backend string `json:"backend,omitempty"`
	// Reason says what went wrong, in words (the error's message).
	Reason string `json:"reason"`
	// Since is when the task got stuck: its first failure in a row.
	Since time.Time `json:"since"`
}

// StallOf returns the stall err causes at now: its code, backend and
// message.
func StallOf(err error, now time.Time) TaskStall {
	return TaskStall{Code: ErrorCode(err), Backend: ErrorBackend(err), Reason: ErrorMessage(err), Since: now}
}

// Stall records that the task is stuck on s while its runner tries again.
// A task stuck already keeps its Since, whatever the cause now. It reports
// whether anything changed, which only a running task allows.
func (t *Task) Stall(s TaskStall) bool {
	if t.Status != TaskRunning {
		return false
	}
	if cur := t.Stalled; cur != nil && cur.Code == s.Code && cur.Backend == s.Backend && cur.Reason == s.Reason {
		return false
	}
	if cur := t.Stalled; cur != nil {
		s.Since = cur.Since // stuck since the first failure, whatever the cause now
	}
	t.Stalled = &s
	return true
}

// Chunk sizes of a distribution.
const (
	DefaultChunkSize = 5000
	MaxChunkSize     = 100_000
)

// Bounds of a task's text, in characters (the stores keep them in columns
// this wide), and of its Reason, in bytes: Fail cuts a longer reason.
const (
	MaxSheetLen      = 255 // Excel's own sheet names have at most 31
	MaxFileNameLen   = 255 // a file system's names have at most 255 bytes
	MaxTaskReasonLen = 1024
)

// Validate reports every problem of a new task at once.
func (t *Task) Validate() error {
	var v Validation
	if t.ShopNo <= 0 {
		v.Add("shopNo", "must be a positive shop number")
	}
	if t.TemplateID <= 0 {
		v.Add("templateId", "is required")
	}
	switch name := strings.TrimSpace(t.Name); {
	case name == "":
		v.Add("name", "is required")
	case !utf8.ValidString(t.Name):
		v.Add("name", "must be text (UTF-8)")
	case len([]rune(t.Name)) > MaxNameLen:
		v.Add("name", fmt.Sprintf("must be at most %d characters", MaxNameLen))
	default:
		v.Line("name", t.Name)
	}
	if t.FileName == "" || t.FileSize <= 0 {
		v.Add("file", "is required and must not be empty")
	} else if !utf8.ValidString(t.FileName) || utf8.RuneCountInString(t.FileName) > MaxFileNameLen {
		v.Add("file", fmt.Sprintf("its name must be text (UTF-8) of at most %d characters", MaxFileNameLen))
	} else if p := TextProblem(t.FileName, ""); p != "" {
		v.Add("file", "its name "+p)
	}
	if !utf8.ValidString(t.Sheet) || utf8.RuneCountInString(t.Sheet) > MaxSheetLen {
		v.Add("sheet", fmt.Sprintf("must be text (UTF-8) of at most %d characters", MaxSheetLen))
	} else {
		v.Line("sheet", t.Sheet)
	}
	v.Text("segment", t.Segment, ruleControls)
	v.Time("sendAt", t.SendAt)
	if t.ChunkSize < 1 || t.ChunkSize > MaxChunkSize {
		v.Add("chunkSize", fmt.Sprintf("must be between 1 and %d", MaxChunkSize))
	}
	return v.Err("the task has invalid fields")
}

// Start moves a pending task to running.
func (t *Task) Start(now time.Time) error {
	if t.Status != TaskPending {
		return Errorf(ETRANSITION, "cannot start task %d: it is %s", t.ID, t.Status)
	}
	t.Status = TaskRunning
	t.StartedAt = now
	t.UpdatedAt = now
	return nil
}

// Succeed ends a running task whose every row has an outcome.
func (t *Task) Succeed(now time.Time) error {
	if t.Status != TaskRunning {
		return Errorf(ETRANSITION, "cannot finish task %d: it is %s", t.ID, t.Status)
	}
	t.Status = TaskSucceeded
	t.Stalled = nil
	t.FinishedAt, t.UpdatedAt = now, now
	return nil
}

// Fail ends a pending or running task with a reason a merchant can act on,
// cut to MaxTaskReasonLen (ClipText).
func (t *Task) Fail(reason string, now time.Time) error {
	if t.Status.Done() {
		return Errorf(ETRANSITION, "cannot fail task %d: it is %s", t.ID, t.Status)
	}
	t.Status = TaskFailed
	t.Reason = ClipText(reason, MaxTaskReasonLen)
	t.Stalled = nil
	t.FinishedAt, t.UpdatedAt = now, now
	return nil
}

// Cancel ends a pending or running task. Coupons issued stay issued; the
// runner counts the rows it did not reach as canceled.
func (t *Task) Cancel(now time.Time) error {
	if t.Status.Done() {
		return Errorf(ETRANSITION, "cannot cancel task %d: it is %s already", t.ID, t.Status)
	}
	t.Status = TaskCanceled
	t.Stalled = nil
	t.FinishedAt, t.UpdatedAt = now, now
	return nil
}

// ParseUserID parses a user id as written in a file: a positive whole
// number that fits int64, surrounding spaces ignored. ok is false for
// anything else.
func ParseUserID(s string) (id int64, ok bool) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 19 || s[0] == '+' || s[0] == '-' {
		return 0, false
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, false
	}
	return id, true
}
