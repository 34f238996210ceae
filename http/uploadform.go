package http

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"strings"

	"github.com/quanhq/quan"
)

// MaxFormField bounds a field of an upload form other than the file.
const MaxFormField = 4 << 10

// UploadForm is a task's upload form as ReadUploadForm read it.
type UploadForm struct {
	File     quan.StoredFile // from upload; Path "" when no file came
	FileName string          // as the browser named it
	Bad      []quan.FieldError
}

// ReadUploadForm reads the parts of a multipart form in their order: the
// part named "file" (one; a second is refused) is streamed to upload,
// never held in memory; every other field, of at most MaxFormField bytes,
// goes trimmed to field, which may add to Bad. A form that ends before
// its closing boundary (the client went away, or sent a body cut short)
// adds to Bad, naming the part it was in ("file" between parts), and
// ends the reading: what upload stored of it is removed. Another error
// of upload (e.g. ETOOLARGE) ends the reading and is returned, with the
// form read so far (its File, if any, for the caller to remove). A file
// part without a name counts as no file when the form comes from a
// browser (noNameNoFile), which sends one for an empty file input.
func ReadUploadForm(ctx context.Context, mr *multipart.Reader, noNameNoFile bool,
	upload func(context.Context, io.Reader) (quan.StoredFile, error), field func(f *UploadForm, name, value string)) (*UploadForm, error) {
	f := &UploadForm{}
	for {
		part, err := mr.NextPart()
		if err == io.EOF { // only the closing boundary ends a form: a wrapped EOF is a form cut short
			return f, nil
		}
		if err != nil {
			if qe := bodyError(err); qe != nil {
				return f, qe
			}
			f.Bad = append(f.Bad, formProblem("file", err))
			return f, nil
		}
		name := part.FormName()
		if name == "file" {
			switch {
			case part.FileName() == "" && noNameNoFile:
			case f.File.Path != "":
				f.Bad = append(f.Bad, quan.FieldError{Field: "file", Message: "send one file only"})
			default:
				f.FileName = part.FileName()
				if f.FileName == "" {
					f.FileName = "upload"
				}
				in := &formPart{r: part}
				stored, err := upload(ctx, in)
				part.Close()
				if fe, cut := in.cutShort(ctx, "file", err); cut {
					f.Bad = append(f.Bad, fe)
					return f, nil
				}
				if err != nil {
					return f, err
				}
				f.File = stored
				continue
			}
			part.Close()
			continue
		}
		b, err := io.ReadAll(io.LimitReader(part, MaxFormField+1))
		part.Close()
		switch {
		case bodyError(err) != nil:
			return f, bodyError(err)
		case err != nil:
			f.Bad = append(f.Bad, formProblem(name, err))
			return f, nil
		case len(b) > MaxFormField:
			f.Bad = append(f.Bad, quan.FieldError{Field: name, Message: fmt.Sprintf("is longer than %d bytes", MaxFormField)})
		default:
			field(f, name, strings.TrimSpace(string(b)))
		}
	}
}

// formPart reads a part of a multipart form and keeps the error of
// reading the form, so that an upload that failed can tell a form cut
// short (the client's doing) from a store that could not keep the file.
type formPart struct {
	r   io.Reader
	err error // the first error of the form's reading, io.EOF aside
}

func (p *formPart) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if err != nil && err != io.EOF && p.err == nil {
		p.err = err
	}
	return n, err
}

// cutShort reports whether the upload of the part failed (err) because
// the form was cut short, or its request ended (ctx), and if so the
// FieldError of field that says so.
func (p *formPart) cutShort(ctx context.Context, field string, err error) (quan.FieldError, bool) {
	switch {
	case err == nil, bodyError(p.err) != nil:
		// The server cut the body off (too slow): not the client's form.
		return quan.FieldError{}, false
	case p.err != nil:
		return formProblem(field, p.err), true
	case ctx.Err() != nil:
		return formProblem(field, ctx.Err()), true
	}
	return quan.FieldError{}, false
}

// formProblem is the FieldError of field whose part could not be read
// because of err: the form ended before its end (the body ended early,
// the connection broke, the request ended), or it is malformed.
func formProblem(field string, err error) quan.FieldError {
	var netErr net.Error
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, context.Canceled),
		errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr):
		return quan.FieldError{Field: field, Message: fmt.Sprintf("the upload ended before its end (%v): nothing was kept, send the form again", err)}
	}
	return quan.FieldError{Field: field, Message: fmt.Sprintf("the form is malformed: %v", err)}
}

// bodyError returns the *quan.Error the request's body reader ended with
// (ETOOSLOW: the server cut a body that came too slowly), nil for any
// other error, which is the form's or the client's.
func bodyError(err error) *quan.Error {
	var qe *quan.Error
	if errors.As(err, &qe) {
		return qe
	}
	return nil
}
