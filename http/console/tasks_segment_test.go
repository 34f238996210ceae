package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/tasks"
)

// TestTaskSegment: the upload form takes a segment instead of the file;
// a rule that does not compile is said next to its input, with where.
func TestTaskSegment(t *testing.T) {
	var d distribution
	tc := newConsole(t, withTasks(&d))
	tpl := activeTemplate(t, tc, 1001, 1000)
	if err := tc.store.PutUserFacts(context.Background(), tc.now, []quan.UserFacts{
		{UserID: 1, Level: 1, Tags: []string{}}, {UserID: 2, Level: 2, Tags: []string{}}, {UserID: 3, Level: 3, Tags: []string{}},
	}); err != nil {
		t.Fatal(err)
	}
	b := tc.signedIn(t, "m1001")
	status, _, body := b.get("/console/tasks/new")
	if status != http.StatusOK {
		t.Fatalf("upload form: %d\n%s", status, body)
	}
	contains(t, body, `<textarea id="segment" name="segment"`)

	form := func(segment string) [][2]string {
		return [][2]string{{"templateId", itoa(tpl.ID)}, {"name", "会员"}, {"file", ""}, {"segment", segment}, {"dryRun", "1"}}
	}
	status, _, body = b.upload(form("user.level >= 2 && user.levl < 9"), nil, true)
	if status != http.StatusBadRequest {
		t.Fatalf("bad rule: %d\n%s", status, body)
	}
	contains(t, body, `<span id="segment-err"><span class="field-error" role="alert">1:24: undefined field &#39;levl&#39;`,
		`>user.level &gt;= 2 &amp;&amp; user.levl &lt; 9</textarea>`)

	status, path, body := b.upload(form("user.level >= 2"), nil, true)
	if status != http.StatusOK || !strings.Contains(path, "done=created") {
		t.Fatalf("segment: %d at %s\n%s", status, path, body)
	}
	contains(t, body, "<code>user.level &gt;= 2</code>")
	task, err := d.tasks.Get(context.Background(), admin, taskID(t, path))
	if err != nil || task.Segment != "user.level >= 2" || task.FileName != tasks.SegmentFileName {
		t.Fatalf("task %+v, %v; want the segment's", task, err)
	}
}
