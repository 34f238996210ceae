package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReadmeExamples runs the README's example blocks against a real
// server started as the API tour's intro starts it, as a user would paste
// them into a shell: each command once, in order, no retry the README does
// not show. It interprets the few shell and curl forms the blocks use, so
// it needs no shell or curl (readmeShell.run), and a background `go run
// ./cmd/quan sms-sink ... &` (in-process, on the port the tour's server
// sends to); "# → sms-sink prints: LINE" checks that the sink printed a
// line matching LINE, "…" standing for any text.
func TestReadmeExamples(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := readmeBlocks(t, string(readme), "")
	if len(blocks) != 6 {
		t.Fatalf("README has %d readme-test blocks, want 6", len(blocks))
	}
	env := testEnv(t)
	sh := newReadmeShell(t, env)
	srv := startServe(t, env, sh.serveArgs(string(readme))...)
	sh.base = srv.URL()
	for _, block := range blocks {
		cmds := splitCommands(block)
		if len(cmds) < 5 {
			t.Fatalf("found only %d commands in a README block", len(cmds))
		}
		for _, c := range cmds {
			if pattern, ok := strings.CutPrefix(c.expect, "sms-sink prints: "); ok {
				sh.checkSink(pattern)
				continue
			}
			if sh.run(c) {
				continue
			}
			words := shellWords(t, c.text, sh.vars)
			if len(words) > 4 && strings.Join(words[:4], " ") == "go run ./cmd/quan sms-sink" && words[len(words)-1] == "&" {
				sh.startSink(words[4 : len(words)-1])
				continue
			}
			t.Fatalf("README command not understood by the test: %q", c.text)
		}
		sh.endBlock()
	}
}

// readmeShell runs README commands against a test server, with the
// files they name in a folder of their own.
type readmeShell struct {
	t    *testing.T
	env  map[string]string
	base string // the server's URL, for localhost:8080
	dir  string
	vars map[string]string

	// ready says the README has waited for the server's /readyz: a
	// request before then fails when pasted while the server starts.
	ready bool
	// The last request and its answer, for the expectation that follows.
	last []string
	res  *http.Response
	body []byte
	// unshown is a curl command whose answer the README has yet to show
	// (a "# → STATUS" line), lest a pasted error pass unseen; answered is
	// the command whose answer a "# →" line may describe.
	unshown, answered string

	// The server's --sms-url and --sms-secret as the README writes them,
	// and a free port held for the sink the README starts later.
	smsURL, smsSecret string
	smsPort           net.Listener
	sink              *syncBuffer // what the sink printed
}

func newReadmeShell(t *testing.T, env map[string]string) *readmeShell {
	return &readmeShell{t: t, env: env, dir: t.TempDir(), vars: map[string]string{}, sink: &syncBuffer{}}
}

// run runs c, a command of a form every block may use, and reports
// whether it knew the form:
//   - "# → STATUS[, text]": the last request's answer (checkExpectation);
//   - NAME=$(go run ./cmd/quan ARGS) and go run ./cmd/quan ARGS (quan
//     in-process; distribute --server waits for the server);
//   - NAME=$(curl ... | jq -r .field): a field the answer must have;
//   - curl ...: one request; -sS (the answer shown, so a "# →" line must
//     follow) or --fail-with-body/-f (an error status fails the test), -o
//     FILE, -w '%{http_code}\n';
//   - until curl ... [>/dev/null | | grep [-q] 'TEXT']; do sleep N; done:
//     the request again until it succeeds (-f: a status below 400) or
//     its answer holds TEXT, as the shell loop does;
//   - printf 'TEXT\n' > FILE.
func (sh *readmeShell) run(c command) bool {
	t := sh.t
	switch {
	case c.expect != "":
		if sh.answered == "" {
			t.Fatalf("README says %q of no request", c.expect)
		}
		if err := checkExpectation(c.expect, sh.res, sh.body); err != nil {
			t.Fatalf("%s\nafter: %s", err, sh.answered)
		}
		sh.unshown, sh.answered = "", ""
		return true
	}
	sh.shown()
	sh.answered = ""
	switch {
	case c.curl != "":
		words := shellWords(t, c.curl, sh.vars)
		sh.request(words)
		var reply map[string]any
		if err := json.Unmarshal(sh.body, &reply); err != nil {
			t.Fatalf("%s: %v: %s", c.curl, err, sh.body)
		}
		if reply[c.field] == nil {
			t.Fatalf("README's %s | jq -r .%s prints null: %d %s", c.curl, c.field, sh.res.StatusCode, sh.body)
		}
		sh.vars[c.assign] = fmt.Sprint(reply[c.field])
		sh.answered = c.curl // the field is checked: saying the answer is optional
		return true
	case c.assign != "":
		// NAME=$(go run ./cmd/quan ... | tail -n1) takes the last line.
		subst, last := strings.CutSuffix(c.subst, " | tail -n1")
		out := strings.TrimSpace(runQuan(t, sh.env, sh.quanArgs(subst)))
		if last {
			out = out[strings.LastIndex(out, "\n")+1:]
		}
		sh.vars[c.assign] = out
		return true
	}
	words := shellWords(t, c.text, sh.vars)
	switch {
	case words[0] == "curl":
		sh.request(words)
		sh.answered = c.text
		if !failFlag(words) {
			sh.unshown = c.text
		}
	case words[0] == "until":
		sh.until(c.text, words)
	case words[0] == "printf" && len(words) == 4 && words[2] == ">":
		sh.printf(words[1], words[3])
	case len(words) > 3 && strings.Join(words[:3], " ") == "go run ./cmd/quan" && words[len(words)-1] != "&":
		args := sh.quanArgs(strings.Join(sh.files(words[3:]), " "))
		if strings.Contains(args, "--server ") {
			sh.needReady(c.text)
		}
		runQuan(t, sh.env, args)
	default:
		return false
	}
	return true
}

