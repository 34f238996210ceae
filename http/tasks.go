package http

import (
	"encoding/csv"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/tasks"
)

// createTask takes a multipart form: the file, and the fields name,
// templateId, notify (comma-separated or repeated), sendAt (RFC 3339),
// dryRun and sheet, in any order. The file is streamed to the data folder,
// never held in memory. Instead of the file, a field segment may hold a
// rule over user facts whose users the task targets.
func (s *Server) createTask(w http.ResponseWriter, r *http.Request) error {
	who, err := identity(r)
	if err != nil {
		return err
	}
	if _, err := who.ShopScope(); err != nil {
		return err
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "multipart/form-data" {
		return quan.Errorf(quan.EINVALID, "send the task as multipart/form-data with a file part named \"file\" or a field named \"segment\"")
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return quan.Errorf(quan.EINVALID, "read the form: %v", err)
	}
	var in tasks.NewTask
	created := false
	form, err := ReadUploadForm(r.Context(), mr, false, s.Tasks.Upload, func(f *UploadForm, name, v string) {
		switch name {
		case "name":
			in.Name = v
		case "templateId":
			id, err := strconv.ParseInt(v, 10, 64)
			if err != nil || id <= 0 {
				f.Bad = append(f.Bad, quan.FieldError{Field: name, Message: fmt.Sprintf("%q is not a template id", v)})
			}
			in.TemplateID = id
		case "notify":
			types, err := quan.ParseNotifyTypes(v)
			if err != nil {
				f.Bad = append(f.Bad, quan.FieldError{Field: name, Message: err.Error()})
			}
			in.Notify = append(in.Notify, types...)
		case "sendAt":
			if v == "" {
				return
			}
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				f.Bad = append(f.Bad, quan.FieldError{Field: name, Message: fmt.Sprintf("%q is not an RFC 3339 time such as 2026-11-11T20:00:00+08:00", v)})
			}
			in.SendAt = t
		case "dryRun":
			if v == "" {
				return
			}
			dry, err := strconv.ParseBool(v)
			if err != nil {
				f.Bad = append(f.Bad, quan.FieldError{Field: name, Message: fmt.Sprintf("%q is not true or false", v)})
			}
			in.DryRun = dry
		case "sheet":
			in.Sheet = v
		case "segment":
			in.Segment = v
		default:
			f.Bad = append(f.Bad, quan.FieldError{Field: name, Message: "is not a known field"})
		}
	})
	in.File, in.FileName = form.File, form.FileName
	defer func() {
		if !created && in.File.Path != "" {
			s.Tasks.Files.Remove(in.File.Path) // Create removes it too; twice is harmless
		}
	}()
	if err != nil {
		return err
	}
	bad := form.Bad
	if _, err := quan.ParseNotifyTypes(joinNotify(in.Notify)); err != nil {
		bad = append(bad, quan.FieldError{Field: "notify", Message: err.Error()})
	}
	if len(bad) > 0 {
		return &quan.Error{Code: quan.EINVALID, Message: "the task has invalid fields", Fields: bad}
	}
	t, err := s.Tasks.Create(r.Context(), who, in)
	if err != nil {
		return err
	}
	created = true
	w.Header().Set("Location", fmt.Sprintf("/api/v1/tasks/%d", t.ID))
	s.writeJSON(w, http.StatusCreated, s.taskView(t))
	return nil
}

func joinNotify(ns []quan.NotifyType) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = string(n)
	}
	return strings.Join(parts, ",")
}

// TaskView is a task as the API shows it, with its live progress.
type TaskView struct {
	*quan.Task
	Failed   int64        `json:"failedTotal"`
	Progress TaskProgress `json:"progress"`
	Report   string       `json:"failureReport,omitempty"`    // URL of the failure report
	CSV      string       `json:"failureReportCsv,omitempty"` // URL of the same as CSV
	// Notifications is the task's notification progress, in GET
	// /tasks/{id} of a task that notifies (not in lists).
	Notifications *NotificationsView `json:"notifications,omitempty"`
}

