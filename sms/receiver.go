package sms

import (
	"container/list"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"sync"
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
// Accept, and answers every message sent. With Remember it drops the
// messages whose id it accepted before, as the protocol asks of a
// gateway, in bounded memory: a gateway in front of a provider keeps the
// ids for a day or more (see the package documentation). Use it by
// pointer, never copied.
type Receiver struct {
	Secret string
	// Accept takes the messages of one request, in order, repeats
	// dropped; an error answers 503, which has the sender retry the whole
	// request. It is called from many requests at once.
	Accept func(msgs []Received) error
	// Remember is how many message ids the receiver keeps, the most
	// recently seen: a message whose id it keeps is answered sent again
	// without reaching Accept. 0 keeps none: every message is accepted.
	Remember int
	// Dropped, if set, is told of each request's messages dropped as
	// repeats (none for most requests: it is not called then).
	Dropped func(msgs []Received)
	Skew    time.Duration    // 0 is DefaultSkew
	Now     func() time.Time // nil is time.Now
	Logger  *slog.Logger     // nil discards

	mu   sync.Mutex
	seen *recent // the ids accepted, Remember of them at most
	dups int64   // messages dropped as repeats
}

// Duplicates returns how many messages the receiver has dropped as
// repeats of ones it accepted before.
func (rc *Receiver) Duplicates() int64 {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.dups
}

// fresh sorts the messages of a request: those whose ids the receiver
// has not seen (nor seen earlier in msgs), which it remembers as being
// accepted; repeats of messages accepted; and the ids of repeats of
// messages still being accepted by another request, which the sender is
// to retry (their first may yet fail).
func (rc *Receiver) fresh(msgs []Received) (fresh, repeats []Received, busy map[string]bool) {
	if rc.Remember <= 0 {
		return msgs, nil, nil
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.seen == nil {
		rc.seen = newRecent(rc.Remember)
	}
	for _, m := range msgs {
		switch rc.seen.add(m.ID) {
		case idNew:
			fresh = append(fresh, m)
		case idAccepted:
			repeats = append(repeats, m)
		case idPending:
			if busy == nil {
				busy = map[string]bool{}
			}
			busy[m.ID] = true
		}
	}
	rc.dups += int64(len(repeats))
	return fresh, repeats, busy
}

// accepted records the outcome of Accept for msgs: their ids are
// remembered as accepted, or forgotten if Accept refused them (their
// retry is no repeat).
func (rc *Receiver) accepted(msgs []Received, ok bool) {
	if rc.Remember <= 0 {
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, m := range msgs {
		if ok {
			rc.seen.accept(m.ID)
		} else {
			rc.seen.remove(m.ID)
		}
	}
}

// The states of an id in a recent set.
const (
	idNew      = iota // not in the set: added now, pending
	idPending         // added, its message not yet accepted
	idAccepted        // its message accepted
)

// recent is a set of at most max ids, each pending or accepted, that
// forgets the least recently added or looked up first.
type recent struct {
	max   int
	order *list.List // of *recentID, the most recent first
	at    map[string]*list.Element
}

type recentID struct {
	id       string
	accepted bool
}

func newRecent(max int) *recent {
	return &recent{max: max, order: list.New(), at: make(map[string]*list.Element)}
}

// add adds id as pending and returns idNew, or returns the state id is in
// already, making it the most recent.
func (r *recent) add(id string) int {
	if e, ok := r.at[id]; ok {
		r.order.MoveToFront(e)
		if e.Value.(*recentID).accepted {
			return idAccepted
		}
		return idPending
	}
	r.at[id] = r.order.PushFront(&recentID{id: id})
	if r.order.Len() > r.max {
		oldest := r.order.Back()
		r.order.Remove(oldest)
		delete(r.at, oldest.Value.(*recentID).id)
	}
	return idNew
}

func (r *recent) accept(id string) {
	if e, ok := r.at[id]; ok {
		e.Value.(*recentID).accepted = true
	}
}

func (r *recent) remove(id string) {
	if e, ok := r.at[id]; ok {
		r.order.Remove(e)
		delete(r.at, id)
	}
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
	fresh, repeats, busy := rc.fresh(req.Messages)
	if rc.Accept != nil && len(fresh) > 0 {
		if err := rc.Accept(fresh); err != nil {
			rc.accepted(fresh, false)
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
	}
	rc.accepted(fresh, true)
	if len(repeats) > 0 && rc.Dropped != nil {
		rc.Dropped(repeats)
	}
	res := wireResponse{Results: make([]wireResult, len(req.Messages))}
	for i, m := range req.Messages {
		res.Results[i] = wireResult{ID: m.ID, Status: "sent"}
		if busy[m.ID] {
			res.Results[i] = wireResult{ID: m.ID, Status: "retry", Reason: "the same message is being accepted by another request", RetryAfter: 1}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(res)
}
