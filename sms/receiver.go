package sms

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/quanhq/quan"
)

// Received is one message of a request, as a gateway receives it.
type Received struct {
	ID       string            `json:"id"`
	Phone    string            `json:"phone"`
	Template string            `json:"template"`
	Kind     quan.MessageKind  `json:"kind"`
	Lang     quan.Lang         `json:"lang"`
	Params   map[string]string `json:"params,omitempty"`
	Text     string            `json:"text"`
}

// DefaultSkew is how far a request's timestamp may be from the
// receiver's clock.
const DefaultSkew = 5 * time.Minute

// maxRequest bounds a request's body: 500 messages of a few hundred
// bytes are far below it.
const maxRequest = 8 << 20

// Receiver is the gateway's side of the protocol, for a development sink
// and for tests and benchmarks: an http.Handler that checks each
// request's signature and timestamp (401 if wrong), hands its messages to
// Accept, and answers every message sent. It does not de-duplicate: a
// gateway in front of a provider must (see the package documentation).
type Receiver struct {
	Secret string
	// Accept takes the messages of one request, in order; an error
	// answers 503, which has the sender retry the whole request. It is
	// called from many requests at once.
	Accept func(msgs []Received) error
	Skew   time.Duration    // 0 is DefaultSkew
	Now    func() time.Time // nil is time.Now
	Logger *slog.Logger     // nil discards
}

// ServeHTTP implements http.Handler.
func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST a batch of messages", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequest))
	if err != nil {
		http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	now, skew := time.Now, rc.Skew
	if rc.Now != nil {
		now = rc.Now
	}
	if skew <= 0 {
		skew = DefaultSkew
	}
	if err := Verify(rc.Secret, r.Header.Get(HeaderTimestamp), r.Header.Get(HeaderSignature), body, now(), skew); err != nil {
		if rc.Logger != nil {
			rc.Logger.Warn("sms request refused", "err", err, "remote", r.RemoteAddr)
		}
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var req struct {
		Messages []Received `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, "the body is not {\"messages\": [...]}: "+err.Error(), http.StatusBadRequest)
		return
	}
	if rc.Accept != nil {
		if err := rc.Accept(req.Messages); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
	}
	res := wireResponse{Results: make([]wireResult, len(req.Messages))}
	for i, m := range req.Messages {
		res.Results[i] = wireResult{ID: m.ID, Status: "sent"}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(res)
}