// shown fails the test if the last request's answer went unshown.
func (sh *readmeShell) shown() {
	if sh.unshown != "" {
		sh.t.Fatalf("README shows no answer (\"# → STATUS ...\") of %s: a pasted error would pass unseen", sh.unshown)
	}
}

// endBlock ends a block: its last answer must have been shown.
func (sh *readmeShell) endBlock() { sh.shown() }

// needReady fails the test unless the README has waited for the server.
func (sh *readmeShell) needReady(cmd string) {
	if !sh.ready {
		sh.t.Fatalf("README sends %s before it waits for the server (until curl -sf localhost:8080/readyz ...): pasted, it fails while the server starts", cmd)
	}
}

// request performs a curl command line once.
func (sh *readmeShell) request(words []string) {
	if !strings.HasSuffix(words[len(words)-1], "/readyz") {
		sh.needReady(strings.Join(words, " "))
	}
	sh.last = words
	sh.res, sh.body = sh.curl(words)
}

// untilRE is the README's loop of a request until it succeeds.
var untilRE = regexp.MustCompile(`^until (curl .*?)(?: >/dev/null| \| grep (-q )?('[^']*'|\S+))?; do sleep \d+; done$`)

// until runs `until curl ...; do sleep N; done` as the shell does: the
// request again until it succeeds, or its answer holds grep's text. A
// loop that never ends fails the test after a minute.
func (sh *readmeShell) until(text string, words []string) {
	t := sh.t
	m := untilRE.FindStringSubmatch(strings.Join(strings.Fields(stripComment(text)), " "))
	if m == nil {
		t.Fatalf("README loop not understood by the test: %q", text)
	}
	req := shellWords(t, m[1], sh.vars)
	var want string
	if m[3] != "" {
		want = shellWords(t, m[3], sh.vars)[0]
	}
	readyz := strings.HasSuffix(req[len(req)-1], "/readyz")
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		var ok bool
		if readyz {
			ok = sh.probe(req)
		} else {
			sh.request(req)
			ok = (!failFlag(req) || sh.res.StatusCode < 400) && (want == "" || strings.Contains(string(sh.body), want))
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("README's loop %q never ended; the last answer: %s", text, sh.body)
		}
	}
	if readyz {
		sh.ready = true
		return
	}
	if m[2] == "" && want != "" { // grep without -q prints the answer
		sh.unshown, sh.answered = text, text
	}
}

// probe runs a request whose failure to connect is expected (the server
// is starting) and reports whether curl would succeed.
func (sh *readmeShell) probe(words []string) bool {
	u := sh.base + strings.TrimPrefix(words[len(words)-1], "localhost:8080")
	res, err := http.Get(u)
	if err != nil {
		return false
	}
	res.Body.Close()
	return !failFlag(words) || res.StatusCode < 400
}

// failFlag reports whether a curl command fails on an error status.
func failFlag(words []string) bool {
	return slices.Contains(words, "--fail-with-body") || slices.Contains(words, "-f") || slices.Contains(words, "-sf") || slices.Contains(words, "-fs")
}

