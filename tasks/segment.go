package tasks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/quanhq/quan"
)

// A segment task targets the users whose facts match a CEL expression
// (NewTask.Segment) instead of an uploaded file. The segment is frozen
// when the task is created: the ids of the users who match then are
// written, in ascending order under a userId header, to a CSV file kept
// like an upload, and the task runs that file. Everything downstream is a
// file task's — chunks, their numbers and exactly-once application, resume
// after a crash, cancel, the failure report, retry — because a runner that
// reads the file again gets the same rows in the same chunks, however the
// facts change meanwhile. (Reading the facts at run time instead would
// need a snapshot of them for every pass a runner makes over its source.)
// A dry run of a segment counts the users it holds.

// SegmentFileName is the FileName of a segment task: the file quan writes
// of the users the segment matched.
const SegmentFileName = "segment.csv"

// segmentBatch is how many users' facts a segment reads per query.
const segmentBatch = 10_000

// segmentParts is how many ranges of users a segment reads at once, each
// on a connection of its own: as many as the cores, at least two (a
// store on another machine does the reading), at most four.
func segmentParts() int { return min(max(runtime.GOMAXPROCS(0), 2), 4) }

// SegmentMatch is what freezing a segment found.
type SegmentMatch struct {
	Scanned   int64 // users whose facts were read: those the rule's filter passed
	Matched   int64 // users the rule is true of: the task's rows
	Undecided int64 // users the rule could not decide on (a missing attrs key): not matched
}

// compileSegment compiles expr as a segment rule, or adds its problem to v
// under the field "segment" (the engine's message starts with the line and
// column).
func (s *Service) compileSegment(expr string, v *quan.Validation) quan.CompiledRule {
	if s.Rules == nil || s.Facts == nil {
		v.Add("segment", "this server has no rule engine or user attributes: send a file of target users")
		return nil
	}
	rule, err := s.Rules.Compile(quan.RuleSegment, expr)
	if err != nil {
		var e *quan.Error
		if errors.As(err, &e) && e.Code == quan.EINVALID && len(e.Fields) > 0 {
			for _, f := range e.Fields {
				v.Add("segment", f.Message)
			}
			return nil
		}
		v.Add("segment", err.Error())
		return nil
	}
	return rule
}