// NotificationsView is a task's notification progress as the API shows
// it, with the URL of its failed notifications.
type NotificationsView struct {
	*quan.TaskNotifications
	FailuresCSV  string `json:"failuresCsv"`
	FailuresXLSX string `json:"failuresXlsx,omitempty"` // when the server writes xlsx
}

// TaskProgress is how far a task is and how fast it goes.
type TaskProgress struct {
	Percent        float64 `json:"percent"`
	RowsPerSecond  float64 `json:"rowsPerSecond"`
	ElapsedSeconds float64 `json:"elapsedSeconds"`
	ETASeconds     float64 `json:"etaSeconds,omitempty"`
}

func (s *Server) taskView(t *quan.Task) TaskView {
	v := TaskView{Task: t, Failed: t.Counts.FailedTotal()}
	if t.ReportPath != "" {
		v.Report = fmt.Sprintf("/api/v1/tasks/%d/failures.xlsx", t.ID)
		v.CSV = fmt.Sprintf("/api/v1/tasks/%d/failures.csv", t.ID)
	}
	if t.BytesTotal > 0 {
		v.Progress.Percent = float64(min(t.BytesRead, t.BytesTotal)) * 100 / float64(t.BytesTotal)
	}
	if t.Status == quan.TaskSucceeded {
		v.Progress.Percent = 100
	}
	if !t.StartedAt.IsZero() {
		end := t.FinishedAt
		if end.IsZero() {
			end = s.Now.UTC()
		}
		el := end.Sub(t.StartedAt).Seconds()
		v.Progress.ElapsedSeconds = el
		if el > 0 {
			v.Progress.RowsPerSecond = float64(t.Counts.Rows) / el
			if t.Status == quan.TaskRunning && t.BytesRead > 0 && t.BytesTotal > t.BytesRead {
				v.Progress.ETASeconds = el * float64(t.BytesTotal-t.BytesRead) / float64(t.BytesRead)
			}
		}
	}
	return v
}

func (s *Server) getTask(w http.ResponseWriter, r *http.Request) error {
	who, id, err := target(r, "task")
	if err != nil {
		return err
	}
	t, err := s.Tasks.Get(r.Context(), who, id)
	if err != nil {
		return err
	}
	v := s.taskView(t)
	if len(t.Notify) > 0 {
		n, err := s.Tasks.TaskNotificationsFor(r.Context(), t)
		if err != nil {
			return err
		}
		v.Notifications = s.notificationsView(t.ID, n)
	}
	s.writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) notificationsView(id int64, n *quan.TaskNotifications) *NotificationsView {
	v := &NotificationsView{TaskNotifications: n, FailuresCSV: fmt.Sprintf("/api/v1/tasks/%d/notifications/failures.csv", id)}
	if s.NotificationFailuresExport != nil {
		v.FailuresXLSX = fmt.Sprintf("/api/v1/tasks/%d/notifications/failures.xlsx", id)
	}
	return v
}

// taskNotifications is GET /tasks/{id}/notifications: the task's
// notification counts by channel and status.
func (s *Server) taskNotifications(w http.ResponseWriter, r *http.Request) error {
	who, id, err := target(r, "task")
	if err != nil {
		return err
	}
	n, err := s.Tasks.NotificationProgress(r.Context(), who, id)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, s.notificationsView(id, n))
	return nil
}

// taskNotificationFailuresCSV is GET
// /tasks/{id}/notifications/failures.csv: the task's failed email and SMS
// messages, one a line, the addresses masked, streamed as they are read.
func (s *Server) taskNotificationFailuresCSV(w http.ResponseWriter, r *http.Request) error {
	who, id, err := target(r, "task")
	if err != nil {
		return err
	}
	ns, err := s.Tasks.FailedNotifications(r.Context(), who, id)
	if err != nil {
		return err
	}
	writeCSV(w, s.logger(), fmt.Sprintf("task-%d-notification-failures.csv", id), quan.NotificationFailureColumns(), ns,
		func(n *quan.Notification) []string {
			return []string{strconv.FormatInt(n.UserID, 10), string(n.Channel), csvText(quan.MaskAddress(n.Channel, n.Address)),
				n.Reason, quan.DescribeReason(n.Reason)}
		})
	return nil
}