// stripComment drops a shell comment from the end of a command.
func stripComment(s string) string {
	inQuote := false
	for i, r := range s {
		switch {
		case r == '\'':
			inQuote = !inQuote
		case r == '#' && !inQuote && (i == 0 || s[i-1] == ' '):
			return strings.TrimSpace(s[:i])
		}
	}
	return s
}

// tourServeRE finds the API tour's serve command in the README's prose.
var tourServeRE = regexp.MustCompile("`go run ./cmd/quan serve (--data ./quan-try[^`]*)`")

// serveArgs returns the flags of the API tour's serve command, for the
// test's server: its data folder, and for --sms-url a free port that
// startSink gives the README's sms-sink.
func (sh *readmeShell) serveArgs(readme string) []string {
	t := sh.t
	m := tourServeRE.FindStringSubmatch(readme)
	if m == nil {
		t.Fatal("the README's API tour does not start with `go run ./cmd/quan serve --data ./quan-try ...`")
	}
	args := strings.Fields(m[1])
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--data":
			args[i+1] = sh.env["QUAN_DATA"]
		case "--sms-url":
			u, err := url.Parse(args[i+1])
			if err != nil {
				t.Fatalf("README's --sms-url: %v", err)
			}
			if sh.smsPort, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { sh.smsPort.Close() })
			sh.smsURL = u.String()
			u.Host = sh.smsPort.Addr().String()
			args[i+1] = u.String()
		case "--sms-secret":
			sh.smsSecret = args[i+1]
		}
	}
	return args
}

// startSink runs `quan sms-sink args... &` in the background until the
// test ends, on the port the server sends to. Its --addr and
// --sms-secret must be the ones the tour's server was given.
func (sh *readmeShell) startSink(args []string) {
	t := sh.t
	args = slices.Clone(args)
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--addr":
			if want := "http://" + args[i+1] + "/send"; sh.smsURL != want {
				t.Fatalf("README starts sms-sink at %s, the server sends SMS to %q", want, sh.smsURL)
			}
			args[i+1] = sh.smsPort.Addr().String()
		case "--sms-secret":
			if args[i+1] != sh.smsSecret {
				t.Fatalf("README's sms-sink has --sms-secret %q, the server %q", args[i+1], sh.smsSecret)
			}
		}
	}
	sh.smsPort.Close() // for the sink to take it at once
	stderr := &syncBuffer{}
	m := &Main{Stdout: sh.sink, Stderr: stderr, Getenv: func(string) string { return "" }}
	ctx, stop := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() {
		done <- (&SMSSinkCommand{Main: m, Ready: func(string) { close(ready) }}).Run(ctx, args)
	}()
	select {
	case <-ready:
	case err := <-done:
		stop()
		t.Fatalf("quan sms-sink %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("sms-sink: %v", err)
		}
	})
}

// checkSink checks that the sink has printed a line that matches
// pattern, where "…" stands for any text: the README shows it once the
// message was sent, which the sink answered after it printed.
func (sh *readmeShell) checkSink(pattern string) {
	parts := strings.Split(pattern, "…")
	matches := func(line string) bool {
		for _, p := range parts {
			i := strings.Index(line, p)
			if i < 0 {
				return false
			}
			line = line[i+len(p):]
		}
		return true
	}
	if !slices.ContainsFunc(strings.Split(sh.sink.String(), "\n"), matches) {
		sh.t.Fatalf("README says sms-sink prints %q; it printed:\n%s", pattern, sh.sink.String())
	}
}

