package main

import (
	"fmt"
	"io"
	"strings"
	"syscall"
	"time"

	"github.com/quanhq/quan"
)

// progressLine renders a one-line progress bar of a task.
func progressLine(t *quan.Task, elapsed time.Duration) string {
	pct := 0.0
	if t.BytesTotal > 0 {
		pct = float64(min(t.BytesRead, t.BytesTotal)) / float64(t.BytesTotal)
	}
	if t.Status == quan.TaskSucceeded {
		pct = 1
	}
	const width = 30
	fill := int(pct * width)
	bar := strings.Repeat("=", fill) + strings.Repeat(" ", width-fill)
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(t.Counts.Rows) / s
	}
	eta := "--"
	if pct > 0 && pct < 1 {
		eta = (time.Duration(elapsed.Seconds()*(1-pct)/pct) * time.Second).Round(time.Second).String()
	}
	return fmt.Sprintf("[%s] %5.1f%%  %s rows  %s rows/s  ETA %s",
		bar, pct*100, thousands(t.Counts.Rows), thousands(int64(rate)), eta)
}

// printSummary writes what a finished task did.
func printSummary(w io.Writer, t *quan.Task, wall time.Duration, report string) {
	c := t.Counts
	fmt.Fprintf(w, "task %d %s", t.ID, t.Status)
	if t.Reason != "" {
		fmt.Fprintf(w, ": %s", t.Reason)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  rows      %s\n", thousands(c.Rows))
	if t.DryRun {
		fmt.Fprintf(w, "  valid     %s (dry run: nothing issued)\n", thousands(c.Valid))
	} else {
		fmt.Fprintf(w, "  issued    %s\n", thousands(c.Issued))
	}
	fmt.Fprintf(w, "  failed    %s\n", thousands(c.FailedTotal()))
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
	} {
		if f.n > 0 {
			fmt.Fprintf(w, "    %-18s %s\n", f.cause, thousands(f.n))
		}
	}
	if c.Canceled > 0 {
		fmt.Fprintf(w, "  canceled  %s (rows not reached)\n", thousands(c.Canceled))
	}
	rate := 0.0
	if wall > 0 {
		rate = float64(c.Rows) / wall.Seconds()
	}
	fmt.Fprintf(w, "  wall time %s (%s rows/s)\n", wall.Round(time.Millisecond), thousands(int64(rate)))
	if report != "" {
		fmt.Fprintf(w, "  failure report: %s\n", report)
	}
}

// peakRSS is the most memory this process has held, in bytes.
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024 // Linux reports KiB
}

// thousands formats n with comma separators: 1,234,567.
func thousands(n int64) string {
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
