package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestReadmeExamples runs the README's example block against a real
// server, as a user would paste it into a shell. It interprets the few
// shell and curl forms the block uses, so it needs no shell or curl.
func TestReadmeExamples(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	block := readmeBlock(t, string(readme))
	env := testEnv(t)
	srv := startServe(t, env)

	vars := map[string]string{}
	cmds := splitCommands(block)
	if len(cmds) < 10 {
		t.Fatalf("found only %d commands in the README block", len(cmds))
	}
	var last *http.Response
	var lastBody []byte
	for _, c := range cmds {
		if c.expect != "" {
			checkExpectation(t, c.expect, last, lastBody)
			continue
		}
		if c.assign != "" {
			vars[c.assign] = strings.TrimSpace(runQuan(t, env, c.subst))
			continue
		}
		words := shellWords(t, c.text, vars)
		switch {
		case words[0] == "curl":
			last, lastBody = runCurl(t, srv.URL(), words)
		default:
			t.Fatalf("README command not understood by the test: %q", c.text)
		}
	}
}

func readmeBlock(t *testing.T, readme string) string {
	t.Helper()
	_, after, ok := strings.Cut(readme, "<!-- readme-test:")
	if !ok {
		t.Fatal("README has no readme-test marker")
	}
	_, after, _ = strings.Cut(after, "```sh\n")
	block, _, ok := strings.Cut(after, "```")
	if !ok {
		t.Fatal("README example block is not closed")
	}
	return block
}

type command struct {
	text   string // a command, continuation lines joined
	assign string // NAME of NAME=$(go run ./cmd/quan ...)
	subst  string // the quan arguments of the substitution
	expect string // a "# → ..." line: what the previous command returns
}

var assignRE = regexp.MustCompile(`^([A-Z_]+)=\$\(go run \./cmd/quan (.*)\)$`)

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
// place of localhost:8080. -f makes a status ≥ 400 fail the test, as it
// makes curl fail.
func runCurl(t *testing.T, base string, words []string) (*http.Response, []byte) {
	t.Helper()
	method, url, data, fail := "", "", "", false
	header := http.Header{}
	for i := 1; i < len(words); i++ {
		switch w := words[i]; w {
		case "-s":
		case "-sf", "-fs", "-f":
			fail = true
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
		t.Fatalf("curl -f %s %s: %d %s", method, url, res.StatusCode, b)
	}
	return res, b
}

// checkExpectation checks "STATUS[, or : text]" against the last response:
// the status, and each "quoted":value fragment appears in the body.
func checkExpectation(t *testing.T, expect string, res *http.Response, body []byte) {
	t.Helper()
	if res == nil {
		t.Fatalf("expectation %q before any request", expect)
	}
	status, err := strconv.Atoi(expect[:3])
	if err != nil {
		t.Fatalf("expectation %q does not start with a status", expect)
	}
	if res.StatusCode != status {
		t.Fatalf("README says %q, got %d %s", expect, res.StatusCode, body)
	}
	compact := strings.Join(strings.Fields(string(body)), "")
	for _, frag := range regexp.MustCompile(`"[A-Za-z]+":("[^"]*"|[0-9]+)`).FindAllString(expect, -1) {
		if !strings.Contains(compact, frag) {
			t.Fatalf("README says %q: body lacks %s: %s", expect, frag, body)
		}
	}
}