// taskNotificationFailuresXLSX is GET
// /tasks/{id}/notifications/failures.xlsx: failures.csv as a workbook,
// with the Chinese and English headers of the task failure report.
func (s *Server) taskNotificationFailuresXLSX(w http.ResponseWriter, r *http.Request) error {
	who, id, err := target(r, "task")
	if err != nil {
		return err
	}
	ns, err := s.Tasks.FailedNotifications(r.Context(), who, id)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="task-%d-notification-failures.xlsx"`, id))
	if err := s.NotificationFailuresExport.Write(r.Context(), w, ns); err != nil {
		// The status is sent: a cut-short file is all that can tell.
		s.logger().Warn("task notification failures xlsx", "task", id, "err", err)
	}
	return nil
}

// csvText keeps a spreadsheet from running text as a formula: text
// starting with =, +, -, @ or a tab gets a leading apostrophe. An address
// as written in a file may be anything.
func csvText(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

func (s *Server) listTasks(w http.ResponseWriter, r *http.Request) error {
	who, err := identity(r)
	if err != nil {
		return err
	}
	q := newQuery(r)
	f := quan.TaskFilter{Status: quan.TaskStatus(q.str("status"))}
	f.Offset, f.Limit = q.page()
	if err := q.err("invalid list parameters"); err != nil {
		return err
	}
	tasks, total, err := s.Tasks.List(r.Context(), who, f)
	if err != nil {
		return err
	}
	items := make([]TaskView, len(tasks))
	for i, t := range tasks {
		items[i] = s.taskView(t)
	}
	limit := f.Limit
	if limit == 0 {
		limit = quan.DefaultPageSize
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"items": items, "total": total, "offset": f.Offset, "limit": limit})
	return nil
}

func (s *Server) cancelTask(w http.ResponseWriter, r *http.Request) error {
	who, id, err := target(r, "task")
	if err != nil {
		return err
	}
	t, err := s.Tasks.Cancel(r.Context(), who, id)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, s.taskView(t))
	return nil
}

func (s *Server) taskFailures(w http.ResponseWriter, r *http.Request) error {
	who, id, err := target(r, "task")
	if err != nil {
		return err
	}
	return ServeFailureReport(w, r, s.Tasks, who, id)
}

// ServeFailureReport answers with the failure report (.xlsx) of task id
// as who may see it: the API's and the console's download.
func ServeFailureReport(w http.ResponseWriter, r *http.Request, tasks *tasks.Service, who quan.Identity, id int64) error {
	path, err := tasks.Report(r.Context(), who, id)
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return quan.Errorf(quan.ENOTFOUND, "the failure report of task %d is missing from the data folder", id)
	}
	if err != nil {
		return fmt.Errorf("open failure report: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("open failure report: %w", err)
	}
	w.Header().Set("Content-Type", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="task-%d-failures.xlsx"`, id))
	http.ServeContent(w, r, "", info.ModTime(), f)
	return nil
}

// taskFailuresCSV serves the failure report as CSV: the rows and columns
// of failures.xlsx, made from the same records as they are read.
func (s *Server) taskFailuresCSV(w http.ResponseWriter, r *http.Request) error {
	who, id, err := target(r, "task")
	if err != nil {
		return err
	}
	rows, err := s.Tasks.Failures(r.Context(), who, id)
	if err != nil {
		return err
	}
	WriteFailuresCSV(w, s.logger(), id, rows)
	return nil
}

