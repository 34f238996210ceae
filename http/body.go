package http

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/quanhq/quan"
)

// decodeJSON reads a JSON body of at most maxBody bytes into v, refusing
// unknown fields, with an error that names the problem.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	return unmarshalStrict(body, v)
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	// Any Content-Type is read as JSON: curl -d sends form-urlencoded.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	var (
		tooLarge *http.MaxBytesError
		qe       *quan.Error
	)
	switch {
	case errors.As(err, &tooLarge):
		return nil, quan.Errorf(codeTooLarge, "the request body is larger than %d bytes", maxBody)
	case errors.As(err, &qe): // too slow (pacedBody)
		return nil, err
	case err != nil:
		return nil, quan.Errorf(quan.EINVALID, "read request body: %v", err)
	}
	return body, nil
}

// unmarshalStrict decodes the one JSON value of body into v, refusing
// unknown fields and text no field takes (checkText). Every JSON request
// body of the API goes through it, so its errors are the API's: they
// name fields by their JSON path ("rule.amount", "items[2].quantity",
// "body" for the whole body) and never show a Go type or time layout.
func unmarshalStrict(body []byte, v any) error {
	if len(strings.TrimSpace(string(body))) == 0 {
		return quan.Errorf(quan.EINVALID, "the request body is empty; send a JSON object")
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(body, reflect.TypeOf(v), err)
	}
	if dec.More() {
		return quan.Errorf(quan.EINVALID, "the request body holds more than one JSON value")
	}
	if bad := checkText(body); len(bad) > 0 {
		return &quan.Error{Code: quan.EINVALID, Message: "the request body has invalid text", Fields: bad}
	}
	return nil
}

// jsonError turns the error of decoding body into a value of type t into
// an EINVALID error. encoding/json names a bad field by a path that
// includes the Go names of embedded structs, and reports a bad time with
// neither field nor words a client knows; so unless body is not JSON at
// all, it is read again as plain JSON and walked along t to name every
// value t cannot take.
func jsonError(body []byte, t reflect.Type, err error) error {
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &syntaxErr):
		return quan.Errorf(quan.EINVALID, "the request body is not valid JSON: %v (at byte %d)", err, syntaxErr.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return quan.Errorf(quan.EINVALID, "the request body is cut short")
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		// The first decode stopped at a bad value before it met the
		// broken JSON further on.
		return jsonError(body, nil, err)
	}
	w := bodyWalker{}
	w.walk(t, raw, "")
	if len(w.bad) == 0 {
		// Not expected: the walk knows every rule encoding/json applies
		// to request bodies. Its error may name Go types, so it is not
		// shown.
		return quan.Errorf(quan.EINVALID, "the request body is not valid")
	}
	return &quan.Error{Code: quan.EINVALID, Message: "the request body has invalid fields", Fields: w.bad}
}

// maxBodyProblems bounds the field errors of one body: a large body of
// wrong values must not make a larger answer.
const maxBodyProblems = 20

// bodyWalker collects the values of a decoded JSON body that a Go type
// cannot take, as encoding/json decides it.
type bodyWalker struct {
	bad []quan.FieldError
}

func (w *bodyWalker) add(path, format string, args ...any) {
	if len(w.bad) >= maxBodyProblems {
		return
	}
	if path == "" {
		path = "body"
	}
	w.bad = append(w.bad, quan.FieldError{Field: path, Message: fmt.Sprintf(format, args...)})
}

var (
	timeType        = reflect.TypeFor[time.Time]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
)

// exampleTime is the time the API's messages show as an example.
const exampleTime = "2026-11-11T00:00:00+08:00"

