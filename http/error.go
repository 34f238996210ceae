package http

import (
	"cmp"
	"encoding/json"
	"log/slog"
	"math"
	"net/http"
	"strconv"

	"github.com/quanhq/quan"
)

// Codes only the HTTP layer produces.
const (
	codeMethodNotAllowed = "method_not_allowed"
	codeTooLarge         = "request_too_large"
)

// statusOf is the one place where quan's error codes become HTTP statuses.
func statusOf(code string) int {
	switch code {
	case quan.EINVALID:
		return http.StatusBadRequest
	case quan.EUNAUTHORIZED:
		return http.StatusUnauthorized
	case quan.EFORBIDDEN:
		return http.StatusForbidden
	case quan.ENOTFOUND:
		return http.StatusNotFound
	case quan.ECONFLICT, quan.ETRANSITION, quan.ENOTDRAFT, quan.EOUTOFSTOCK, quan.ESTOCKLIMIT,
		quan.ESOLDOUT, quan.ELIMIT, quan.ENOTSTARTED, quan.EENDED, quan.EPAUSED,
		quan.ENOTUSABLE, quan.EPRICECHANGED, quan.ECODEUSED, quan.EALREADYOPEN,
		quan.EDAILYLIMIT, quan.EWEEKLYLIMIT, quan.ESHOPDAILYCAP, quan.ENOTELIGIBLE, quan.EREFUNDED:
		return http.StatusConflict
	case quan.EUNAVAILABLE:
		return http.StatusServiceUnavailable
	case quan.ENOSPACE:
		return http.StatusInsufficientStorage
	case quan.EIDEMMISMATCH:
		return http.StatusUnprocessableEntity
	case quan.ERATELIMITED:
		return http.StatusTooManyRequests
	case codeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case codeTooLarge, quan.ETOOLARGE:
		return http.StatusRequestEntityTooLarge
	case quan.ETOOSLOW:
		return http.StatusRequestTimeout
	}
	return http.StatusInternalServerError
}

// Problem is an RFC 9457 problem document with quan's machine code and,
// for invalid input, one entry per bad field.
type Problem struct {
	Type     string            `json:"type"`
	Title    string            `json:"title"`
	Status   int               `json:"status"`
	Detail   string            `json:"detail"`
	Instance string            `json:"instance,omitempty"`
	Code     string            `json:"code"`
	Errors   []quan.FieldError `json:"errors,omitempty"`
}

// writeError answers with err as application/problem+json, with
// Retry-After on a 429 or a 503. Internal errors are logged and their
// detail is not shown to the client; so are a backend's.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := quan.ErrorCode(err)
	status := PrepareError(w, r, err)
	switch status {
	case http.StatusInternalServerError:
		s.logger().Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	case http.StatusServiceUnavailable, http.StatusInsufficientStorage:
		s.logger().Warn("request failed", "method", r.Method, "path", r.URL.Path, "backend", quan.ErrorBackend(err), "err", err)
	}
	p := Problem{
		Type:     "urn:quan:problem:" + code,
		Title:    http.StatusText(status),
		Status:   status,
		Detail:   quan.ErrorMessage(err),
		Instance: r.URL.Path,
		Code:     code,
		Errors:   quan.ErrorFields(err),
	}
	if status == http.StatusInternalServerError {
		// Whatever the error says (a code no status maps, a panic, an
		// adapter's text) stays in the log: the client learns nothing of
		// the servers.
		p.Detail, p.Code, p.Type, p.Errors = "internal error", quan.EINTERNAL, "urn:quan:problem:"+quan.EINTERNAL, nil
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(p); err != nil {
		s.logger().Debug("write problem", "err", err)
	}
}

func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		s.logger().Debug("write response", "err", err)
	}
}

func (s *Server) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

// PrepareError returns the status err is answered with and sets the
// headers that status calls for: WWW-Authenticate on a 401, Retry-After
// (whole seconds, at least 1) on a 429 or a 503. An EUNAVAILABLE error's
// backend goes to the request's access log line and to
// Server.Unavailable. The API's problems and the console's pages both
// answer errors through it, before they write the body.
func PrepareError(w http.ResponseWriter, r *http.Request, err error) int {
	status := statusOf(quan.ErrorCode(err))
	switch status {
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="quan"`)
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		// Whole seconds, rounded up: a client retrying on the dot is not
		// refused again. At least 1, as 0 would invite a retry at once.
		secs := int64(math.Ceil(quan.ErrorRetryAfter(err).Seconds()))
		w.Header().Set("Retry-After", strconv.FormatInt(max(secs, 1), 10))
	}
	if status == http.StatusServiceUnavailable {
		if e := logEntryOf(r.Context()); e != nil {
			e.backend = cmp.Or(quan.ErrorBackend(err), "unknown")
		}
	}
	return status
}