// printf runs `printf 'FORMAT' > FILE` for a format of text and \n only.
func (sh *readmeShell) printf(format, file string) {
	if strings.ContainsAny(format, "%") || strings.Contains(strings.ReplaceAll(format, `\n`, ""), `\`) {
		sh.t.Fatalf("printf format %q: the test knows only text and \\n", format)
	}
	path := sh.files([]string{file})[0]
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(format, `\n`, "\n")), 0o600); err != nil {
		sh.t.Fatal(err)
	}
}

// quanArgs points a quan command's --data ./quan-try at the test
// server's data folder, and its --server at the test server.
func (sh *readmeShell) quanArgs(args string) string {
	if strings.Contains(args, "--data") && !strings.Contains(args, "--data ./quan-try") {
		sh.t.Fatalf("README command %q uses a data folder other than its server's ./quan-try", args)
	}
	args = strings.ReplaceAll(args, "--data ./quan-try", "--data "+sh.env["QUAN_DATA"])
	return strings.ReplaceAll(args, "http://localhost:8080", sh.base)
}

// files puts bare file names (users.xlsx) in the shell's folder.
func (sh *readmeShell) files(words []string) []string {
	out := make([]string, len(words))
	bare := func(w string) bool {
		return (strings.HasSuffix(w, ".xlsx") || strings.HasSuffix(w, ".csv")) && !strings.Contains(w, "/")
	}
	for i, w := range words {
		if field, path, ok := strings.Cut(w, "=@"); ok && bare(path) { // curl -F file=@users.xlsx
			w = field + "=@" + filepath.Join(sh.dir, path)
		} else if bare(w) {
			w = filepath.Join(sh.dir, w)
		}
		out[i] = w
	}
	return out
}

func (sh *readmeShell) curl(words []string) (*http.Response, []byte) {
	return runCurl(sh.t, sh.base, sh.files(words))
}

// readmeBlocks returns the README's tested blocks whose marker starts with
// label; label "" returns those of the embedded default (all but
// "production").
func readmeBlocks(t *testing.T, readme, label string) []string {
	t.Helper()
	var blocks []string
	for {
		_, after, ok := strings.Cut(readme, "<!-- readme-test:")
		if !ok {
			return blocks
		}
		marker := strings.TrimSpace(after)
		_, after, _ = strings.Cut(after, "```sh\n")
		block, rest, ok := strings.Cut(after, "```")
		if !ok {
			t.Fatal("README example block is not closed")
		}
		production := strings.HasPrefix(marker, "production")
		if label == "" && !production || label != "" && strings.HasPrefix(marker, label) {
			blocks = append(blocks, block)
		}
		readme = rest
	}
}

type command struct {
	text   string // a command, continuation lines joined
	assign string // NAME of NAME=$(go run ./cmd/quan ...)
	subst  string // the quan arguments of the substitution
	expect string // a "# → ..." line: what the previous command returns
	// NAME=$(curl ... | jq -r .field): the curl command and the field
	curl, field string
}

var (
	assignRE     = regexp.MustCompile(`^([A-Z_]+)=\$\(go run \./cmd/quan (.*)\)$`)
	curlAssignRE = regexp.MustCompile(`(?s)^([A-Z_]+)=\$\((curl .*) \| jq -r \.([A-Za-z]+)\)$`)
)

// splitCommands splits a shell block into commands, joining lines ended by
// a backslash or inside single quotes; comments are dropped except the
// "# → STATUS ..." expectations.
func splitCommands(block string) []command {
	var out []command
	var cur strings.Builder
	inQuote := false
	for _, line := range strings.Split(block, "\n") {
		if !inQuote && cur.Len() == 0 {
			trimmed := strings.TrimSpace(line)
			if strings.HasPrefix(trimmed, "# → ") {
				out = append(out, command{expect: strings.TrimPrefix(trimmed, "# → ")})
				continue
			}
			if trimmed == "" || strings.HasPrefix(trimmed, "#") {
				continue
			}
		}
		inQuote = inQuote != (strings.Count(line, "'")%2 == 1)
		if strings.HasSuffix(line, "\\") && !inQuote {
			cur.WriteString(strings.TrimSuffix(line, "\\"))
			continue
		}
		cur.WriteString(line)
		if inQuote {
			cur.WriteString("\n")
			continue
		}
		c := command{text: strings.TrimSpace(cur.String())}
		if m := assignRE.FindStringSubmatch(c.text); m != nil {
			c.assign, c.subst = m[1], m[2]
		} else if m := curlAssignRE.FindStringSubmatch(c.text); m != nil {
			c.assign, c.curl, c.field = m[1], m[2], m[3]
		}
		out = append(out, c)
		cur.Reset()
	}
	return out
}

