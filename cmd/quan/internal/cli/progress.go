package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/tasks"
)

// IsTerminal reports whether w is a character device (a terminal), where
// a progress bar redrawn in place makes sense.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Progress shows a running task: on a terminal a bar redrawn in place at
// every update; elsewhere (a log file, a pipe) a plain line every Every,
// so that logs are not flooded with carriage returns; nothing when Quiet.
type Progress struct {
	W        io.Writer
	Terminal bool
	Quiet    bool
	Every    time.Duration // between plain lines; 0 means 5 s

	last  time.Time
	drawn bool
}

// NewProgress returns the progress display for w: a bar if w is a
// terminal.
func NewProgress(w io.Writer, quiet bool) *Progress {
	return &Progress{W: w, Terminal: IsTerminal(w), Quiet: quiet}
}

// Update shows t's progress, elapsed after its start.
func (p *Progress) Update(t *quan.Task, elapsed time.Duration) {
	if p.Quiet {
		return
	}
	if p.Terminal {
		fmt.Fprintf(p.W, "\r%s", progressLine(t, elapsed, true))
		p.drawn = true
		return
	}
	every := p.Every
	if every <= 0 {
		every = 5 * time.Second
	}
	if now := time.Now(); now.Sub(p.last) >= every {
		p.last = now
		fmt.Fprintln(p.W, progressLine(t, elapsed, false))
	}
}

// Stop ends the bar's line, if one is drawn, for what the command prints
// next when the task did not end (an error, Ctrl-C).
func (p *Progress) Stop() {
	if p.drawn {
		fmt.Fprintln(p.W)
		p.drawn = false
	}
}

// Done shows t's final progress and ends the bar's line.
func (p *Progress) Done(t *quan.Task, elapsed time.Duration) {
	if p.Quiet {
		return
	}
	if p.Terminal {
		fmt.Fprintf(p.W, "\r%s\n", progressLine(t, elapsed, true))
		return
	}
	fmt.Fprintln(p.W, progressLine(t, elapsed, false))
}

// progressLine renders a task's progress: with bar, a 30-column bar.
func progressLine(t *quan.Task, elapsed time.Duration, bar bool) string {
	pct := 0.0
	if t.BytesTotal > 0 {
		pct = float64(min(t.BytesRead, t.BytesTotal)) / float64(t.BytesTotal)
	}
	if t.Status == quan.TaskSucceeded {
		pct = 1
	}
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(t.Counts.Rows) / s
	}
	eta := "--"
	if pct > 0 && pct < 1 {
		eta = (time.Duration(elapsed.Seconds()*(1-pct)/pct) * time.Second).Round(time.Second).String()
	}
	line := fmt.Sprintf("%5.1f%%  %s rows  %s rows/s  ETA %s", pct*100, Thousands(t.Counts.Rows), Thousands(int64(rate)), eta)
	if !bar {
		return fmt.Sprintf("task %d %s: %s", t.ID, t.Status, line)
	}
	const width = 30
	fill := int(pct * width)
	return "[" + strings.Repeat("=", fill) + strings.Repeat(" ", width-fill) + "] " + line
}

// Summary is what a finished task did, as `quan distribute` and `quan
// demo` print it.
type Summary struct {
	Task   *quan.Task    `json:"-"`
	Wall   time.Duration `json:"-"`
	Report string        `json:"-"` // where the failure report is: a path or a URL

	// Extra fields of the JSON form (demo's template and memory).
	TemplateID int64 `json:"-"`
	PeakRSS    int64 `json:"-"`

	// Retry is what the task took from the task it retries; nil for a
	// task of a file.
	Retry *Retry `json:"-"`
}

// Retry is what a retry took from the task it retries: the failed rows it
// tried again and those it left out, by cause.
type Retry struct {
	Of           int64               `json:"of"`
	Retried      int64               `json:"retried"`
	Skipped      tasks.SkippedCounts `json:"skipped"`
	SkippedTotal int64               `json:"skippedTotal"`
}

// Formats of a summary: --output text or json.
const (
	OutputText = "text"
	OutputJSON = "json"
)

// CheckOutput returns a usage error unless format is text or json.
func CheckOutput(format string) error {
	if format != OutputText && format != OutputJSON {
		return Usagef("--output %q: use text or json", format)
	}
	return nil
}

