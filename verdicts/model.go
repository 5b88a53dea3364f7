// Package verdicts turns the Ginkgo JSON reports of a run into one verdict
// per requirement and stack (runtime x Kubernetes version), held against the
// stack's expectations: what is known to fail there and why. A run is good
// when nothing is unexpected. It reads Ginkgo's own report types; rendering
// is package report's job.
package verdicts

import (
	"strings"
	"time"

	"github.com/faultline-k8s/faultline/clusters/versions"
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

// NotImplementedPrefix starts the skip message of a spec whose requirement
// the stack does not implement (suites/harness.NotImplemented).
const NotImplementedPrefix = "not implemented: "

// InconclusivePrefix starts the skip message of a spec whose premise did
// not happen (suites/harness.Premise).
const InconclusivePrefix = "inconclusive: "

// Report entry names the suites write and this package reads.
const (
	// StackEntry holds the StackInfo of the cluster, added in the suite
	// setup (a [SynchronizedBeforeSuite] report entry).
	StackEntry = "faultline.stack"
	// DumpEntry holds where a failed spec's dump went, relative to the
	// directory of the run's Ginkgo report.
	DumpEntry = "faultline.dump"
	// CauseEntry marks where a spec's check of one cause begins (a
	// CauseMark with Open) and ends (without), in the order the spec ran
	// them (suites/harness.Cause): a failure is the cause's of the check
	// still open, and requirements.HarnessCause outside every check.
	CauseEntry = "faultline.cause"
	// PremiseEntry holds a Premise: what a spec's verdict rests on, whether
	// it happened and the evidence, added whether or not it did.
	PremiseEntry = "faultline.premise"
)

// Premise is what a spec's verdict rests on (suites/harness.Premise).
type Premise struct {
	// Name says what had to happen ("the caller's deadline ended the
	// request").
	Name     string `json:"name"`
	Happened bool   `json:"happened"`
	// Evidence is what the spec saw, either way.
	Evidence string `json:"evidence"`
}

// CauseMark is the value of a CauseEntry.
type CauseMark struct {
	// Cause is a cause the spec's requirement declares, or
	// requirements.HarnessCause for faultline's own step inside a check.
	Cause string `json:"cause"`
	// Open: the check begins; its end is a mark of the same cause
	// without Open.
	Open bool `json:"open,omitempty"`
}

// StackInfo is what was tested on one cluster, as its API shows it.
type StackInfo struct {
	// Key names the stack and its expectations file: "<runtime>-<major.minor>"
	// ("containerd-1.36").
	Key string `json:"key"`
	// Runtime is faultline's runtime name (clusters/runtimes).
	Runtime        string `json:"runtime"`
	RuntimeVersion string `json:"runtimeVersion,omitempty"`
	// KubernetesVersion is the kubelet's ("v1.36.3").
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// Skew says how the runtime's release is out of step with the kubelet's
	// (clusters/runtimes Skew), "" when it is not.
	Skew string `json:"skew,omitempty"`
	// NRIVersion is the NRI the runtime vendors, when known.
	NRIVersion string `json:"nriVersion,omitempty"`
	// Variant says what the node image changed on the pinned releases
	// (another NRI, Kubernetes patches, feature gates); "" for none.
	Variant    string `json:"variant,omitempty"`
	NodeImage  string `json:"nodeImage,omitempty"`
	FakesImage string `json:"fakesImage,omitempty"`
	// FakesImageID is the fakes image's ID as the run built or found it.
	FakesImageID string `json:"fakesImageID,omitempty"`
	// Framework is the version of k8s.io/kubernetes/test/e2e/framework that
	// judged.
	Framework string `json:"framework,omitempty"`
	Nodes     []Node `json:"nodes,omitempty"`
	// FactsSource says where the runtime facts came from.
	FactsSource string `json:"factsSource,omitempty"`
}

// Node is one node's versions, from its status (the kubelet reports them;
// the runtime's comes from the CRI Version call).
type Node struct {
	Name             string `json:"name"`
	KubeletVersion   string `json:"kubeletVersion"`
	ContainerRuntime string `json:"containerRuntime"`
	Kernel           string `json:"kernel"`
	OSImage          string `json:"osImage"`
	Architecture     string `json:"architecture"`
}

// Column is how a grid heads the stack's column.
func (s StackInfo) Column() string {
	col := s.Runtime
	if s.RuntimeVersion != "" {
		col += " " + s.RuntimeVersion
	}
	if s.KubernetesVersion != "" {
		col += " / k8s " + s.KubernetesVersion
	}
	if s.Skew != "" {
		col += " (" + s.Skew + ")"
	}
	if s.Variant != "" {
		col += " +" + s.Variant
	}
	return col
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
	// declares (requirements/catalogue.yaml), or requirements.HarnessCause
	// for a failure of faultline's own machinery; empty unless it failed.
	Cause    string        `json:"cause,omitempty"`
	Duration time.Duration `json:"duration"`
	// Run numbers the repetition (1..N).
	Run int `json:"run"`
	// Dump is the failure dump's directory: relative to the Ginkgo report's
	// directory as read (FromGinkgo), to the artifacts directory once
	// ReadArtifacts has placed it.
	Dump string `json:"dump,omitempty"`
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

// StackKey names a stack: "<runtime>-<major.minor>" ("containerd-1.36");
// the runtime alone when the Kubernetes version is unknown. A variant (what
// the stack's node image changed on the pinned releases: "nri-v0.12.5",
// "kep-5322") follows a "+": "containerd-1.37+kep-5322".
func StackKey(runtime, kubernetesVersion, variant string) string {
	key := runtime
	if minor := versions.Minor(kubernetesVersion); minor != "" {
		key += "-" + minor
	}
	if variant != "" {
		key += "+" + variant
	}
	return key
}

// BaseKey is a stack key without its variant: the stack whose
// expectations hold for a variant that has none of its own.
func BaseKey(key string) string {
	base, _, _ := strings.Cut(key, "+")
	return base
}
