package http

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"slices"
	"strconv"
)

// fingerprint hashes a request as its retries must repeat it, to tell a
// retry under an Idempotency-Key from another request: its method, its
// URI and its body. A multipart/form-data body counts by its parts, not
// its bytes: the boundary between the parts is one each client draws
// afresh for every request (curl -F does), so the same form sent twice
// differs in its bytes. Each part counts by its name, its file name and
// the SHA-256 of its content, the parts in any order; the file streams
// through the hash, never held.
//
// The body's bytes are written to it as they go by (io.Writer), then Sum
// gives the fingerprint; Close frees it if Sum is never called.
type fingerprint struct {
	sum hash.Hash // method and URI, then the body's bytes or its parts' digest
	w   io.Writer // where the body's bytes go: sum, or buf to the parts' reader
	// A multipart body goes through a pipe to a reader of its parts,
	// which sends their digest on parts when the pipe is closed.
	buf   *bufio.Writer
	pipe  *io.PipeWriter
	parts chan []byte
}

func newFingerprint(r *http.Request) *fingerprint {
	sum := sha256.New()
	io.WriteString(sum, r.Method+" "+r.URL.RequestURI()+"\n")
	f := &fingerprint{sum: sum, w: sum}
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return f
	}
	pr, pw := io.Pipe()
	f.pipe, f.parts = pw, make(chan []byte, 1)
	// The body goes to the parts' reader in large writes, not in the
	// small reads of the handler's own multipart reader.
	f.buf = bufio.NewWriterSize(pw, 64<<10)
	f.w = f.buf
	go func() { f.parts <- partsDigest(pr, params["boundary"]) }()
	return f
}

// Write takes the next bytes of the body.
func (f *fingerprint) Write(p []byte) (int, error) { return f.w.Write(p) }

// Sum returns the fingerprint of the request whose body was written, in
// hex.
func (f *fingerprint) Sum() string {
	if f.pipe != nil {
		f.buf.Flush()
		f.pipe.Close()
		f.pipe = nil
		f.sum.Write(<-f.parts)
	}
	return hex.EncodeToString(f.sum.Sum(nil))
}

// Close ends the reader of a multipart body's parts, if Sum did not. It
// is safe to call twice.
func (f *fingerprint) Close() {
	if f.pipe != nil {
		f.pipe.Close()
		f.pipe = nil
		<-f.parts
	}
}

// partsDigest reads a multipart body of boundary from r to its end and
// returns the digest of its parts, in any order. A body that is not a
// well-formed form counts as the parts before the fault and the fault.
func partsDigest(r io.Reader, boundary string) []byte {
	// Read to the end whatever happens: the writer must never wait on a
	// reader that left.
	defer io.Copy(io.Discard, r)
	mr := multipart.NewReader(r, boundary)
	var sums [][]byte
	for {
		p, err := mr.NextRawPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			sums = append(sums, []byte("malformed"))
			break
		}
		h := sha256.New()
		for _, s := range []string{p.FormName(), p.FileName()} {
			io.WriteString(h, strconv.Itoa(len(s))+":"+s+"\n")
		}
		_, err = io.Copy(h, p)
		p.Close()
		if err != nil {
			sums = append(sums, []byte("malformed"))
			break
		}
		sums = append(sums, h.Sum(nil))
	}
	slices.SortFunc(sums, bytes.Compare)
	out := sha256.New()
	io.WriteString(out, "multipart/form-data\n")
	for _, s := range sums {
		out.Write(s)
	}
	return out.Sum(nil)
}
