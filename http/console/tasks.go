package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/quanhq/quan"
	qhttp "github.com/quanhq/quan/http"
	"github.com/quanhq/quan/tasks"
)

// taskRoutes registers the distribution pages: the list of tasks, the
// upload form, a task's page with its progress pushed live, and the
// task's actions (cancel, distribute a dry run for real, retry its failed
// rows, download its failure report). Without a tasks.Service there are
// none.
func (c *Console) taskRoutes(page func(string, pageFunc)) {
	if c.Tasks == nil {
		return
	}
	live := newTaskLive(c)
	c.closers = append(c.closers, live.hub.Close)
	page("GET "+Prefix+"/tasks", c.taskList)
	page("GET "+Prefix+"/tasks/new", c.taskNew)
	page("POST "+Prefix+"/tasks", c.taskCreate)
	page("GET "+Prefix+"/tasks/{id}", c.taskShow)
	page("GET "+Prefix+"/tasks/{id}/events", live.events)
	page("POST "+Prefix+"/tasks/{id}/cancel", c.taskCancel)
	page("POST "+Prefix+"/tasks/{id}/real", c.taskReal)
	page("POST "+Prefix+"/tasks/{id}/retry", c.taskRetry)
	page("GET "+Prefix+"/tasks/{id}/failures.xlsx", c.taskFailuresXLSX)
	page("GET "+Prefix+"/tasks/{id}/failures.csv", c.taskFailuresCSV)
}

// taskInputs are the names of the upload form's inputs, as tasks.Service
// names their fields.
var taskInputs = []string{"templateId", "name", "file", "segment", "sheet", "sendAt", "notify", "dryRun"}

// notifyTypes are the channels the upload form offers, in its order.
var notifyTypes = []quan.NotifyType{quan.NotifyInbox, quan.NotifyPopup, quan.NotifyEmail, quan.NotifySMS}

type taskListData struct {
	Items       []*quan.Task
	Total       int
	Page, Pages int
	Prev, Next  string
}

func (c *Console) taskList(w http.ResponseWriter, r *http.Request, s *session) error {
	var d taskListData
	var err error
	if d.Page, err = pageNumber(r.URL.Query()); err != nil {
		return err
	}
	items, total, err := c.Tasks.List(r.Context(), s.Who, quan.TaskFilter{Offset: (d.Page - 1) * listPageSize, Limit: listPageSize})
	if err != nil {
		return err
	}
	d.Items, d.Total = items, total
	d.Pages = max(1, (total+listPageSize-1)/listPageSize)
	if d.Page > 1 {
		d.Prev = fmt.Sprintf("%s/tasks?page=%d", Prefix, d.Page-1)
	}
	if d.Page < d.Pages {
		d.Next = fmt.Sprintf("%s/tasks?page=%d", Prefix, d.Page+1)
	}
	c.render(w, r, s, http.StatusOK, "tasks", "task.title", d)
	return nil
}

// TaskPercent is how far t is, in percent with one decimal, as the task
// page and its live stream show it.
func (v *view) TaskPercent(t *quan.Task) float64 { return taskPercent(t) }

// taskForm is the upload form's values as sent, so that a form refused is
// shown again as it was (but for the file, which a browser never keeps).
type taskForm struct {
	TemplateID string
	Name       string
	Sheet      string
	Segment    string // a rule over user facts, instead of the file
	SendAt     string
	DryRun     bool
	Notify     map[quan.NotifyType]bool
	// Templates are the shop's templates that can still issue, for a
	// merchant's select; an admin types the template's number.
	Templates []*quan.Template
	Channels  []quan.NotifyType
}

func (c *Console) taskNew(w http.ResponseWriter, r *http.Request, s *session) error {
	v := c.newView(r, s)
	f := taskForm{TemplateID: r.URL.Query().Get("template"), DryRun: true, Notify: map[quan.NotifyType]bool{}}
	if id, err := strconv.ParseInt(f.TemplateID, 10, 64); err == nil && id > 0 {
		// Named after its template, which the operator may change.
		if t, err := c.Templates.Get(r.Context(), s.Who, id); err == nil {
			f.Name = t.Name
		}
	}
	return c.showTaskForm(w, r, v, s, http.StatusOK, f)
}

