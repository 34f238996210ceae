package http_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/tasks"
)

// TestDistributeSegment: a task may target the users whose facts match a
// rule instead of a file, with the outcomes and report of a file of them.
func TestDistributeSegment(t *testing.T) {
	ts := newTestServer(t)
	tok := ts.merchant(t, 1001)
	tpl := ts.activeTemplate(t, tok, 2, 1)
	var facts []quan.UserFacts
	for u := int64(1); u <= 5; u++ {
		facts = append(facts, quan.UserFacts{UserID: u, Level: u - 1, Tags: []string{}})
	}
	if err := ts.store.PutUserFacts(context.Background(), testNow, facts); err != nil {
		t.Fatal(err)
	}
	fields := func(segment string) map[string]string {
		return map[string]string{"name": "members", "templateId": fmt.Sprint(tpl.ID), "segment": segment}
	}

	t.Run("ErrBadRule", func(t *testing.T) {
		r := ts.upload(t, tok, fields("user.level >= 2 && user.levle < 9"), "", nil)
		r.want(t, 400, quan.EINVALID)
		if len(r.Problem.Errors) != 1 || r.Problem.Errors[0].Field != "segment" ||
			!strings.HasPrefix(r.Problem.Errors[0].Message, "1:24: ") {
			t.Fatalf("errors %+v; want segment at 1:24", r.Problem.Errors)
		}
	})
	t.Run("ErrFileAndSegment", func(t *testing.T) {
		r := ts.upload(t, tok, fields("user.level >= 2"), "u.csv", []byte("userId\n1\n"))
		r.want(t, 400, quan.EINVALID)
		if !r.hasField("segment") {
			t.Fatalf("errors %+v do not name segment", r.Problem.Errors)
		}
	})
	t.Run("ErrNoUserMatches", func(t *testing.T) {
		r := ts.upload(t, tok, fields("user.level > 10"), "", nil)
		r.want(t, 400, quan.EINVALID)
		if !r.hasField("segment") || !strings.Contains(r.Problem.Errors[0].Message, "5 users") {
			t.Fatalf("errors %+v; want segment saying none of 5 users matched", r.Problem.Errors)
		}
	})
	t.Run("OK", func(t *testing.T) {
		// Users 3, 4 and 5 match; the stock is 2.
		task := ts.distribute(t, tok, tpl.ID, "", nil, fields("user.level >= 2"))
		want := quan.TaskCounts{Rows: 3, Valid: 2, Issued: 2, Failed: quan.FailedCounts{OutOfStock: 1}}
		if task.Status != quan.TaskSucceeded || task.Counts != want || task.Segment != "user.level >= 2" ||
			task.FileName != tasks.SegmentFileName {
			t.Fatalf("task %s %+v segment %q file %q; want %+v of the segment", task.Status, task.Counts, task.Segment, task.FileName, want)
		}
		rows := ts.reportRows(t, tok, task.ID)
		if len(rows) != 1 || rows[0][0] != "4" || rows[0][1] != "5" || rows[0][3] != "out_of_stock" {
			t.Fatalf("report %v; want line 4, user 5, out of stock", rows)
		}
		for _, u := range []int64{3, 4} {
			if cs, err := ts.store.UserCoupons(context.Background(), u, tpl.ID); err != nil || len(cs) != 1 {
				t.Fatalf("user %d coupons %v, %v; want one", u, cs, err)
			}
		}
		var got struct {
			Segment string `json:"segment"`
		}
		ts.do(t, "GET", fmt.Sprintf("/api/v1/tasks/%d", task.ID), tok, nil).decode(t, &got)
		if got.Segment != "user.level >= 2" {
			t.Fatalf("GET shows segment %q", got.Segment)
		}
	})
}
