package sheet

import (
	"errors"
	"io"
	"sync/atomic"
)

const (
	chunkSize = 256 << 10
	nChunks   = 4
)

// errIncomplete tells a parser that the window ends before the element it
// is parsing; the caller refills the window and parses it again.
var errIncomplete = errors.New("incomplete")

type chunk struct {
	buf []byte // data is buf[headroom:headroom+n]
	n   int
	err error // set on the last chunk; io.EOF at the clean end
}

// headroom is the space left before the data of each chunk, so that the
// unparsed end of the previous chunk (usually part of one row) can be put
// in front of the new data without copying the chunk itself.
const headroom = 64 << 10

// stream runs a producer (inflating or decoding) in its own goroutine and
// hands its output to the parser through a window. The window is normally
// a chunk buffer itself, with the unparsed tail of the previous window
// copied into the chunk's headroom; a buffer goes back to the producer
// only after the parser has moved to the next one, so a buffer is never
// read and written at once. Longer tails fall back to a growing buffer.
type stream struct {
	chunks chan chunk
	free   chan []byte
	done   chan struct{}
	exited chan struct{}

	win  []byte // unparsed input is win[pos:]
	pos  int
	held []byte // chunk buffer backing win, or nil
	big  []byte // window for tails longer than headroom
	size int    // chunk size
	eof  bool   // no more chunks will come
	err  error  // producer's final error (io.EOF at the clean end)
}

// newStream starts a goroutine copying src, of about n bytes, into chunks.
// Small inputs get small buffers.
func newStream(src io.Reader, n int64) *stream {
	size := chunkSize
	if n >= 0 && n < chunkSize {
		size = max(int(n)+512, 4096)
	}
	return newStreamSize(src, size)
}

// newStreamSize is newStream with chunks of size bytes; tests use tiny
// chunks to split the input everywhere.
func newStreamSize(src io.Reader, size int) *stream {
	s := &stream{
		chunks: make(chan chunk, nChunks-2),
		free:   make(chan []byte, nChunks),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
		size:   size,
	}
	for range nChunks {
		s.free <- make([]byte, headroom+size)
	}
	go s.produce(src)
	return s
}

func (s *stream) produce(src io.Reader) {
	defer close(s.exited)
	for {
		var b []byte
		select {
		case b = <-s.free:
		case <-s.done:
			return
		}
		n, err := io.ReadFull(src, b[headroom:])
		if err == io.ErrUnexpectedEOF {
			err = io.EOF
		}
		select {
		case s.chunks <- chunk{b, n, err}:
		case <-s.done:
			return
		}
		if err != nil {
			return
		}
	}
}

// fill moves the unparsed input in front of the next chunk. It returns
// false when no input will come any more (s.err tells why). More unparsed
// input than limit means one element is too long: fill returns ErrTooLong.
func (s *stream) fill(limit int) (bool, error) {
	if s.eof {
		return false, nil
	}
	tail := s.win[s.pos:]
	if len(tail) > limit {
		return false, ErrTooLong
	}
	c := <-s.chunks
	data := c.buf[headroom : headroom+c.n]
	if len(tail) <= headroom {
		start := headroom - len(tail)
		copy(c.buf[start:], tail)
		s.release()
		s.held = c.buf
		s.win = c.buf[start : headroom+c.n]
	} else {
		if s.held == nil && len(s.win) > 0 && &s.win[0] == &s.big[0] {
			n := copy(s.big, tail)
			s.big = s.big[:n]
		} else {
			s.big = append(s.big[:0], tail...)
		}
		s.release()
		s.big = append(s.big, data...)
		s.win = s.big
		s.free <- c.buf
	}
	s.pos = 0
	if c.err != nil {
		s.eof = true
		s.err = c.err
		return c.n > 0, nil
	}
	return true, nil
}

// release hands the chunk backing the window back to the producer.
func (s *stream) release() {
	if s.held != nil {
		s.free <- s.held
		s.held = nil
	}
}

// close stops the producer and waits for it, so that the file can be closed
// safely afterwards. Safe to call twice.
func (s *stream) close() {
	select {
	case <-s.done:
		return
	default:
	}
	close(s.done)
	<-s.exited
}

// countingReader counts the bytes read through it for Reader.Progress.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