func (c *Console) showTaskForm(w http.ResponseWriter, r *http.Request, v *view, s *session, status int, f taskForm) error {
	f.Channels = notifyTypes
	// The form is shown again when an upload was cut short, the browser
	// maybe gone and the request's context ended with it: its answer is
	// still a 400 page, not the error of a list read too late.
	ctx := context.WithoutCancel(r.Context())
	if !v.Admin() {
		for _, st := range []quan.TemplateStatus{quan.TemplateActive, quan.TemplatePaused, quan.TemplateDraft} {
			items, _, err := c.Templates.List(ctx, s.Who, quan.TemplateFilter{Status: st, Limit: quan.MaxPageSize})
			if err != nil {
				return err
			}
			f.Templates = append(f.Templates, items...)
		}
	}
	v.Title = v.T("task.new")
	v.Data = f
	c.renderView(w, status, "task_form", v)
	return nil
}

// taskCreate reads the upload form part by part: the file streams into
// tasks.Service.Upload as it arrives, never held in memory, and the other
// fields are small. signedIn has read the CSRF token, the first part.
func (c *Console) taskCreate(w http.ResponseWriter, r *http.Request, s *session) error {
	v := c.newView(r, s)
	if s.form == nil {
		return quan.Errorf(quan.EINVALID, "send the distribution form as multipart/form-data")
	}
	f := taskForm{Notify: map[quan.NotifyType]bool{}}
	var in tasks.NewTask
	created := false
	form, err := qhttp.ReadUploadForm(r.Context(), s.form, true, c.Tasks.Upload, func(_ *qhttp.UploadForm, name, val string) {
		switch name {
		case "templateId":
			f.TemplateID = val
		case "name":
			f.Name = val
		case "sheet":
			f.Sheet = val
		case "segment":
			f.Segment = val
		case "sendAt":
			f.SendAt = val
		case "dryRun":
			f.DryRun = val != ""
		case "notify":
			f.Notify[quan.NotifyType(val)] = true
			in.Notify = append(in.Notify, quan.NotifyType(val))
		}
	})
	in.File, in.FileName = form.File, form.FileName
	defer func() {
		if !created && in.File.Path != "" {
			c.Tasks.Files.Remove(in.File.Path) // Create removes it too; twice is harmless
		}
	}()
	bad := form.Bad
	switch quan.ErrorCode(err) {
	case "":
	case quan.ETOOLARGE:
		// The rest of the body is not read: the file was the last part
		// that mattered, and it is refused.
		bad = append(bad, quan.FieldError{Field: "file", Message: quan.ErrorMessage(err)})
	default:
		return err
	}
	in.Name, in.Sheet, in.DryRun, in.Segment = f.Name, f.Sheet, f.DryRun, f.Segment
	if f.TemplateID != "" {
		id, err := strconv.ParseInt(f.TemplateID, 10, 64)
		if err != nil || id <= 0 {
			bad = append(bad, quan.FieldError{Field: "templateId", Message: fmt.Sprintf("%q is not a template number", f.TemplateID)})
		}
		in.TemplateID = id
	}
	sendAt, err := parseInputTime(v, f.SendAt)
	if err != nil {
		bad = append(bad, quan.FieldError{Field: "sendAt", Message: err.Error()})
	}
	if !f.DryRun {
		// A dry run previews at once; the time is the real run's, which
		// its page offers again.
		in.SendAt = sendAt
	}
	if _, err := quan.ParseNotifyTypes(joinNotify(in.Notify)); err != nil {
		bad = append(bad, quan.FieldError{Field: "notify", Message: err.Error()})
	}
	if len(bad) > 0 {
		v.setError(&quan.Error{Code: quan.EINVALID, Message: "the task has invalid fields", Fields: bad}, taskInputs...)
		return c.showTaskForm(w, r, v, s, http.StatusBadRequest, f)
	}
	t, err := c.Tasks.Create(r.Context(), s.Who, in)
	if err != nil {
		if quan.ErrorCode(err) != quan.EINVALID {
			return err
		}
		v.setError(err, taskInputs...)
		return c.showTaskForm(w, r, v, s, http.StatusBadRequest, f)
	}
	created = true
	to := fmt.Sprintf("%s/tasks/%d?done=created", Prefix, t.ID)
	if t.DryRun && f.SendAt != "" {
		to += "&sendAt=" + url.QueryEscape(f.SendAt)
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
	return nil
}

// parseInputTime reads a datetime-local input in the operator's zone; ""
// is the zero time (now).
func parseInputTime(v *view, s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, v.loc); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a date and time such as 2026-11-11T20:00", s)
}