// summaryJSON is the --output json form of a Summary: stable field
// names, counts by cause, the wall time in seconds.
type summaryJSON struct {
	Task          int64             `json:"task"`
	Status        quan.TaskStatus   `json:"status"`
	Reason        string            `json:"reason,omitempty"`
	DryRun        bool              `json:"dryRun"`
	Rows          int64             `json:"rows"`
	Valid         int64             `json:"valid"`
	Issued        int64             `json:"issued"`
	Failed        int64             `json:"failed"`
	FailedBy      quan.FailedCounts `json:"failedByCause"`
	Canceled      int64             `json:"canceled"`
	Blank         int64             `json:"blank"`
	WallSeconds   float64           `json:"wallSeconds"`
	RowsPerSecond int64             `json:"rowsPerSecond"`
	Report        string            `json:"report,omitempty"`
	TemplateID    int64             `json:"templateId,omitempty"`
	PeakRSSBytes  int64             `json:"peakRssBytes,omitempty"`
	Retry         *Retry            `json:"retry,omitempty"`
}

// Write prints s in format (OutputText or OutputJSON) to w.
func (s Summary) Write(w io.Writer, format string) error {
	t, c := s.Task, s.Task.Counts
	rate := int64(0)
	if s.Wall > 0 {
		rate = int64(float64(c.Rows) / s.Wall.Seconds())
	}
	if format == OutputJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(summaryJSON{
			Task: t.ID, Status: t.Status, Reason: t.Reason, DryRun: t.DryRun,
			Rows: c.Rows, Valid: c.Valid, Issued: c.Issued, Failed: c.FailedTotal(), FailedBy: c.Failed,
			Canceled: c.Canceled, Blank: c.Blank, WallSeconds: s.Wall.Seconds(), RowsPerSecond: rate, Report: s.Report,
			TemplateID: s.TemplateID, PeakRSSBytes: s.PeakRSS, Retry: s.Retry,
		})
	}
	fmt.Fprintf(w, "task %d %s", t.ID, t.Status)
	if t.Reason != "" {
		fmt.Fprintf(w, ": %s", t.Reason)
	}
	fmt.Fprintln(w)
	if r := s.Retry; r != nil {
		fmt.Fprintf(w, "  retry of task %d: %s failed rows retried, %s skipped as never retryable\n",
			r.Of, Thousands(r.Retried), Thousands(r.SkippedTotal))
		for _, f := range []struct {
			cause quan.Cause
			n     int64
		}{
			{quan.CauseInvalidID, r.Skipped.InvalidID},
			{quan.CauseInexactNumber, r.Skipped.InexactNumber},
			{quan.CauseDuplicate, r.Skipped.Duplicate},
		} {
			if f.n > 0 {
				fmt.Fprintf(w, "    skipped %-18s %s\n", f.cause, Thousands(f.n))
			}
		}
	}
	fmt.Fprintf(w, "  rows      %s\n", Thousands(c.Rows))
	if c.Blank > 0 {
		fmt.Fprintf(w, "  blank     %s (rows with no user, skipped: not failures)\n", Thousands(c.Blank))
	}
	if t.DryRun {
		fmt.Fprintf(w, "  valid     %s (dry run: nothing issued)\n", Thousands(c.Valid))
	} else {
		fmt.Fprintf(w, "  issued    %s\n", Thousands(c.Issued))
	}
	fmt.Fprintf(w, "  failed    %s\n", Thousands(c.FailedTotal()))
	for _, f := range []struct {
		cause quan.Cause
		n     int64
	}{
		{quan.CauseInvalidID, c.Failed.InvalidID},
		{quan.CauseInexactNumber, c.Failed.InexactNumber},
		{quan.CauseDuplicate, c.Failed.Duplicate},
		{quan.CauseLimitReached, c.Failed.LimitReached},
		{quan.CauseOutOfStock, c.Failed.OutOfStock},
		{quan.CauseTemplateInactive, c.Failed.TemplateInactive},
		{quan.CauseNotEligible, c.Failed.NotEligible},
	} {
		if f.n > 0 {
			fmt.Fprintf(w, "    %-18s %s\n", f.cause, Thousands(f.n))
		}
	}
	if c.Canceled > 0 {
		fmt.Fprintf(w, "  canceled  %s (rows not reached)\n", Thousands(c.Canceled))
	}
	fmt.Fprintf(w, "  wall time %s (%s rows/s)\n", s.Wall.Round(time.Millisecond), Thousands(rate))
	if s.Report != "" {
		fmt.Fprintf(w, "  failure report: %s\n", s.Report)
	}
	if s.PeakRSS > 0 {
		fmt.Fprintf(w, "  peak memory %.0f MB (%d cores)\n", float64(s.PeakRSS)/(1<<20), runtime.NumCPU())
	}
	return nil
}

// PeakRSS is the most memory this process has held, in bytes.
func PeakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024 // Linux reports KiB
}

// Thousands formats n with comma separators: 1,234,567.
func Thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
