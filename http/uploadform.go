package http

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
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
// goes trimmed to field, which may add to Bad. An error of upload (e.g.
// ETOOLARGE) ends the reading and is returned, with the form read so far
// (its File, if any, for the caller to remove). A file part
// without a name counts as no file when the form comes from a browser
// (noNameNoFile), which sends one for an empty file input.
func ReadUploadForm(ctx context.Context, mr *multipart.Reader, noNameNoFile bool,
	upload func(context.Context, io.Reader) (quan.StoredFile, error), field func(f *UploadForm, name, value string)) (*UploadForm, error) {
	f := &UploadForm{}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return f, nil
		}
		if err != nil {
			f.Bad = append(f.Bad, quan.FieldError{Field: "file", Message: fmt.Sprintf("the form is cut short or malformed: %v", err)})
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
				stored, err := upload(ctx, part)
				part.Close()
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
		case err != nil:
			f.Bad = append(f.Bad, quan.FieldError{Field: name, Message: fmt.Sprintf("could not be read: %v", err)})
		case len(b) > MaxFormField:
			f.Bad = append(f.Bad, quan.FieldError{Field: name, Message: fmt.Sprintf("is longer than %d bytes", MaxFormField)})
		default:
			field(f, name, strings.TrimSpace(string(b)))
		}
	}
}