// shellWords splits a command into words: single quotes literal, double
// quotes and bare words with $VAR expanded.
func shellWords(t *testing.T, s string, vars map[string]string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	inWord := false
	expand := func(i int) int { // s[i] == '$'
		j := i + 1
		for j < len(s) && (s[j] == '_' || s[j] >= 'A' && s[j] <= 'Z') {
			j++
		}
		name := s[i+1 : j]
		v, ok := vars[name]
		if !ok {
			t.Fatalf("README uses $%s before setting it", name)
		}
		w.WriteString(v)
		return j
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '#' && !inWord: // a comment, to the end
			i = len(s)
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
			i++
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				t.Fatalf("unclosed quote in %q", s)
			}
			w.WriteString(s[i+1 : i+1+end])
			i += end + 2
			inWord = true
		case c == '"':
			i++
			for i < len(s) && s[i] != '"' {
				if s[i] == '$' {
					i = expand(i)
					continue
				}
				w.WriteByte(s[i])
				i++
			}
			i++
			inWord = true
		case c == '$':
			i = expand(i)
			inWord = true
		default:
			w.WriteByte(c)
			i++
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

func runQuan(t *testing.T, env map[string]string, args string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	m := &Main{Stdout: &stdout, Stderr: &stderr, Getenv: func(k string) string { return env[k] }}
	if err := m.Run(context.Background(), strings.Fields(args)); err != nil {
		t.Fatalf("quan %s: %v\n%s", args, err, stderr.String())
	}
	return stdout.String()
}

// runCurl performs the request of a curl command line against base, in
// place of localhost:8080. -f and --fail-with-body make a status ≥ 400
// fail the test, as they make curl fail; -w takes only '%{http_code}\n'.
func runCurl(t *testing.T, base string, words []string) (*http.Response, []byte) {
	t.Helper()
	method, url, data, out, fail := "", "", "", "", false
	var form [][2]string
	header := http.Header{}
	for i := 1; i < len(words); i++ {
		switch w := words[i]; w {
		case "-s", "-sS", "-S":
		case "-sf", "-fs", "-f", "--fail-with-body":
			fail = true
		case "-w":
			i++
			if words[i] != `%{http_code}\n` {
				t.Fatalf("curl -w %q not understood by the test", words[i])
			}
		case "-X":
			i++
			method = words[i]
		case "-H":
			i++
			k, v, _ := strings.Cut(words[i], ":")
			header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
		case "-d", "--data":
			i++
			data = words[i]
		case "-F":
			i++
			k, v, _ := strings.Cut(words[i], "=")
			form = append(form, [2]string{k, v})
		case "-o":
			i++
			out = words[i]
		default:
			if strings.HasPrefix(w, "-") {
				t.Fatalf("curl option %s not understood by the test", w)
			}
			url = w
		}
	}
	if !strings.HasPrefix(url, "localhost:8080/") {
		t.Fatalf("curl URL %q does not start with localhost:8080/", url)
	}
	url = base + strings.TrimPrefix(url, "localhost:8080")
	if method == "" {
		method = "GET"
		if data != "" {
			method = "POST"
		}
	}
	var body io.Reader
	if len(form) > 0 {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		for _, kv := range form {
			if path, ok := strings.CutPrefix(kv[1], "@"); ok {
				content, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("curl -F %s=@%s: %v", kv[0], path, err)
				}
				fw, _ := mw.CreateFormFile(kv[0], filepath.Base(path))
				fw.Write(content)
			} else {
				mw.WriteField(kv[0], kv[1])
			}
		}
		mw.Close()
		body = &b
		header.Set("Content-Type", mw.FormDataContentType())
		if method == "" {
			method = "POST"
		}
	}
	if data != "" {
		body = strings.NewReader(data)
		if header.Get("Content-Type") == "" {
			header.Set("Content-Type", "application/x-www-form-urlencoded") // as curl -d does
		}
	}
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if fail && res.StatusCode >= 400 {
		t.Fatalf("curl --fail-with-body %s %s: %d %s", method, url, res.StatusCode, b)
	}
	if out != "" && res.StatusCode < 400 {
		if err := os.WriteFile(out, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return res, b
}

// checkExpectation checks "STATUS[, or : text]" against the last response:
// the status, and each "quoted":value fragment appears in the body, its
// value a string, a number or a flat {...} object written in full.
func checkExpectation(expect string, res *http.Response, body []byte) error {
	if res == nil {
		return fmt.Errorf("expectation %q before any request", expect)
	}
	status, err := strconv.Atoi(expect[:3])
	if err != nil {
		return fmt.Errorf("expectation %q does not start with a status", expect)
	}
	if res.StatusCode != status {
		return fmt.Errorf("README says %q, got %d %s", expect, res.StatusCode, body)
	}
	compact := strings.Join(strings.Fields(string(body)), "")
	for _, frag := range regexp.MustCompile(`"[A-Za-z]+":("[^"]*"|[0-9]+|\{[^{}]*\})`).FindAllString(expect, -1) {
		if !strings.Contains(compact, frag) {
			return fmt.Errorf("README says %q: body lacks %s: %s", expect, frag, body)
		}
	}
	return nil
}
