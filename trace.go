package quan

import (
	"context"
	"strings"
)

// Tracer carries a request's trace to the work it starts where the
// request's context cannot go: a claim waits in a batch with the claims
// of other requests, then on the bus, then in a store transaction shared
// with them; a task waits in the store until a runner takes it, maybe in
// another process. The domain keeps a trace parent as an opaque string,
// with the claim (on the bus, ClaimTracesHeader) or the task (in the
// store), and hands it back to the Tracer where the work resumes.
//
// The tracing package implements it on OpenTelemetry, with W3C
// traceparent strings. A nil Tracer in a use case carries nothing and
// costs nothing.
type Tracer interface {
	// TraceParent returns the span of ctx as a trace parent, or "" if ctx
	// has no span worth carrying (none, or one not sampled). A trace
	// parent holds no comma, space or line break.
	TraceParent(ctx context.Context) string
	// WithTraceParent returns ctx with p as the remote parent of the spans
	// started from it: they continue p's trace. An empty or malformed p
	// returns ctx as it is.
	WithTraceParent(ctx context.Context, p string) context.Context
}

// ClaimTracesHeader is the bus header of a batch of claims (EncodeClaims)
// that carries each claim's trace parent (Claim.TraceParent): one per
// claim, in the batch's order, separated by commas, "" for a claim not
// traced. A batch whose claims are none traced has no such header.
//
// One header for the whole message could not do: a batch holds the claims
// of many requests, each of its own trace.
const ClaimTracesHeader = "Claim-Traces"

// EncodeClaimTraces returns the ClaimTracesHeader value of cs, "" if none
// of them is traced.
func EncodeClaimTraces(cs []*Claim) string {
	traced := false
	for _, c := range cs {
		if c.TraceParent != "" {
			traced = true
			break
		}
	}
	if !traced {
		return ""
	}
	n := len(cs) - 1
	for _, c := range cs {
		n += len(c.TraceParent)
	}
	b := make([]byte, 0, n)
	for i, c := range cs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, c.TraceParent...)
	}
	return string(b)
}

// DecodeClaimTraces sets the TraceParent of each of cs from v, a
// ClaimTracesHeader value. A value that does not hold one parent per
// claim is ignored: tracing never fails a claim.
func DecodeClaimTraces(cs []*Claim, v string) {
	if v == "" {
		return
	}
	ps := strings.Split(v, ",")
	if len(ps) != len(cs) {
		return
	}
	for i, c := range cs {
		c.TraceParent = ps[i]
	}
}
