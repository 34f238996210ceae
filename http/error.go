package http

import (
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
		quan.EDAILYLIMIT, quan.EWEEKLYLIMIT, quan.ESHOPDAILYCAP, quan.ENOTELIGIBLE:
		return http.StatusConflict
	case quan.EUNAVAILABLE:
		return http.StatusServiceUnavailable
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
// Retry-After on a 429. Internal errors are logged and their detail is not
// shown to the client.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := quan.ErrorCode(err)
	status := statusOf(code)
	if status == http.StatusInternalServerError {
		s.logger().Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="quan"`)
	}
	if status == http.StatusTooManyRequests {
		// Whole seconds, rounded up: a client retrying on the dot is not
		// refused again. At least 1, as 0 would invite a retry at once.
		secs := int64(math.Ceil(quan.ErrorRetryAfter(err).Seconds()))
		w.Header().Set("Retry-After", strconv.FormatInt(max(secs, 1), 10))
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

// StatusOf is the HTTP status of an error code, for the console, which
// answers the same errors as pages.
func StatusOf(code string) int { return statusOf(code) }