// freezeSegment evaluates rule over every user's facts at now and keeps
// the ids of those it is true of, in ascending order, one a line under a
// userId header, as an upload (Upload). The users are cut into ranges of
// about equal count (SplitUserFacts), each read and decided by a goroutine
// of its own, and the file is written range after range: the first as it
// is read, each later one from the batches it matched meanwhile, which
// wait in memory (8 bytes a user). Each range reads through the rule's
// filter: the store reads only the facts the rule reads, of the users its
// simple conditions let through, and the rule decides on each of them —
// unless the rule is nothing but those conditions and the store states
// them exactly (FactsFilter.Exact, ExactFilter): then the store decides.
func (s *Service) freezeSegment(ctx context.Context, rule quan.CompiledRule, now time.Time) (quan.StoredFile, SegmentMatch, error) {
	var m SegmentMatch
	splits, err := s.Facts.SplitUserFacts(ctx, segmentParts())
	if err != nil {
		return quan.StoredFile{}, m, fmt.Errorf("read user facts: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel: nothing reads the store once this returns
	filter := rule.Filter()
	decide := !filter.Exact || !s.Facts.ExactFilter(filter.Where)
	if !decide {
		filter.Read = 0 // the store decides: only the ids are read
	}
	parts := make([]chan segmentRead, len(splits)+1)
	for i := range parts {
		parts[i] = make(chan segmentRead, segmentQueue)
		r := segmentRange{after: 0, upTo: math.MaxInt64}
		if i > 0 {
			r.after = splits[i-1]
		}
		if i < len(splits) {
			r.upTo = splits[i]
		}
		wg.Go(func() { s.scanSegment(ctx, rule, decide, filter, r, now, parts[i]) })
	}

	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := writeSegment(pw, parts, &m)
		pw.CloseWithError(err)
		done <- err
	}()
	stored, err := s.Upload(ctx, pr)
	pr.CloseWithError(io.ErrClosedPipe) // stops the writer if Upload gave up early
	cancel()                            // and the scans
	if werr := <-done; werr != nil && !errors.Is(werr, io.ErrClosedPipe) {
		if err == nil {
			s.Files.Remove(stored.Path)
		}
		return quan.StoredFile{}, m, fmt.Errorf("read user facts: %w", werr)
	}
	if err != nil {
		return quan.StoredFile{}, m, err
	}
	return stored, m, nil
}

// segmentQueue is how many batches a range of a segment may match ahead
// of the writer before it waits: enough for a range of 10 million users.
const segmentQueue = 1024

// segmentRange is the users above after up to upTo.
type segmentRange struct{ after, upTo int64 }

// segmentRead is what one read of a range matched, or why it failed.
type segmentRead struct {
	ids []int64 // ascending
	m   SegmentMatch
	err error
}

// scanSegment reads the facts of the users of r through filter, in
// batches along the user id, decides rule on each at now (if decide; else
// every user the store returns matches) and sends what each batch matched
// to out, which it closes at the end. It gives up when ctx ends.
func (s *Service) scanSegment(ctx context.Context, rule quan.CompiledRule, decide bool, filter quan.FactsFilter, r segmentRange, now time.Time, out chan<- segmentRead) {
	defer close(out)
	send := func(b segmentRead) bool {
		select {
		case out <- b:
			return true
		case <-ctx.Done():
			return false
		}
	}
	if r.upTo != math.MaxInt64 {
		filter.Where = append(slices.Clip(filter.Where), quan.FactsClause{{Field: quan.FactUserID, Op: quan.FactLe, Int: r.upTo}})
	}
	for after := r.after; ; {
		fs, err := s.Facts.ScanUserFacts(ctx, after, segmentBatch, filter)
		if err != nil {
			send(segmentRead{err: err})
			return
		}
		b := segmentRead{m: SegmentMatch{Scanned: int64(len(fs))}, ids: make([]int64, 0, len(fs))}
		for i := range fs {
			ok, err := true, error(nil)
			if decide {
				ok, err = rule.Eval(&fs[i], nil, now)
			}
			switch {
			case err != nil:
				b.m.Undecided++
			case ok:
				b.ids = append(b.ids, fs[i].UserID)
			}
		}
		b.m.Matched = int64(len(b.ids))
		if !send(b) || len(fs) < segmentBatch {
			return
		}
		after = fs[len(fs)-1].UserID
	}
}

// writeSegment writes the file of freezeSegment to w from the batches of
// the parts, part after part, adding up their counts in m.
func writeSegment(w io.Writer, parts []chan segmentRead, m *SegmentMatch) error {
	buf := make([]byte, 0, 64<<10)
	buf = append(buf, "userId\n"...)
	for _, part := range parts {
		for b := range part {
			if b.err != nil {
				return b.err
			}
			m.Scanned += b.m.Scanned
			m.Matched += b.m.Matched
			m.Undecided += b.m.Undecided
			for _, id := range b.ids {
				buf = strconv.AppendInt(buf, id, 10)
				buf = append(buf, '\n')
				if len(buf) > 60<<10 {
					if _, err := w.Write(buf); err != nil {
						return err
					}
					buf = buf[:0]
				}
			}
		}
	}
	_, err := w.Write(buf)
	return err
}

// segmentFile freezes the segment of rule now (freezeSegment), refusing
// one no user matches: such a task would have nothing to do.
func (s *Service) segmentFile(ctx context.Context, rule quan.CompiledRule) (quan.StoredFile, error) {
	f, m, err := s.freezeSegment(ctx, rule, s.Now.UTC())
	if err != nil {
		if ctx.Err() != nil {
			return quan.StoredFile{}, ctx.Err()
		}
		return quan.StoredFile{}, fmt.Errorf("create task: segment: %w", err)
	}
	if m.Matched > 0 {
		return f, nil
	}
	s.Files.Remove(f.Path)
	onFile, err := s.Facts.CountUserFacts(ctx)
	if err != nil {
		return quan.StoredFile{}, fmt.Errorf("create task: segment: %w", err)
	}
	msg := fmt.Sprintf("no user matches the segment: %d users have facts on file", onFile)
	if m.Undecided > 0 {
		msg += fmt.Sprintf(", and it could not decide on %d of them (reading a missing attrs key: "+
			`write "k" in user.attrs && ..., or user.attrs.?k.orValue(""))`, m.Undecided)
	}
	return quan.StoredFile{}, fieldErr("segment", msg)
}
