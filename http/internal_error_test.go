package http_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/quanhq/quan"
)

// leakyTemplates fails every read with an error whose text names the
// servers, under a code no status maps and with a plain error.
type leakyTemplates struct {
	quan.TemplateStore
	err error
}

func (s leakyTemplates) Template(context.Context, int64, int64) (*quan.Template, error) {
	return nil, s.err
}

// TestInternalErrorsSayNothing: a 500 answers "internal error", whatever
// the error (a plain one, or a domain error of a code no status maps);
// its text is in the log only.
func TestInternalErrorsSayNothing(t *testing.T) {
	for name, cause := range map[string]error{
		"Plain":        fmt.Errorf("read template: dial tcp 10.1.2.3:3306: connection refused"),
		"UnmappedCode": fmt.Errorf("read template: %w", quan.Errorf(quan.ECACHECOLD, "redis 10.1.2.3:6379 lost template 1")),
	} {
		t.Run(name, func(t *testing.T) {
			logs := &logBuffer{}
			ts := newServer(t, func(ts *testServer) {
				ts.api.Logger = slog.New(slog.NewTextHandler(logs, nil))
				ts.api.Templates.Store = leakyTemplates{ts.store, cause}
			})
			res := ts.do(t, "GET", "/api/v1/templates/1", ts.merchant(t, 1), nil)
			res.want(t, http.StatusInternalServerError, quan.EINTERNAL)
			if res.Problem.Detail != "internal error" || strings.Contains(string(res.Body), "10.1.2.3") {
				t.Errorf("500 body tells the client: %s", res.Body)
			}
			if !strings.Contains(logs.String(), "10.1.2.3") {
				t.Errorf("the cause is not in the log:\n%s", logs.String())
			}
		})
	}
}
