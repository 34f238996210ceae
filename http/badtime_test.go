package http_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/disk"
	"github.com/quanhq/quan/facts"
	qhttp "github.com/quanhq/quan/http"
	"github.com/quanhq/quan/mysql"
	"github.com/quanhq/quan/mysql/mysqltest"
	"github.com/quanhq/quan/rules"
	"github.com/quanhq/quan/sheet"
	"github.com/quanhq/quan/sqlite"
	"github.com/quanhq/quan/stats"
	"github.com/quanhq/quan/tasks"
	"github.com/quanhq/quan/templates"
)

// stores open a fresh store of each engine: SQLite always, MySQL when
// QUAN_TEST_MYSQL names a server (mysqltest skips without it and fails
// if the server named is down).
var stores = []struct {
	name string
	open func(t *testing.T) quan.Store
}{
	{"SQLite", func(t *testing.T) quan.Store {
		db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "quan.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return sqlite.NewStore(db)
	}},
	{"MySQL", func(t *testing.T) quan.Store {
		db, err := mysql.Open(context.Background(), mysqltest.DSN(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return mysql.NewStore(db)
	}},
}

// newServerOver serves the template, rules, task, attributes and
// statistics routes over store, wired as newServer wires them over
// SQLite, with no runner: tasks stay pending.
func newServerOver(t *testing.T, store quan.Store) *testServer {
	t.Helper()
	ts := &testServer{now: testNow, dir: t.TempDir(), open: openSheet}
	tokens, err := qhttp.NewTokens(testSecret, ts.clock)
	if err != nil {
		t.Fatal(err)
	}
	ts.tokens = tokens
	engine, err := rules.New(rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	files := &disk.Files{Dir: ts.dir}
	ts.api = &qhttp.Server{
		Templates: &templates.Service{Store: store, Now: ts.clock, Rules: engine, Versions: store},
		Tasks: &tasks.Service{Tasks: store, Templates: store, Files: files, Check: checkSheet,
			Count: func(ctx context.Context, path, name string) (int64, error) {
				return sheet.Count(ctx, path, sheet.Options{Sheet: name, MaxRows: testMaxRows})
			},
			Now: ts.clock, ChunkSize: 4, Outbox: store, Rules: engine, Facts: store},
		Facts: &facts.Service{Store: store, Now: ts.clock, Files: files,
			OpenRows: func(path string) (quan.OthersReader, error) { return sheet.OpenRows(path, sheet.Options{Others: true}) }},
		Stats:  &stats.Service{Store: store, Now: ts.clock},
		Tokens: tokens,
		Now:    ts.clock,
	}
	ts.Server = httptest.NewServer(ts.api.Handler())
	t.Cleanup(ts.Close)
	return ts
}

// TestTimesOutOfRange: a time outside 0001-01-01 … 9999-12-31 in UTC
// (year 0000, or 9999-12-31 in a zone west of UTC, which is in the year
// 10000) is 400 naming its field on every route that takes a time, and
// the same on SQLite and MySQL: the root's validation refuses it before
// any store sees it, so nothing is stored. Times at the edges of the
// range are kept and read back as sent on both.
func TestTimesOutOfRange(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			ts := newServerOver(t, st.open(t))
			m := ts.merchant(t, 1)
			admin := ts.token(t, quan.Identity{Role: quan.RoleAdmin})
			draft := ts.create(t, m, validTemplate())
			active := ts.create(t, m, validTemplate())
			ts.do(t, "POST", loc(active.ID)+"/activate", m, nil).want(t, http.StatusOK, "")
			count := func() int {
				var page struct{ Total int }
				ts.do(t, "GET", "/api/v1/templates", m, nil).decode(t, &page)
				return page.Total
			}
			before := count()
			with := func(k string, v any) map[string]any {
				b := validTemplate()
				b[k] = v
				return b
			}
			const (
				year0     = "0000-01-01T00:00:00Z"
				year10000 = "9999-12-31T23:00:00-08:00" // 10000-01-01T07:00:00Z
			)
			fixed := func(start, end string) map[string]any {
				return with("validity", map[string]any{"type": "fixed", "start": start, "end": end})
			}
			okStart, okEnd := testNow.Format(time.RFC3339), testNow.Add(time.Hour).Format(time.RFC3339)
			for _, tc := range []struct {
				name, method, path, token string
				body                      any
				field                     string
			}{
				{"IssueStartYear0", "POST", "/api/v1/templates", m, with("issueStart", year0), "issueStart"},
				{"IssueEndYear10000", "POST", "/api/v1/templates", m, with("issueEnd", year10000), "issueEnd"},
				{"ValidityStartYear0", "POST", "/api/v1/templates", m, fixed(year0, okEnd), "validity.start"},
				{"ValidityEndYear10000", "POST", "/api/v1/templates", m, fixed(okStart, year10000), "validity.end"},
				{"EditIssueStartYear0", "PATCH", loc(draft.ID), m, map[string]any{"issueStart": year0}, "issueStart"},
				{"RulesEffectiveAtYear10000", "POST", loc(active.ID) + "/rules", m, map[string]any{"eligibility": "user.level >= 1", "effectiveAt": year10000}, "effectiveAt"},
				{"EvaluateNowYear0", "POST", loc(active.ID) + "/rules/evaluate", m, map[string]any{"user": map[string]any{"userId": 5}, "now": year0}, "now"},
				{"RegisteredAtYear10000", "PUT", "/api/v1/users/5/attributes", admin, map[string]any{"level": 1, "registeredAt": year10000}, "registeredAt"},
				{"StatsFromYear0", "GET", "/api/v1/stats?from=" + year0, m, nil, "from"},
				{"StatsToYear10000", "GET", fmt.Sprintf("/api/v1/templates/%d/stats?to=%s", active.ID, "9999-12-31T23:00:00-08:00"), m, nil, "to"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					r := ts.do(t, tc.method, tc.path, tc.token, tc.body)
					r.want(t, http.StatusBadRequest, quan.EINVALID)
					if !r.hasField(tc.field) {
						t.Fatalf("errors %+v do not name %s", r.Problem.Errors, tc.field)
					}
				})
			}
			for _, sendAt := range []string{year0, year10000} {
				t.Run("TaskSendAt"+sendAt[:4], func(t *testing.T) {
					r := ts.upload(t, m, map[string]string{"name": "t", "templateId": fmt.Sprint(active.ID), "sendAt": sendAt}, "users.csv", []byte("userId\n1\n"))
					r.want(t, http.StatusBadRequest, quan.EINVALID)
					if !r.hasField("sendAt") {
						t.Fatalf("errors %+v do not name sendAt", r.Problem.Errors)
					}
				})
			}
			t.Run("NothingStored", func(t *testing.T) {
				if n := count(); n != before {
					t.Fatalf("%d templates, %d before", n, before)
				}
				var got quan.Template
				ts.do(t, "GET", loc(draft.ID), m, nil).decode(t, &got)
				if !got.IssueStart.Equal(draft.IssueStart) {
					t.Fatalf("issueStart %s after a refused edit, was %s", got.IssueStart, draft.IssueStart)
				}
				var info templates.RulesInfo
				ts.do(t, "GET", loc(active.ID)+"/rules", m, nil).decode(t, &info)
				if len(info.Versions) != 1 {
					t.Fatalf("%d versions of the rules after a refused change", len(info.Versions))
				}
				var f quan.UserFacts
				ts.do(t, "GET", "/api/v1/users/5/attributes", admin, nil).decode(t, &f)
				if f.Level != 0 || !f.RegisteredAt.IsZero() {
					t.Fatalf("facts %+v stored", f)
				}
				var tasks struct{ Total int }
				ts.do(t, "GET", "/api/v1/tasks", m, nil).decode(t, &tasks)
				if tasks.Total != 0 {
					t.Fatalf("%d tasks stored", tasks.Total)
				}
				assertNoUploads(t, ts.dir)
			})
			t.Run("EdgesKept", func(t *testing.T) {
				b := with("issueStart", "0001-01-01T00:00:01Z")
				b["issueEnd"] = "9999-12-31T23:59:59.999999Z"
				tpl := ts.create(t, m, b)
				var got quan.Template
				ts.do(t, "GET", loc(tpl.ID), m, nil).decode(t, &got)
				if got.IssueStart.Format(time.RFC3339Nano) != "0001-01-01T00:00:01Z" || got.IssueEnd.Format(time.RFC3339Nano) != "9999-12-31T23:59:59.999999Z" {
					t.Fatalf("issue window read back as %s … %s", got.IssueStart.Format(time.RFC3339Nano), got.IssueEnd.Format(time.RFC3339Nano))
				}
			})
		})
	}
}
