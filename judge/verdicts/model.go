// Package verdicts turns the Ginkgo JSON reports of a run into one verdict
// per requirement and stack (runtime x Kubernetes version), held against the
// stack's expectations: what is known to fail there and why. A run is good
// when nothing is unexpected. It reads Ginkgo's own report types; rendering
// is package report's job.
package verdicts

import (
	"strings"
	"time"

	"github.com/faultline-k8s/faultline/vocab/versions"
	"github.com/faultline-k8s/faultline/vocab/wire"
)

// State is what a requirement's specs showed on a stack.
type State string

// The states, in the order a grid's legend lists them.
const (
	Pass State = "pass"
	Fail State = "fail"
	// KnownDiscrepancy is a failure the stack's expectations explain: the
	// stack departs from the design in a documented way (with a reference).
	KnownDiscrepancy State = "known discrepancy"
	// NotImplemented: the stack lacks the feature the requirement is about
	// (suites/harness.NotImplemented).
	NotImplemented State = "not implemented"
	// Inconclusive: what the spec's verdict rests on did not happen (the
	// fault did not fire, the deadline did not pass: suites/harness.Premise),
	// so the spec says nothing about the requirement.
	Inconclusive State = "inconclusive"
	// Skipped: a precondition of this cluster is missing (the reason says
	// which).
	Skipped State = "skipped"
	// Pending: written, waiting for an upstream design.
	Pending State = "pending"
)

// States lists every state.
var States = []State{Pass, Fail, KnownDiscrepancy, NotImplemented, Inconclusive, Skipped, Pending}

// Checked says whether a verdict in state s says something about the
// requirement: pass, fail, known discrepancy or not implemented. A skipped
// or inconclusive one does not; a pending one was not asked to.
func (s State) Checked() bool {
	return s == Pass || s == Fail || s == KnownDiscrepancy || s == NotImplemented
}

// Spec is one spec's result in one run.
type Spec struct {
	Name         string   `json:"name"`
	Location     string   `json:"location"`
	Requirements []string `json:"requirements,omitempty"`
	// State is pass, fail, not implemented, inconclusive, skipped or
	// pending: what the spec showed, before any expectation.
	State State `json:"state"`
	// Message is the failure message or the skip's reason.
	Message string `json:"message,omitempty"`
	// Cause names why a failed spec failed: a cause its requirement
	// declares (judge/requirements/catalogue.yaml), or requirements.HarnessCause
	// for a failure of faultline's own machinery; empty unless it failed.
	Cause    string        `json:"cause,omitempty"`
	Duration time.Duration `json:"duration"`
	// Run numbers the repetition (1..N).
	Run int `json:"run"`
	// Dump is the failure dump's directory: relative to the Ginkgo report's
	// directory as read (FromGinkgo), to the artifacts directory once
	// ReadArtifacts has placed it.
	Dump string `json:"dump,omitempty"`
	// Floor is the time the spec's scenario must wait out by design, the
	// component timers it declared (wire.FloorEntry); nil when it declared
	// none (a run of a faultline before floors, or a spec that ended before
	// its floor was known).
	Floor *wire.Floor `json:"floor,omitempty"`
}

// FloorFactor is how far over its floor a spec's time may go before the
// report lists it: the kubelet's jitter (up to +50% on a resync or a
// back-off) and a spec's own steps (pods starting, API round trips) fit
// under it, a spec that mostly waits for faultline does not.
const FloorFactor = 1.5

// FloorRatio is the spec's run time over its floor; false when its floor is
// unknown or zero (no timer to measure it against).
func (s Spec) FloorRatio() (float64, bool) {
	if s.Floor == nil || s.Floor.Total <= 0 {
		return 0, false
	}
	return float64(s.Duration) / float64(s.Floor.Total), true
}

// OverFloor says whether the spec took more than FloorFactor times its
// floor. A skipped or pending spec never ran its scenario: never.
func (s Spec) OverFloor() bool {
	if s.State == Skipped || s.State == Pending {
		return false
	}
	ratio, ok := s.FloorRatio()
	return ok && ratio > FloorFactor
}

// Verdict is one requirement on one stack, over every run.
type Verdict struct {
	Requirement string `json:"requirement"`
	Stack       string `json:"stack"`
	// State is the verdict: the runs' common state, a failure the
	// expectations explain being KnownDiscrepancy. When the runs disagree
	// (Varies) it is the worst of them.
	State State `json:"state"`
	// Runs is the state of each run, in order.
	Runs   []State `json:"runs"`
	Varies bool    `json:"varies,omitempty"`
	// Expectation is the stack's expectation for the requirement, if any.
	Expectation *Expectation `json:"expectation,omitempty"`
	// Unexpected says why this verdict makes the run fail; empty if it
	// does not.
	Unexpected string `json:"unexpected,omitempty"`
	// Specs are the requirement's specs' results, every run.
	Specs []Spec `json:"specs"`
}

// Counts returns how many runs showed each state.
func (v Verdict) Counts() map[State]int {
	c := map[State]int{}
	for _, s := range v.Runs {
		c[s]++
	}
	return c
}

// Minor is the Kubernetes minor a stack key names: "1.36" of
// "containerd-1.36+nri-v0.12.5"; "" when it names none.
func Minor(key string) string {
	base := BaseKey(key)
	i := strings.LastIndex(base, "-")
	if i < 0 {
		return ""
	}
	return versions.Minor(base[i+1:])
}

// BaseKey is a stack key without its variant: the stack whose
// expectations hold for a variant that has none of its own.
func BaseKey(key string) string {
	base, _, _ := strings.Cut(key, "+")
	return base
}
