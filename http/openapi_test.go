package http_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestOpenAPIMatchesRoutes fails when a served route is missing from the
// OpenAPI document or the document names a route that is not served.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	ts := newClaimServer(t, nil) // every route
	r := ts.do(t, "GET", "/api/v1/openapi.json", "", nil)
	r.want(t, 200, "")
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	r.decode(t, &doc)
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi %q", doc.OpenAPI)
	}
	var documented []string
	for path, ops := range doc.Paths {
		for method := range ops {
			switch method {
			case "get", "post", "put", "patch", "delete", "head", "options":
				documented = append(documented, strings.ToUpper(method)+" "+path)
			}
		}
	}
	served := ts.api.Routes()
	slices.Sort(documented)
	slices.Sort(served)
	for _, s := range served {
		if !slices.Contains(documented, s) {
			t.Errorf("route %s is served but not in openapi.json", s)
		}
	}
	for _, d := range documented {
		if !slices.Contains(served, d) {
			t.Errorf("openapi.json names %s, which is not served", d)
		}
	}
}

// TestOpenAPIOperations holds the document to what a client generator
// (oapi-codegen, openapi-typescript) needs and what the server answers:
// see openapiProblems. The standard linter (Redocly, .ci/run and
// http/redocly.yaml) checks the rest of the document.
func TestOpenAPIOperations(t *testing.T) {
	doc, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	problems, err := openapiProblems(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestOpenAPIProblemsFindsThem checks the checker: a small document with
// one fault of each kind yields one problem for each.
func TestOpenAPIProblemsFindsThem(t *testing.T) {
	problem := `{"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}`
	doc := `{
	  "openapi": "3.1.0",
	  "security": [{"bearer": []}],
	  "tags": [{"name": "a"}],
	  "components": {
	    "schemas": {"Problem": {"type": "object"}},
	    "parameters": {"IdempotencyKey": {"name": "Idempotency-Key", "in": "header", "schema": {"type": "string"}}},
	    "responses": {
	      "Unauthorized": {"description": "x", "headers": {"WWW-Authenticate": {"schema": {"type": "string"}}}, "content": ` + problem + `},
	      "BareUnavailable": {"description": "no Retry-After", "content": ` + problem + `}
	    }
	  },
	  "paths": {
	    "/good": {"get": {"operationId": "getGood", "summary": "s", "tags": ["a"],
	      "responses": {"200": {"description": "ok"}, "401": {"$ref": "#/components/responses/Unauthorized"}}}},
	    "/noid": {"get": {"summary": "s", "tags": ["a"],
	      "responses": {"200": {"description": "ok"}, "401": {"$ref": "#/components/responses/Unauthorized"}}}},
	    "/badid": {"get": {"operationId": "Get_bad", "summary": "s", "tags": ["a"],
	      "responses": {"200": {"description": "ok"}, "401": {"$ref": "#/components/responses/Unauthorized"}}}},
	    "/dup": {"get": {"operationId": "getGood", "summary": "s", "tags": ["a"],
	      "responses": {"200": {"description": "ok"}, "401": {"$ref": "#/components/responses/Unauthorized"}}}},
	    "/noerrors": {"get": {"operationId": "getNoErrors", "summary": "s", "tags": ["a"], "security": [],
	      "responses": {"200": {"description": "ok"}}}},
	    "/no401": {"get": {"operationId": "getNo401", "summary": "s", "tags": ["a"],
	      "responses": {"200": {"description": "ok"}, "404": {"description": "x", "content": ` + problem + `}}}},
	    "/untagged": {"get": {"operationId": "getUntagged", "summary": "s", "tags": ["b"],
	      "responses": {"200": {"description": "ok"}, "401": {"$ref": "#/components/responses/Unauthorized"}}}},
	    "/noretry": {"get": {"operationId": "getNoRetry", "summary": "s", "tags": ["a"],
	      "responses": {"200": {"description": "ok"}, "401": {"$ref": "#/components/responses/Unauthorized"}, "503": {"$ref": "#/components/responses/BareUnavailable"}}}},
	    "/plain": {"get": {"operationId": "getPlain", "summary": "s", "tags": ["a"],
	      "responses": {"200": {"description": "ok"}, "401": {"$ref": "#/components/responses/Unauthorized"}, "404": {"description": "x"}}}},
	    "/dangling": {"get": {"operationId": "getDangling", "summary": "s", "tags": ["a"],
	      "responses": {"200": {"description": "ok"}, "401": {"$ref": "#/components/responses/Nowhere"}}}},
	    "/post": {"post": {"operationId": "postBare", "summary": "s", "tags": ["a"],
	      "requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}},
	      "responses": {"200": {"description": "ok"}, "401": {"$ref": "#/components/responses/Unauthorized"}}}}
	  }
	}`
	got, err := openapiProblems([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"GET /noid: no operationId",
		`GET /badid: operationId "Get_bad" is not lowerCamelCase`,
		`GET /good: operationId "getGood" is also GET /dup's`,
		"GET /noerrors: no error response",
		"GET /no401: needs a token but has no 401 response",
		`GET /untagged: tag "b" is not declared in tags`,
		"GET /noretry: 503 has no Retry-After header",
		"GET /plain: 404 has no application/problem+json body",
		`GET /dangling: 401: $ref "#/components/responses/Nowhere" names nothing`,
		"POST /post: a POST with a token has no 422 (Idempotency-Key reused) response",
		"POST /post: a POST with a token does not take the Idempotency-Key parameter",
		"POST /post: a JSON body but no 413 response",
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("missing problem %q", w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			t.Errorf("unexpected problem %q", g)
		}
	}
}

var lowerCamel = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)

// notProblemJSON are the error responses whose body is not a problem
// document, by operation and status, and why.
var notProblemJSON = map[string]string{
	"GET /readyz 503":              "the probe's own JSON: which dependency failed",
	"GET /api/v1/unsubscribe 400":  "plain text for the person who followed the mail's link",
	"POST /api/v1/unsubscribe 400": "plain text for the person who followed the mail's link",
}

// openapiProblems returns what is wrong with an OpenAPI document: an
// operation without an operationId, or one that is not lowerCamelCase or
// is another operation's; without a summary or tags, or with a tag the
// document does not declare; without any error response; needing a token
// (security) without a 401; an error response without a problem+json body
// (but those of notProblemJSON), a 429 or 503 problem without
// Retry-After, a 401 without WWW-Authenticate; a POST that needs a token
// without 422 and the Idempotency-Key parameter, a JSON body without 413;
// a $ref that names nothing.
func openapiProblems(b []byte) ([]string, error) {
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	// resolve follows a local $ref (#/a/b/c) until a value that is not
	// one; ok is false when it names nothing.
	resolve := func(v any) (map[string]any, string, bool) {
		m, _ := v.(map[string]any)
		for range 8 {
			ref, isRef := m["$ref"].(string)
			if !isRef {
				return m, "", m != nil
			}
			var cur any = doc
			for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
				cm, _ := cur.(map[string]any)
				cur = cm[part]
			}
			next, _ := cur.(map[string]any)
			if next == nil {
				return nil, ref, false
			}
			m = next
		}
		return nil, "", false
	}
	declared := map[string]bool{}
	for _, tag := range asList(doc["tags"]) {
		if m, ok := tag.(map[string]any); ok {
			declared[fmt.Sprint(m["name"])] = true
		}
	}
	globalSecurity := len(asList(doc["security"])) > 0
	paths, _ := doc["paths"].(map[string]any)

	type op struct {
		name string // "GET /path"
		m    map[string]any
	}
	var ops []op
	for path, item := range paths {
		im, _ := item.(map[string]any)
		for method, o := range im {
			switch method {
			case "get", "post", "put", "patch", "delete", "head", "options":
				om, _ := o.(map[string]any)
				ops = append(ops, op{strings.ToUpper(method) + " " + path, om})
			}
		}
	}
	// In path order, so that of two operations with one id the later
	// path is the one told.
	slices.SortFunc(ops, func(a, b op) int {
		ap, bp := a.name[strings.IndexByte(a.name, ' ')+1:], b.name[strings.IndexByte(b.name, ' ')+1:]
		if c := strings.Compare(ap, bp); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	var problems []string
	add := func(o op, format string, args ...any) {
		problems = append(problems, o.name+": "+fmt.Sprintf(format, args...))
	}
	ids := map[string]string{}
	for _, o := range ops {
		id, _ := o.m["operationId"].(string)
		switch {
		case id == "":
			add(o, "no operationId")
		case !lowerCamel.MatchString(id):
			add(o, "operationId %q is not lowerCamelCase", id)
		case ids[id] != "":
			add(o, "operationId %q is also %s's", id, ids[id])
		default:
			ids[id] = o.name
		}
		if s, _ := o.m["summary"].(string); s == "" {
			add(o, "no summary")
		}
		tags := asList(o.m["tags"])
		if len(tags) == 0 {
			add(o, "no tags")
		}
		for _, tag := range tags {
			if !declared[fmt.Sprint(tag)] {
				add(o, "tag %q is not declared in tags", tag)
			}
		}
		secured := globalSecurity
		if sec, ok := o.m["security"]; ok {
			secured = len(asList(sec)) > 0
		}
		responses, _ := o.m["responses"].(map[string]any)
		errors := 0
		for status, r := range responses {
			code, err := strconv.Atoi(status)
			if err != nil || code < 400 {
				continue
			}
			errors++
			rm, ref, ok := resolve(r)
			if !ok {
				add(o, "%s: $ref %q names nothing", status, ref)
				continue
			}
			content, _ := rm["content"].(map[string]any)
			if _, ok := content["application/problem+json"]; !ok {
				if _, excused := notProblemJSON[o.name+" "+status]; !excused {
					add(o, "%s has no application/problem+json body", status)
				}
				continue
			}
			headers, _ := rm["headers"].(map[string]any)
			switch code {
			case http.StatusTooManyRequests, http.StatusServiceUnavailable:
				if headers["Retry-After"] == nil {
					add(o, "%s has no Retry-After header", status)
				}
			case http.StatusUnauthorized:
				if headers["WWW-Authenticate"] == nil {
					add(o, "%s has no WWW-Authenticate header", status)
				}
			}
		}
		if errors == 0 {
			add(o, "no error response")
		}
		if secured && responses["401"] == nil {
			add(o, "needs a token but has no 401 response")
		}
		if strings.HasPrefix(o.name, "POST ") && secured {
			if responses["422"] == nil {
				add(o, "a POST with a token has no 422 (Idempotency-Key reused) response")
			}
			takesKey := false
			for _, p := range asList(o.m["parameters"]) {
				if pm, _, ok := resolve(p); ok && pm["in"] == "header" && pm["name"] == "Idempotency-Key" {
					takesKey = true
				}
			}
			if !takesKey {
				add(o, "a POST with a token does not take the Idempotency-Key parameter")
			}
		}
		if body, _, ok := resolve(o.m["requestBody"]); ok {
			content, _ := body["content"].(map[string]any)
			if _, isJSON := content["application/json"]; isJSON && responses["413"] == nil {
				add(o, "a JSON body but no 413 response")
			}
		}
	}
	return problems, nil
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// TestPublicRoutesCheckABearerToken backs the document's 401 on the
// public routes: an Authorization header is checked wherever it is sent.
func TestPublicRoutesCheckABearerToken(t *testing.T) {
	ts := newServer(t, nil)
	for _, path := range []string{"/healthz", "/readyz", "/api/v1/openapi.json", "/api/v1/unsubscribe?t=x"} {
		req, err := http.NewRequest("GET", ts.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer not-a-token")
		res, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized || res.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("GET %s with a bad token: %d, WWW-Authenticate %q; want 401 with the header", path, res.StatusCode, res.Header.Get("WWW-Authenticate"))
		}
	}
}
