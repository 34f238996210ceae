package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/cmd/quan/internal/cli"
)

// startTraced opens `quan serve` (or `quan worker`) configured by env,
// with its spans going to exp instead of an OTLP collector.
func startTraced(t *testing.T, env map[string]string, worker bool, exp *tracetest.InMemoryExporter) *ServeCommand {
	t.Helper()
	logs := &syncBuffer{}
	cmd := &ServeCommand{Main: &Main{Stdout: logs, Stderr: logs, Getenv: func(k string) string { return env[k] }}, Worker: worker}
	if err := cmd.ParseFlags(nil); err != nil {
		t.Fatal(err)
	}
	cmd.Config.Tracing.Exporter = exp
	if err := cmd.Open(context.Background()); err != nil {
		cmd.Close()
		t.Fatalf("open: %v\n%s", err, logs.String())
	}
	t.Cleanup(func() {
		if err := cmd.Close(); err != nil {
			t.Error(err)
		}
	})
	return cmd
}

// spans gathers the spans of the exporters of several processes.
type spans []*tracetest.InMemoryExporter

func (s spans) all() tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, e := range s {
		out = append(out, e.GetSpans()...)
	}
	return out
}

// await returns the spans once ok holds of them, failing the test if it
// does not within 30 s.
func (s spans) await(t *testing.T, what string, ok func(tracetest.SpanStubs) bool) tracetest.SpanStubs {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got := s.all()
		if ok(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s in the spans:\n%s", what, describeSpans(got))
		}
	}
}

func describeSpans(ss tracetest.SpanStubs) string {
	var b strings.Builder
	for _, s := range ss {
		fmt.Fprintf(&b, "  %s %s parent %s %q %v\n", s.SpanContext.TraceID(), s.SpanContext.SpanID(), s.Parent.SpanID(), s.Name, s.Attributes)
	}
	return b.String()
}

func attr(s tracetest.SpanStub, key string) attribute.Value {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// named returns the spans of ss named name in trace tr (any trace if tr
// is invalid).
func named(ss tracetest.SpanStubs, tr trace.TraceID, name string) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range ss {
		if s.Name == name && (!tr.IsValid() || s.SpanContext.TraceID() == tr) {
			out = append(out, s)
		}
	}
	return out
}

// TestTracing: with tracing on, a claim's trace runs from its HTTP
// request (202) to the store transaction that issues it, in the consumer
// on the other side of the bus, and a task's from its upload to every
// chunk applied, though a runner takes the task later, from the store.
// On the embedded default, and on MySQL, Redis and NATS with the task run
// by a worker, another process.
func TestTracing(t *testing.T) {
	t.Run("Embedded", func(t *testing.T) {
		t.Parallel()
		env := testEnv(t)
		env["QUAN_CHUNK_SIZE"] = "2"
		exp := tracetest.NewInMemoryExporter()
		srv := startTraced(t, env, false, exp)
		checkClaimTrace(t, env, srv, spans{exp})
		checkTaskTrace(t, env, srv, spans{exp}, false)
	})
	t.Run("Production", func(t *testing.T) {
		t.Parallel()
		env, _ := productionEnv(t)
		env["QUAN_CHUNK_SIZE"] = "2"
		senv := cloneEnv(env)
		senv["QUAN_RUNNER"] = "false" // the worker runs the task
		sexp, wexp := tracetest.NewInMemoryExporter(), tracetest.NewInMemoryExporter()
		srv := startTraced(t, senv, false, sexp)
		startTraced(t, env, true, wexp)
		checkClaimTrace(t, env, srv, spans{sexp, wexp})
		checkTaskTrace(t, env, srv, spans{sexp, wexp}, true)
	})
}

func cloneEnv(env map[string]string) map[string]string {
	out := make(map[string]string, len(env))
	for k, v := range env {
		out[k] = v
	}
	out["QUAN_ADMIN_ADDR"] = "127.0.0.1:0"
	return out
}