// WriteFailuresCSV streams the failed rows of task id (tasks.Service.Failures)
// to w as the CSV attachment task-{id}-failures.csv: the rows and columns
// of the failure report. The status is sent before the rows are read; a
// read that fails cuts the file short and is logged to logger.
func WriteFailuresCSV(w http.ResponseWriter, logger *slog.Logger, id int64, rows iter.Seq2[quan.Failure, error]) {
	writeCSV(w, logger, fmt.Sprintf("task-%d-failures.csv", id), quan.FailureColumns(), rows,
		func(f quan.Failure) []string {
			return []string{strconv.FormatInt(f.Line, 10), csvUserID(f), f.Cause.Label(), string(f.Cause), f.Cause.Describe()}
		})
}

// writeCSV streams rows to w as the CSV attachment name under header,
// each row's fields made by fields. The status is sent before the rows
// are read: a read that fails cuts the file short, which is all that can
// tell the client, and is logged.
func writeCSV[T any](w http.ResponseWriter, logger *slog.Logger, name string, header []string, rows iter.Seq2[T, error], fields func(T) []string) {
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s"`, name))
	cw := csv.NewWriter(w)
	cw.Write(header)
	for row, err := range rows {
		if err != nil {
			logger.Warn("csv cut short", "file", name, "err", err)
			break
		}
		cw.Write(fields(row))
	}
	cw.Flush()
}

// csvUserID is the user id of a failed row as failures.csv writes it: as
// written, with two exceptions. An inexact number is in exponent form
// ("1.2345678901234568E+18", as Excel shows it), so the file, uploaded
// again, refuses the row as inexact rather than issue to whoever holds
// the rounded digits. Text a spreadsheet would run as a formula (=, +, -,
// @ first) gets a leading apostrophe; no such text is a user id.
func csvUserID(f quan.Failure) string {
	raw := f.Raw
	if f.Cause == quan.CauseInexactNumber {
		if v, err := strconv.ParseFloat(strings.TrimSpace(raw), 64); err == nil {
			return strconv.FormatFloat(v, 'E', -1, 64)
		}
	}
	if raw != "" && strings.ContainsRune("=+-@\t\r", rune(raw[0])) {
		return "'" + raw
	}
	return raw
}

// RetryView is the answer to a retry: the new task, how many failed rows
// it tries again and how many it left out, by cause.
type RetryView struct {
	TaskView
	Retried      int64               `json:"retried"`
	Skipped      tasks.SkippedCounts `json:"skipped"`
	SkippedTotal int64               `json:"skippedTotal"`
}

// retryTask is POST /tasks/{id}/retry with an optional JSON body
// {"templateId", "name"}: 201 with the new task over the failed rows of
// task id that may succeed now.
func (s *Server) retryTask(w http.ResponseWriter, r *http.Request) error {
	who, id, err := target(r, "task")
	if err != nil {
		return err
	}
	if _, err := who.ShopScope(); err != nil {
		return err
	}
	var body struct {
		TemplateID int64  `json:"templateId"`
		Name       string `json:"name"`
	}
	raw, err := readBody(w, r)
	if err != nil {
		return err
	}
	if len(strings.TrimSpace(string(raw))) > 0 {
		if err := unmarshalStrict(raw, &body); err != nil {
			return err
		}
	}
	if body.TemplateID < 0 {
		return &quan.Error{Code: quan.EINVALID, Message: "the retry has invalid fields",
			Fields: []quan.FieldError{{Field: "templateId", Message: "must be a template id, or left out for the task's own"}}}
	}
	res, err := s.Tasks.Retry(r.Context(), who, id, tasks.RetryTask{TemplateID: body.TemplateID, Name: body.Name})
	if err != nil {
		return err
	}
	w.Header().Set("Location", fmt.Sprintf("/api/v1/tasks/%d", res.Task.ID))
	s.writeJSON(w, http.StatusCreated, RetryView{
		TaskView: s.taskView(res.Task), Retried: res.Retried, Skipped: res.Skipped, SkippedTotal: res.Skipped.Total(),
	})
	return nil
}
