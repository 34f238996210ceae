package main

import (
	"io"
	"mime/multipart"
)

// newMultipart writes a form with fields and a file part to w and returns
// its Content-Type.
func newMultipart(w io.Writer, fields map[string]string, name, content string) string {
	mw := multipart.NewWriter(w)
	for k, v := range fields {
		mw.WriteField(k, v)
	}
	fw, _ := mw.CreateFormFile("file", name)
	io.WriteString(fw, content)
	mw.Close()
	return mw.FormDataContentType()
}