// walk checks v, a value decoded with UseNumber, against t at path.
func (w *bodyWalker) walk(t reflect.Type, v any, path string) {
	if t == nil || len(w.bad) >= maxBodyProblems {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if v == nil {
		return // null leaves a Go value as it is
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		raw, err := json.Marshal(v)
		if err == nil {
			err = json.Unmarshal(raw, reflect.New(t).Interface())
		}
		switch {
		case err == nil:
		case t == timeType:
			w.add(path, "not an RFC 3339 time (e.g. %s)", exampleTime)
		default:
			w.add(path, "is not valid")
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			w.add(path, "must be a JSON object, not %s", jsonKind(v))
			return
		}
		fields := jsonFields(t)
		for _, key := range slices.Sorted(maps.Keys(obj)) {
			fv := obj[key]
			f, ok := fieldNamed(fields, key)
			if !ok {
				w.add(join(path, key), "is not a known field")
				continue
			}
			if f.quoted {
				w.walkQuoted(f.typ, fv, join(path, f.name))
				continue
			}
			w.walk(f.typ, fv, join(path, f.name))
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			w.add(path, "must be a JSON object, not %s", jsonKind(v))
			return
		}
		for _, key := range slices.Sorted(maps.Keys(obj)) {
			w.walk(t.Elem(), obj[key], join(path, key))
		}
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			if _, ok := v.(string); !ok {
				w.add(path, "must be a base64 string, not %s", jsonKind(v))
			}
			return
		}
		arr, ok := v.([]any)
		if !ok {
			w.add(path, "must be a JSON array, not %s", jsonKind(v))
			return
		}
		for i, ev := range arr {
			w.walk(t.Elem(), ev, fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			w.add(path, "must be a string, not %s", jsonKind(v))
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			w.add(path, "must be true or false, not %s", jsonKind(v))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		w.walkWhole(t, v, path)
	case reflect.Float32, reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			w.add(path, "must be a number, not %s", jsonKind(v))
			return
		}
		if _, err := strconv.ParseFloat(string(n), t.Bits()); err != nil {
			w.add(path, "%s is out of range", n)
		}
	}
}

// walkQuoted checks a field tagged ",string": a JSON string that holds
// the value.
func (w *bodyWalker) walkQuoted(t reflect.Type, v any, path string) {
	s, ok := v.(string)
	if !ok {
		if v != nil {
			w.add(path, "must be a string, not %s", jsonKind(v))
		}
		return
	}
	if t.Kind() == reflect.String {
		return
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var inner any
	if err := dec.Decode(&inner); err != nil {
		w.add(path, "does not hold a valid value")
		return
	}
	w.walk(t, inner, path)
}

// walkWhole checks a whole number of Go type t.
func (w *bodyWalker) walkWhole(t reflect.Type, v any, path string) {
	n, ok := v.(json.Number)
	if !ok {
		w.add(path, "must be a whole number, not %s", jsonKind(v))
		return
	}
	signed := t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64
	var err error
	var lo, hi string
	var flo, fhi float64 // the range as floats: [flo, fhi)
	if signed {
		_, err = strconv.ParseInt(string(n), 10, t.Bits())
		lo, hi = strconv.FormatInt(-1<<(t.Bits()-1), 10), strconv.FormatInt(1<<(t.Bits()-1)-1, 10)
		flo, fhi = -math.Ldexp(1, t.Bits()-1), math.Ldexp(1, t.Bits()-1)
	} else {
		_, err = strconv.ParseUint(string(n), 10, t.Bits())
		lo, hi = "0", strconv.FormatUint(1<<t.Bits()-1, 10)
		flo, fhi = 0, math.Ldexp(1, t.Bits())
	}
	if err == nil {
		return
	}
	// encoding/json takes only plain digits for a whole number: 1e3 and
	// 1.0 are refused like 1.5.
	f, ferr := strconv.ParseFloat(string(n), 64)
	whole := ferr == nil && f == math.Trunc(f)
	switch {
	case errors.Is(err, strconv.ErrRange), whole && (f < flo || f >= fhi), !signed && strings.HasPrefix(string(n), "-"):
		w.add(path, "%s is out of range: must be a whole number from %s to %s", n, lo, hi)
	case whole:
		w.add(path, "must be a whole number in plain digits, not %s", n)
	default:
		w.add(path, "must be a whole number, not %s", n)
	}
}

// jsonKind names the kind of a JSON value, with its article.
func jsonKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "true or false"
	}
	return "null"
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// jsonField is a field of a struct as encoding/json decodes it.
type jsonField struct {
	name   string
	typ    reflect.Type
	quoted bool // tagged ",string"
}

// jsonFields returns the fields encoding/json decodes into t, those of
// untagged embedded structs among them, under their JSON names.
func jsonFields(t reflect.Type) []jsonField {
	var fs []jsonField
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := sf.Type
		if sf.Anonymous && name == "" {
			et := ft
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				fs = append(fs, jsonFields(et)...)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		quoted := false
		for o := range strings.SplitSeq(opts, ",") {
			quoted = quoted || o == "string"
		}
		fs = append(fs, jsonField{name: name, typ: ft, quoted: quoted})
	}
	return fs
}

// fieldNamed finds the field key decodes into: the one of that exact name,
// else one whose name matches without regard to case, as encoding/json
// does.
func fieldNamed(fs []jsonField, key string) (jsonField, bool) {
	for _, f := range fs {
		if f.name == key {
			return f, true
		}
	}
	for _, f := range fs {
		if strings.EqualFold(f.name, key) {
			return f, true
		}
	}
	return jsonField{}, false
}
