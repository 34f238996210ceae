package quan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
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

// SegmentMatch is what freezing a segment found.
type SegmentMatch struct {
	Scanned   int64 // users whose facts were read
	Matched   int64 // users the rule is true of: the task's rows
	Undecided int64 // users the rule could not decide on (a missing attrs key): not matched
}

// compileSegment compiles expr as a segment rule, or adds its problem to v
// under the field "segment" (the engine's message starts with the line and
// column).
func (s *TaskService) compileSegment(expr string, v *validator) CompiledRule {
	if s.Rules == nil || s.Attributes == nil {
		v.add("segment", "this server has no rule engine or user attributes: send a file of target users")
		return nil
	}
	rule, err := s.Rules.Compile(RuleSegment, expr)
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.Code == EINVALID && len(e.Fields) > 0 {
			for _, f := range e.Fields {
				v.add("segment", f.Message)
			}
			return nil
		}
		v.add("segment", err.Error())
		return nil
	}
	return rule
}

// freezeSegment evaluates rule over every user's facts at now, in user id
// order, and keeps the ids of those it is true of, one a line under a
// userId header, as an upload (Upload). The facts are read in batches,
// the next batch while the last is evaluated.
func (s *TaskService) freezeSegment(ctx context.Context, rule CompiledRule, now time.Time) (StoredFile, SegmentMatch, error) {
	scanned := make(chan struct{})
	defer func() { <-scanned }() // after cancel: nothing reads the store once this returns
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := make(chan batchOfFacts, 1)
	go func() {
		defer close(scanned)
		defer close(batches)
		var after int64
		for {
			fs, err := s.Attributes.ScanUserFacts(ctx, after, segmentBatch)
			select {
			case batches <- batchOfFacts{fs, err}:
			case <-ctx.Done():
				return
			}
			if err != nil || len(fs) < segmentBatch {
				return
			}
			after = fs[len(fs)-1].UserID
		}
	}()

	var m SegmentMatch
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := writeSegment(pw, batches, rule, now, &m)
		pw.CloseWithError(err)
		done <- err
	}()
	stored, err := s.Upload(ctx, pr)
	pr.CloseWithError(io.ErrClosedPipe) // stops the writer if Upload gave up early
	cancel()                            // and the scan
	if werr := <-done; werr != nil && !errors.Is(werr, io.ErrClosedPipe) {
		if err == nil {
			s.Files.Remove(stored.Path)
		}
		return StoredFile{}, m, fmt.Errorf("read user facts: %w", werr)
	}
	if err != nil {
		return StoredFile{}, m, err
	}
	return stored, m, nil
}

// batchOfFacts is one read of the users' facts, or why it failed.
type batchOfFacts struct {
	facts []UserFacts
	err   error
}

// writeSegment writes the file of freezeSegment to w from the batches of
// facts, counting in m.
func writeSegment(w io.Writer, batches <-chan batchOfFacts, rule CompiledRule, now time.Time, m *SegmentMatch) error {
	buf := make([]byte, 0, 64<<10)
	buf = append(buf, "userId\n"...)
	for b := range batches {
		if b.err != nil {
			return b.err
		}
		for i := range b.facts {
			f := &b.facts[i]
			m.Scanned++
			ok, err := rule.Eval(f, nil, now)
			if err != nil {
				m.Undecided++
				continue
			}
			if !ok {
				continue
			}
			m.Matched++
			buf = strconv.AppendInt(buf, f.UserID, 10)
			buf = append(buf, '\n')
			if len(buf) > 60<<10 {
				if _, err := w.Write(buf); err != nil {
					return err
				}
				buf = buf[:0]
			}
		}
	}
	_, err := w.Write(buf)
	return err
}

// segmentFile freezes the segment of rule now (freezeSegment), refusing
// one no user matches: such a task would have nothing to do.
func (s *TaskService) segmentFile(ctx context.Context, rule CompiledRule) (StoredFile, error) {
	f, m, err := s.freezeSegment(ctx, rule, s.now())
	if err != nil {
		if ctx.Err() != nil {
			return StoredFile{}, ctx.Err()
		}
		return StoredFile{}, fmt.Errorf("create task: segment: %w", err)
	}
	if m.Matched > 0 {
		return f, nil
	}
	s.Files.Remove(f.Path)
	msg := fmt.Sprintf("no user matches the segment: %d users have facts on file", m.Scanned)
	if m.Undecided > 0 {
		msg += fmt.Sprintf(", and it could not decide on %d of them (reading a missing attrs key: "+
			`write "k" in user.attrs && ..., or user.attrs.?k.orValue(""))`, m.Undecided)
	}
	return StoredFile{}, fieldErr("segment", msg)
}