func joinNotify(ns []quan.NotifyType) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = string(n)
	}
	return strings.Join(parts, ",")
}

type taskShowData struct {
	T             *quan.Task
	Template      *quan.Template // nil if it cannot be read
	Snap          taskSnapshot
	Notifications *quan.TaskNotifications // nil if the task notifies no one
	Retryable     int64                   // failed rows a retry would try again
	SendAt        string                  // the real run's time, for a dry run's form
	Causes        []string
}

// causes are the keys of a snapshot's counts of rows that got no coupon,
// in the order the page lists them.
var causes = []string{string(quan.CauseInvalidID), string(quan.CauseInexactNumber), string(quan.CauseDuplicate),
	string(quan.CauseLimitReached), string(quan.CauseOutOfStock), string(quan.CauseTemplateInactive), string(quan.CauseNotEligible), "canceled"}

func (c *Console) taskShow(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	t, err := c.Tasks.Get(r.Context(), s.Who, id)
	if err != nil {
		return err
	}
	d := taskShowData{T: t, Snap: snapshotOf(t), SendAt: r.URL.Query().Get("sendAt"), Causes: causes}
	if tpl, err := c.Templates.Get(r.Context(), s.Who, t.TemplateID); err == nil {
		d.Template = tpl
	}
	if d.Notifications, err = c.Tasks.TaskNotificationsFor(r.Context(), t); err != nil {
		return err
	}
	if t.Status.Done() && !t.DryRun {
		f := t.Counts.Failed
		d.Retryable = f.OutOfStock + f.TemplateInactive + f.LimitReached + f.NotEligible
	}
	v := c.newView(r, s)
	q := r.URL.Query()
	switch q.Get("done") {
	case "created":
		v.Notice = v.T("task.created")
	case "canceled":
		v.Notice = v.T("task.canceledNotice")
	case "retry":
		v.Notice = v.T("task.retried", q.Get("of"), q.Get("n"))
	case "real":
		v.Notice = v.T("task.realNotice", q.Get("of"))
	}
	if e := q.Get("error"); e != "" {
		v.Error = e
	}
	v.Title = v.T("task.one", t.ID, t.Name)
	v.Data = d
	c.renderView(w, http.StatusOK, "task", v)
	return nil
}

// back redirects to task id's page, with err's message if the action was
// refused for a reason the operator can read; other errors are returned.
func back(w http.ResponseWriter, r *http.Request, id int64, err error) error {
	switch quan.ErrorCode(err) {
	case quan.ETRANSITION, quan.ECONFLICT, quan.EINVALID:
	default:
		return err
	}
	http.Redirect(w, r, fmt.Sprintf("%s/tasks/%d?error=%s", Prefix, id, url.QueryEscape(quan.ErrorMessage(err))), http.StatusSeeOther)
	return nil
}

func (c *Console) taskCancel(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	if _, err := c.Tasks.Cancel(r.Context(), s.Who, id); err != nil {
		return back(w, r, id, err)
	}
	http.Redirect(w, r, fmt.Sprintf("%s/tasks/%d?done=canceled", Prefix, id), http.StatusSeeOther)
	return nil
}

// taskReal distributes a finished dry run's file for real, at the time the
// form says (empty: now).
func (c *Console) taskReal(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	v := c.newView(r, s)
	at, err := parseInputTime(v, r.PostFormValue("sendAt"))
	if err != nil {
		return back(w, r, id, quan.Errorf(quan.EINVALID, "send at: %v", err))
	}
	t, err := c.Tasks.RunForReal(r.Context(), s.Who, id, at)
	if err != nil {
		return back(w, r, id, err)
	}
	http.Redirect(w, r, fmt.Sprintf("%s/tasks/%d?done=real&of=%d", Prefix, t.ID, id), http.StatusSeeOther)
	return nil
}

