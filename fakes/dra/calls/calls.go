// Package calls keeps the record of every NodePrepareResources and
// NodeUnprepareResources call the fake DRA driver handled, so that a spec can
// assert on what the kubelet actually asked for (how often, in which order,
// with which outcome) instead of guessing from pod events.
package calls

import (
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/faultline-k8s/faultline/fakes/lib/httpjson"
	"github.com/faultline-k8s/faultline/fakes/lib/query"
)

// Method is the DRA gRPC method, without the "Node...Resources" noise.
type Method string

const (
	Prepare   Method = "Prepare"
	Unprepare Method = "Unprepare"
)

// Outcome says what one call did for one claim.
type Outcome string

const (
	// Prepared: the claim was not prepared before and now is.
	Prepared Outcome = "Prepared"
	// AlreadyPrepared: an idempotent repeat; the same devices were returned.
	AlreadyPrepared Outcome = "AlreadyPrepared"
	// Unprepared: the claim was prepared before and now is not.
	Unprepared Outcome = "Unprepared"
	// NotPrepared: unprepare of a claim this driver had not prepared (a no-op).
	NotPrepared Outcome = "NotPrepared"
	// Failed: the driver returned an error for the claim.
	Failed Outcome = "Failed"
	// Omitted: the driver left the claim out of its NodePrepareResources
	// response (an Omit fault): the kubelet got neither devices nor an
	// error for it, and the claim is not prepared.
	Omitted Outcome = "Omitted"
)

// Device is one allocated device the call was about.
type Device struct {
	Pool    string `json:"pool"`
	Device  string `json:"device"`
	Request string `json:"request"`
}

// Call is the record of one method call for one claim (the kubelet batches
// several claims into one gRPC call; each gets its own record).
type Call struct {
	Time           time.Time `json:"time"`
	Method         Method    `json:"method"`
	ClaimNamespace string    `json:"claimNamespace"`
	ClaimName      string    `json:"claimName"`
	ClaimUID       string    `json:"claimUID"`
	// Attempt counts calls of this method for this claim since the driver
	// started, starting at 1.
	Attempt int `json:"attempt"`
	// Request numbers the gRPC calls the driver served (prepare and
	// unprepare together, from 1 since it started): the records of the
	// claims the kubelet batched into one call share it, so a spec can
	// tell what one response held.
	Request int      `json:"request,omitempty"`
	Devices []Device `json:"devices,omitempty"`
	Outcome Outcome  `json:"outcome"`
	// Classification of a failure, e.g. "permanent/DeviceFailed",
	// "transient", "unclassified". Empty on success.
	Classification string `json:"classification,omitempty"`
	// Permanent is true when the failure was signalled as permanent.
	Permanent bool `json:"permanent,omitempty"`
	// Error is the exact error text returned to the kubelet.
	Error string `json:"error,omitempty"`
	// Stalled is how long the call was stalled by a Stall fault.
	Stalled string `json:"stalled,omitempty"`
	// Warnings explain faults that could not apply: an invalid FaultSpec
	// (which fails prepare, and which unprepare ignores).
	Warnings []string `json:"warnings,omitempty"`
}

// Summary counts the calls for one claim. PrepareSucceeded vs
// PrepareRepeated lets a spec assert "no duplicate preparation after success".
type Summary struct {
	PrepareCalls       int `json:"prepareCalls"`
	PrepareFailed      int `json:"prepareFailed"`
	PrepareSucceeded   int `json:"prepareSucceeded"`
	PrepareRepeated    int `json:"prepareRepeated"`
	PrepareOmitted     int `json:"prepareOmitted"`
	UnprepareCalls     int `json:"unprepareCalls"`
	UnprepareFailed    int `json:"unprepareFailed"`
	UnprepareSucceeded int `json:"unprepareSucceeded"`
	UnprepareNoop      int `json:"unprepareNoop"`
}

