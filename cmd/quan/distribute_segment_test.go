package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/quanhq/quan/cmd/quan/internal/app"
)

// localFacts imports users' facts as CSV into env's data folder.
func localFacts(t *testing.T, env map[string]string, csv string) {
	t.Helper()
	a, err := app.Open(context.Background(), app.Config{DataDir: env["QUAN_DATA"], LogLevel: "warn"}, app.Local, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Facts.Import(context.Background(), app.CLI, strings.NewReader(csv)); err != nil {
		t.Fatal(err)
	}
}

// TestDistributeSegmentCLI: `quan distribute --segment RULE` targets the
// users whose facts match, locally and on a server.
func TestDistributeSegmentCLI(t *testing.T) {
	env := testEnv(t)
	tpl := localTemplate(t, env, 100, 1)
	localFacts(t, env, "userId,level,tags\n1,0,\n2,2,vip\n3,3,\n4,1,vip\n")
	id := fmt.Sprint(tpl.ID)

	out, err := run(t, env, nil, "distribute", "--template", id, "--dry-run", "--segment", "user.level >= 2")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{`succeeded`, `rows\s+2\n`, `valid\s+2 \(dry run`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("dry run's summary lacks %s:\n%s", want, out)
		}
	}
	out, err = run(t, env, nil, "distribute", "--template", id, "--segment", "user.level >= 2")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !regexp.MustCompile(`issued\s+2\n`).MatchString(out) {
		t.Errorf("summary lacks 2 issued:\n%s", out)
	}

	srv := startServe(t, env)
	tok := strings.TrimSpace(runQuan(t, env, "token --role merchant --shop 1"))
	out, err = run(t, env, nil, "distribute", "--server", srv.URL(), "--token", tok, "--template", id,
		"--segment", `"vip" in user.tags`)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// User 2 holds the coupon already; user 4 gets one.
	for _, want := range []string{`issued\s+1\n`, `limit_reached\s+1\n`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("remote summary lacks %s:\n%s", want, out)
		}
	}
	_, err = run(t, env, nil, "distribute", "--server", srv.URL(), "--token", tok, "--template", id, "--segment", "user.levl > 1")
	if err == nil || !strings.Contains(err.Error(), "segment 1:5: undefined field 'levl'") {
		t.Fatalf("bad rule on a server: %v", err)
	}

	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--segment", "user.levl > 1"}, "segment: 1:5: undefined field 'levl'"},
		{[]string{"--segment", "user.level > 1", "users.csv"}, "not both"},
		{[]string{"--segment", " "}, "--segment is empty"},
		{[]string{"--segment", "user.level > 1", "--sheet", "x"}, "--sheet applies to a FILE"},
		{[]string{"--segment", "user.level > 1", "--retry", "1"}, "does not apply to --retry"},
	} {
		_, err := run(t, env, nil, append([]string{"distribute", "--template", id}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("distribute %q: %v; want it to say %q", c.args, err, c.says)
		}
	}
}