func (c *Console) taskRetry(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	res, err := c.Tasks.Retry(r.Context(), s.Who, id, tasks.RetryTask{})
	if err != nil {
		return back(w, r, id, err)
	}
	http.Redirect(w, r, fmt.Sprintf("%s/tasks/%d?done=retry&of=%d&n=%d", Prefix, res.Task.ID, id, res.Retried), http.StatusSeeOther)
	return nil
}

// taskFailuresXLSX serves the failure report the runner wrote.
func (c *Console) taskFailuresXLSX(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	return qhttp.ServeFailureReport(w, r, c.Tasks, s.Who, id)
}

// taskFailuresCSV streams the failure report as CSV, as the API does.
func (c *Console) taskFailuresCSV(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	rows, err := c.Tasks.Failures(r.Context(), s.Who, id)
	if err != nil {
		return err
	}
	qhttp.WriteFailuresCSV(w, c.logger(), id, rows)
	return nil
}

// taskSnapshot is a task's progress as its page's live stream sends it.
// Every viewer of the task gets the same one, whatever their language:
// StatusText has the status in each.
type taskSnapshot struct {
	ID          int64             `json:"id"`
	Status      quan.TaskStatus   `json:"status"`
	StatusText  map[string]string `json:"statusText"`
	DryRun      bool              `json:"dryRun"`
	Done        bool              `json:"done"`
	Reason      string            `json:"reason,omitempty"`
	Percent     float64           `json:"percent"`
	PercentText string            `json:"percentText"` // "42.5%"
	Counts      quan.TaskCounts   `json:"counts"`
	Failed      map[string]int64  `json:"failed"` // by cause, and "canceled"
	FailedTotal int64             `json:"failedTotal"`
	RowsTotal   string            `json:"rowsTotal"` // "≈12000" while the file is being read
	RowsPerSec  float64           `json:"rowsPerSecond"`
	RateText    string            `json:"rateText"`
	ETASeconds  int64             `json:"etaSeconds"`
	ETA         string            `json:"eta"` // "1:05", "" when unknown
}

// taskPercent is how far t is, in percent with one decimal: the share of
// its file's data the applied chunks reach. The furthest chunk applied
// counts, so while chunks travel out of order it runs a little ahead;
// it stays below 100 until the task has succeeded, and is 100 then.
func taskPercent(t *quan.Task) float64 {
	if t.Status == quan.TaskSucceeded {
		return 100
	}
	if t.BytesTotal <= 0 {
		return 0
	}
	p := float64(min(t.BytesRead, t.BytesTotal)) * 100 / float64(t.BytesTotal)
	return min(float64(int64(p*10))/10, 99.9)
}

// snapshotOf is t's progress without its speed, which takes two looks.
func snapshotOf(t *quan.Task) taskSnapshot {
	s := taskSnapshot{
		ID: t.ID, Status: t.Status, DryRun: t.DryRun, Done: t.Status.Done(), Reason: t.Reason,
		Percent: taskPercent(t), Counts: t.Counts, FailedTotal: t.Counts.FailedTotal() + t.Counts.Canceled,
		StatusText: map[string]string{},
	}
	for lang := range languages {
		s.StatusText[lang] = translate(lang, "task.status."+string(t.Status))
	}
	s.PercentText = strconv.FormatFloat(s.Percent, 'f', 1, 64) + "%"
	f := t.Counts.Failed
	s.Failed = map[string]int64{
		string(quan.CauseInvalidID): f.InvalidID, string(quan.CauseInexactNumber): f.InexactNumber,
		string(quan.CauseDuplicate): f.Duplicate, string(quan.CauseLimitReached): f.LimitReached,
		string(quan.CauseOutOfStock): f.OutOfStock, string(quan.CauseTemplateInactive): f.TemplateInactive,
		string(quan.CauseNotEligible): f.NotEligible,
		"canceled":                    t.Counts.Canceled,
	}
	switch {
	case t.Status.Done():
		s.RowsTotal = strconv.FormatInt(t.Counts.Rows+t.Counts.Canceled, 10)
	case t.BytesRead > 0 && t.BytesTotal > 0:
		s.RowsTotal = "≈" + strconv.FormatInt(t.Counts.Rows*t.BytesTotal/t.BytesRead, 10)
	default:
		s.RowsTotal = "?"
	}
	if t.Status.Done() && !t.StartedAt.IsZero() {
		if el := t.FinishedAt.Sub(t.StartedAt).Seconds(); el > 0 {
			s.RowsPerSec = float64(t.Counts.Rows) / el
		}
	}
	s.RateText = strconv.FormatFloat(s.RowsPerSec, 'f', 0, 64)
	return s
}