// checkClaimTrace claims a coupon over HTTP and finds the claim's store
// span in the trace of its request, as a child of the request's span.
func checkClaimTrace(t *testing.T, env map[string]string, srv *ServeCommand, exp spans) {
	t.Helper()
	tpl, err := srv.App().CreateDemoTemplate(t.Context(), 10)
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(runQuan(t, env, "token --role user --user 7"))
	req, _ := http.NewRequest("POST", fmt.Sprintf("%s/api/v1/templates/%d/claim", srv.URL(), tpl.ID), nil)
	var claim quan.Claim
	if err := apiCall(req, tok, http.StatusAccepted, &claim); err != nil {
		t.Fatal(err)
	}
	const route = "POST /api/v1/templates/{id}/claim"
	var server tracetest.SpanStub
	got := exp.await(t, "IssueClaims span of claim "+claim.ID, func(ss tracetest.SpanStubs) bool {
		reqs := named(ss, trace.TraceID{}, route)
		if len(reqs) != 1 {
			return false
		}
		server = reqs[0]
		for _, s := range named(ss, server.SpanContext.TraceID(), "store IssueClaims") {
			if attr(s, "quan.claim.id").AsString() == claim.ID {
				return true
			}
		}
		return false
	})
	if server.SpanKind != trace.SpanKindServer || attr(server, "http.response.status_code").AsInt64() != http.StatusAccepted ||
		attr(server, "http.route").AsString() != "/api/v1/templates/{id}/claim" {
		t.Errorf("the request's span: kind %s, attributes %v; want a server span of the route, 202", server.SpanKind, server.Attributes)
	}
	for _, s := range named(got, server.SpanContext.TraceID(), "store IssueClaims") {
		if attr(s, "quan.claim.id").AsString() != claim.ID {
			continue
		}
		if s.Parent.SpanID() != server.SpanContext.SpanID() || attr(s, "quan.claim.status").AsString() != string(quan.ClaimIssued) {
			t.Errorf("IssueClaims span of the claim: parent %s, attributes %v; want the request's span %s, issued",
				s.Parent.SpanID(), s.Attributes, server.SpanContext.SpanID())
		}
	}
}

// checkTaskTrace uploads a task of 5 users in chunks of 2 and finds, in
// the trace of the upload, the task's creation, its taking by a runner and
// each of its 3 chunks applied; overBus, each chunk's publishing and
// handling too.
func checkTaskTrace(t *testing.T, env map[string]string, srv *ServeCommand, exp spans, overBus bool) {
	t.Helper()
	tpl, err := srv.App().CreateDemoTemplate(t.Context(), 100)
	if err != nil {
		t.Fatal(err)
	}
	c := &apiClient{t: t, base: srv.URL(), token: strings.TrimSpace(runQuan(t, env, "token --role merchant --shop 1"))}
	id := c.upload(map[string]string{"name": "traced", "templateId": fmt.Sprint(tpl.ID)}, "u.csv", "userId\n11\n12\n13\n14\n15\n")
	if task := c.wait(id); task.Status != quan.TaskSucceeded || task.ChunksTotal != 3 {
		t.Fatalf("task %+v, want it succeeded in 3 chunks", task)
	}
	var upload tracetest.SpanStub
	got := exp.await(t, "ApplyChunk span of each chunk of the task", func(ss tracetest.SpanStubs) bool {
		reqs := named(ss, trace.TraceID{}, "POST /api/v1/tasks")
		if len(reqs) != 1 {
			return false
		}
		upload = reqs[0]
		seqs := map[int64]bool{}
		for _, s := range named(ss, upload.SpanContext.TraceID(), "store ApplyChunk") {
			if attr(s, "quan.task.id").AsInt64() == id && s.Status.Code != codes.Error {
				seqs[attr(s, "quan.chunk.seq").AsInt64()] = true
			}
		}
		return len(seqs) == 3
	})
	tr := upload.SpanContext.TraceID()
	if attr(upload, "http.response.status_code").AsInt64() != http.StatusCreated {
		t.Errorf("upload span: %v, want 201", upload.Attributes)
	}
	want := []string{"store CreateTask", "store ClaimTask"}
	if overBus {
		want = append(want, "publish "+quan.ChunkSubject, "process "+quan.ChunkSubject)
	}
	for _, name := range want {
		if len(named(got, tr, name)) == 0 {
			t.Errorf("no %q span in the upload's trace:\n%s", name, describeSpans(got))
		}
	}
	for _, s := range named(got, tr, "store CreateTask") {
		if s.Parent.SpanID() != upload.SpanContext.SpanID() {
			t.Errorf("CreateTask span's parent %s, want the upload's span %s", s.Parent.SpanID(), upload.SpanContext.SpanID())
		}
	}
	if overBus {
		// A chunk is applied by the handling of its message, which
		// continues the runner's publishing of it.
		publishes := map[trace.SpanID]bool{}
		for _, s := range named(got, tr, "publish "+quan.ChunkSubject) {
			publishes[s.SpanContext.SpanID()] = true
		}
		handles := map[trace.SpanID]bool{}
		for _, s := range named(got, tr, "process "+quan.ChunkSubject) {
			if !publishes[s.Parent.SpanID()] {
				t.Errorf("a chunk's handling span has parent %s, not a publishing span", s.Parent.SpanID())
			}
			handles[s.SpanContext.SpanID()] = true
		}
		for _, s := range named(got, tr, "store ApplyChunk") {
			if !handles[s.Parent.SpanID()] {
				t.Errorf("ApplyChunk span of chunk %d has parent %s, not a handling span", attr(s, "quan.chunk.seq").AsInt64(), s.Parent.SpanID())
			}
		}
	}
}

