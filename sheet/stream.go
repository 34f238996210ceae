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
	b   []byte
	err error // set on the last chunk; io.EOF at the clean end
}

// stream runs a producer (inflating or decoding) in its own goroutine and
// hands its output to the parser through a sliding window. Every chunk is
// copied into the window before its buffer goes back to the producer, so a
// buffer is never read and written at once; the copy costs far less than
// the parsing.
type stream struct {
	chunks chan chunk
	free   chan []byte
	done   chan struct{}
	exited chan struct{}

	win  []byte // unparsed input is win[pos:]
	pos  int
	size int   // chunk size
	eof  bool  // no more chunks will come
	err  error // producer's final error (io.EOF at the clean end)
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
		chunks: make(chan chunk, nChunks-1),
		free:   make(chan []byte, nChunks),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
		win:    make([]byte, 0, 2*size),
		size:   size,
	}
	for range nChunks - 1 {
		s.free <- make([]byte, size)
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
		n, err := io.ReadFull(src, b)
		if err == io.ErrUnexpectedEOF {
			err = io.EOF
		}
		select {
		case s.chunks <- chunk{b[:n], err}:
		case <-s.done:
			return
		}
		if err != nil {
			return
		}
	}
}

// fill moves the unparsed input to the front of the window and appends the
// next chunk. It returns false when no input will come any more (s.err
// tells why). limit bounds the window: more unparsed input than limit
// means one element is too long, reported as ErrTooLong by the caller.
func (s *stream) fill(limit int) (bool, error) {
	if s.eof {
		return false, nil
	}
	if s.pos > 0 {
		n := copy(s.win, s.win[s.pos:])
		s.win = s.win[:n]
		s.pos = 0
	}
	if len(s.win) > limit {
		return false, ErrTooLong
	}
	c := <-s.chunks
	s.win = append(s.win, c.b...)
	if cap(c.b) == s.size {
		s.free <- c.b[:s.size]
	}
	if c.err != nil {
		s.eof = true
		s.err = c.err
		return len(c.b) > 0, nil
	}
	return true, nil
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