func (s *Summary) add(c Call) {
	switch c.Method {
	case Prepare:
		s.PrepareCalls++
	case Unprepare:
		s.UnprepareCalls++
	}
	switch c.Outcome {
	case Failed:
		if c.Method == Prepare {
			s.PrepareFailed++
		} else {
			s.UnprepareFailed++
		}
	case Prepared:
		s.PrepareSucceeded++
	case AlreadyPrepared:
		s.PrepareRepeated++
	case Omitted:
		s.PrepareOmitted++
	case Unprepared:
		s.UnprepareSucceeded++
	case NotPrepared:
		s.UnprepareNoop++
	}
}

// Recorder is safe for concurrent use. It keeps everything in memory: the
// driver serves short test runs, and a restart intentionally starts afresh.
type Recorder struct {
	mu    sync.Mutex
	calls []Call
	// open holds the calls begun and not yet ended (Begin), by a key of
	// their own.
	open map[int]Call
	next int
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{} }

// Add appends a call.
func (r *Recorder) Add(c Call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
}

// Begin notes a call that has started and has not ended yet: Report lists
// it under InProgress (Time is when it began; no outcome) until end records
// the call's final form in its place. Both happen under one lock, so a
// reader sees the call in exactly one of the two lists. A spec reads it to
// act while a call is in progress, e.g. while a Stall fault holds it.
func (r *Recorder) Begin(c Call) (end func(Call)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.open == nil {
		r.open = map[int]Call{}
	}
	key := r.next
	r.next++
	r.open[key] = c
	return func(final Call) {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.open, key)
		r.calls = append(r.calls, final)
	}
}

// inProgressLocked returns the begun calls for claimUID (all if empty),
// oldest first. r.mu is held.
func (r *Recorder) inProgressLocked(claimUID string) []Call {
	var out []Call
	for _, c := range r.open {
		if claimUID == "" || c.ClaimUID == claimUID {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

// Calls returns the calls for claimUID in the order they were recorded, or
// all calls when claimUID is empty.
func (r *Recorder) Calls(claimUID string) []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.callsLocked(claimUID)
}

func (r *Recorder) callsLocked(claimUID string) []Call {
	out := []Call{}
	for _, c := range r.calls {
		if claimUID == "" || c.ClaimUID == claimUID {
			out = append(out, c)
		}
	}
	return out
}

// Report is the body of GET /calls.
type Report struct {
	// ClaimUID echoes the filter; empty when all claims were asked for.
	ClaimUID string `json:"claimUID,omitempty"`
	// Summary covers the returned calls.
	Summary Summary `json:"summary"`
	Calls   []Call  `json:"calls"`
	// InProgress are the calls begun and not yet ended (Recorder.Begin):
	// Time is when each began, and they have no outcome. Summary does not
	// count them.
	InProgress []Call `json:"inProgress,omitempty"`
}

// Report returns the calls and their summary for claimUID (all if empty).
func (r *Recorder) Report(claimUID string) Report {
	r.mu.Lock()
	// One lock for both lists: Begin's end moves a call from one to the
	// other, and the report must show it in exactly one.
	rep := Report{ClaimUID: claimUID, Calls: r.callsLocked(claimUID), InProgress: r.inProgressLocked(claimUID)}
	r.mu.Unlock()
	for _, c := range rep.Calls {
		rep.Summary.add(c)
	}
	return rep
}

// Handler serves GET /calls[?claimUID=<uid>] as JSON; any other parameter
// is a 400. It listens on the pod's loopback only and is reached through a
// port-forward (pods/portforward), so it needs no auth of its own.
func (r *Recorder) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet {
			http.Error(w, "only GET is supported", http.StatusMethodNotAllowed)
			return
		}
		q, ok := query.Request(w, req, "claimUID")
		if !ok {
			return
		}
		httpjson.Write(w, r.Report(q.Get("claimUID")))
	})
}