// TestTracingOff: without --otlp-endpoint, nothing traces: no tracer, and
// the use cases run on the backends themselves, with no decorator.
func TestTracingOff(t *testing.T) {
	srv := startServe(t, testEnv(t))
	a := srv.App()
	if a.Tracer != nil || a.Claims.Tracer != nil || a.Tasks.Tracer != nil || a.Distributor.Tracer != nil {
		t.Error("a tracer without --otlp-endpoint")
	}
	if a.Claims.Bus != a.Backends.ClaimBus || a.Claims.Claims != quan.ClaimStore(a.Backends.Store) || a.Tasks.Tasks != quan.TaskStore(a.Backends.Store) {
		t.Error("the claims and tasks run on decorated backends without --otlp-endpoint")
	}
}

// TestTracingFlags: a bad --otlp-endpoint or --trace-sample, by flag or
// variable, is a usage error that names it; a good one starts serve.
func TestTracingFlags(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"NoScheme", []string{"serve", "--otlp-endpoint", "collector:4318"}, nil, `--otlp-endpoint "collector:4318": want the URL of an OTLP/HTTP collector`},
		{"GRPCScheme", []string{"worker", "--otlp-endpoint", "grpc://collector:4317"}, nil, `--otlp-endpoint "grpc://collector:4317"`},
		{"NoHost", []string{"serve"}, map[string]string{"QUAN_OTLP_ENDPOINT": "http://"}, `--otlp-endpoint "http://"`},
		{"SampleAboveOne", []string{"serve", "--otlp-endpoint", "http://127.0.0.1:4318", "--trace-sample", "2"}, nil, "want a fraction in (0, 1]"},
		{"SampleZero", []string{"worker"}, map[string]string{"QUAN_TRACE_SAMPLE": "0"}, "QUAN_TRACE_SAMPLE"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := testEnv(t)
			for k, v := range tt.env {
				env[k] = v
			}
			var out bytes.Buffer
			m := &Main{Stdout: &out, Stderr: &out, Getenv: func(k string) string { return env[k] }}
			err := m.Run(t.Context(), tt.args)
			if err == nil || !strings.Contains(err.Error(), tt.want) || cli.ExitCode(err) != 2 {
				t.Fatalf("err %v (exit %d), want a usage error %q", err, cli.ExitCode(err), tt.want)
			}
		})
	}
	t.Run("GoodEndpoint", func(t *testing.T) {
		env := testEnv(t)
		env["QUAN_OTLP_ENDPOINT"] = "http://127.0.0.1:1" // nobody listens: spans are lost, serve runs
		srv := startServe(t, env)
		if srv.App().Tracer == nil || srv.App().Claims.Tracer == nil {
			t.Error("QUAN_OTLP_ENDPOINT set and no tracer")
		}
	})
}