// taskLive is the tasks' live stream: one poller per task watched, which
// computes the speed from its successive looks at the task, shared by
// every viewer.
type taskLive struct {
	c   *Console
	hub *Hub[int64, taskSnapshot]
}

// liveEvery is how often the task page's stream looks at a task.
const liveEvery = 500 * time.Millisecond

func newTaskLive(c *Console) *taskLive {
	l := &taskLive{c: c}
	l.hub = &Hub[int64, taskSnapshot]{
		Fetch:  l.fetcher(),
		Every:  liveEvery,
		Final:  func(s taskSnapshot) bool { return s.Done },
		Logger: c.logger(),
	}
	return l
}

// liveIdentity is who the pollers read tasks as: each viewer was checked
// when they opened the stream.
var liveIdentity = quan.Identity{Role: quan.RoleAdmin, Subject: "console:live"}

// sample is a poller's last look at a task.
type sample struct {
	at          time.Time
	rows, bytes int64
	rate, bps   float64 // smoothed rows and bytes per second
}

// fetcher returns the hub's Fetch, which keeps each task's last sample:
// one poller per task calls it, but pollers of different tasks at once.
func (l *taskLive) fetcher() func(ctx context.Context, id int64) (taskSnapshot, error) {
	var mu sync.Mutex
	samples := map[int64]sample{}
	return func(ctx context.Context, id int64) (taskSnapshot, error) {
		t, err := l.c.Tasks.Get(ctx, liveIdentity, id)
		if err != nil {
			return taskSnapshot{}, err
		}
		snap := snapshotOf(t)
		// The speed is of wall time between looks (monotonic), not the
		// service's clock: it measures this process watching the runner.
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		for k, old := range samples {
			if now.Sub(old.at) > time.Minute {
				delete(samples, k) // its viewers left before it finished
			}
		}
		prev, ok := samples[id]
		cur := sample{at: now, rows: t.Counts.Rows, bytes: t.BytesRead}
		if ok && now.Sub(prev.at) < 10*liveEvery {
			dt := now.Sub(prev.at).Seconds()
			rate, bps := float64(t.Counts.Rows-prev.rows)/dt, float64(t.BytesRead-prev.bytes)/dt
			// Smoothed, so that the figures do not jump with each chunk.
			cur.rate, cur.bps = smooth(prev.rate, rate), smooth(prev.bps, bps)
		}
		if snap.Done {
			delete(samples, id)
			if snap.RowsPerSec == 0 {
				snap.RowsPerSec = cur.rate
			}
		} else {
			samples[id] = cur
			snap.RowsPerSec = cur.rate
			if cur.bps > 0 && t.BytesTotal > t.BytesRead {
				snap.ETASeconds = int64(float64(t.BytesTotal-t.BytesRead)/cur.bps + 0.5)
				snap.ETA = clockText(snap.ETASeconds)
			}
		}
		snap.RowsPerSec = float64(int64(snap.RowsPerSec*10)) / 10
		snap.RateText = strconv.FormatFloat(snap.RowsPerSec, 'f', 0, 64)
		return snap, nil
	}
}

// smooth moves an average of per-second figures towards x.
func smooth(avg, x float64) float64 {
	if avg == 0 {
		return x
	}
	return 0.6*avg + 0.4*x
}

// clockText writes seconds as m:ss or h:mm:ss.
func clockText(sec int64) string {
	if sec >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", sec/3600, sec/60%60, sec%60)
	}
	return fmt.Sprintf("%d:%02d", sec/60, sec%60)
}

// events streams task id's progress to a viewer whose shop owns it.
func (l *taskLive) events(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	if _, err := l.c.Tasks.Get(r.Context(), s.Who, id); err != nil {
		return err
	}
	ch, cancel := l.hub.Watch(r.Context(), id)
	defer cancel()
	if err := ServeEvents(w, r, ch, "snapshot", func(v taskSnapshot) ([]byte, error) { return json.Marshal(v) }); err != nil {
		l.c.logger().Warn("task events", "task", id, "err", err)
	}
	return nil
}
