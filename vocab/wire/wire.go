// Package wire is the contract between the test binary and the judge: the
// Ginkgo report's file name, the report entries the suites add (the stack,
// premises, causes, dumps, floors) and the skip-message prefixes the verdicts
// read. Both sides import it; neither imports the other.
package wire

import (
	"fmt"
	"strings"
	"time"

	"github.com/faultline-k8s/faultline/vocab/versions"
)

// GinkgoReportFile is the name of the Ginkgo JSON report of one run of the
// test binary (ginkgo --json-report).
const GinkgoReportFile = "ginkgo.json"

// NotImplementedPrefix starts the skip message of a spec whose requirement
// the stack does not implement (suites/harness.NotImplemented).
const NotImplementedPrefix = "not implemented: "

// InconclusivePrefix starts the skip message of a spec whose premise did
// not happen (suites/harness.Premise).
const InconclusivePrefix = "inconclusive: "

// TooBusy marks the evidence of an inconclusive spec whose node was too
// busy to judge it (suites/harness.TooBusy): its timers fired later than
// the check can absorb. The judge counts such a verdict as not checked,
// never as unexpected, and the run says what to do about it.
const TooBusy = "the node was too busy: "

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
	// FloorEntry holds a Floor: the time the spec's scenario must wait out
	// by design, the component timers it waits for (suites/harness.Floor).
	// A spec may add several; its floor is their sum. A spec without one
	// has no floor known (a run of a faultline before floors).
	FloorEntry = "faultline.floor"
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

// Floor is the value of a FloorEntry: the sum of the component timers a
// spec's scenario waits out by design (the kubelet's deadlines, resyncs and
// back-offs, a runtime's cleanup loop, a plugin request timeout), each part
// named. faultline's own delays (a stall of a chosen length, a quiet window,
// poll slack) are not in it: the time a spec takes beyond its floor is
// faultline's overhead, or the stack's slowness. A floor of no parts says
// the scenario waits for no timer.
type Floor struct {
	// Total is the sum of the parts' durations.
	Total time.Duration `json:"total"`
	Parts []FloorPart   `json:"parts,omitempty"`
}

// FloorPart is one timer of a Floor.
type FloorPart struct {
	// Name says whose timer it is ("kubelet resync (syncFrequency)").
	Name string `json:"name"`
	// Duration is what the part adds to the floor: the timer's length,
	// times Times.
	Duration time.Duration `json:"duration"`
	// Times is how often the scenario waits the timer out, when more than
	// once.
	Times int `json:"times,omitempty"`
	// UpTo: the timer is a periodic loop the scenario waits for the next
	// run of; Duration is its longest wait (a whole period), counted whole.
	UpTo bool `json:"upTo,omitempty"`
}

// Sum adds the floors of one spec's entries into one; nil when there is
// none.
func Sum(floors ...Floor) *Floor {
	if len(floors) == 0 {
		return nil
	}
	var sum Floor
	for _, f := range floors {
		sum.Total += f.Total
		sum.Parts = append(sum.Parts, f.Parts...)
	}
	return &sum
}

// String is the part as a report shows it: "kubelet resync (syncFrequency)
// 2×1m0s", "kubelet container GC ≤1m0s".
func (p FloorPart) String() string {
	d := p.Duration.String()
	if p.Times > 1 {
		d = fmt.Sprintf("%d×%s", p.Times, p.Duration/time.Duration(p.Times))
	}
	if p.UpTo {
		d = "≤" + d
	}
	return p.Name + " " + d
}

// String is the floor with its parts: "3m15s = DRA call deadline 45s +
// kubelet resync (syncFrequency) 1m0s + ...", "0s (no timer)".
func (f Floor) String() string {
	if len(f.Parts) == 0 {
		return f.Total.String() + " (no timer)"
	}
	parts := make([]string, len(f.Parts))
	for i, p := range f.Parts {
		parts[i] = p.String()
	}
	return f.Total.String() + " = " + strings.Join(parts, " + ")
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
	// Runtime is faultline's runtime name (vocab/runtimes).
	Runtime        string `json:"runtime"`
	RuntimeVersion string `json:"runtimeVersion,omitempty"`
	// KubernetesVersion is the kubelet's ("v1.36.3").
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// Skew says how the runtime's release is out of step with the kubelet's
	// (vocab/runtimes Skew), "" when it is not.
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

// Heading names the stack and the Kubernetes patch it ran, for a grid's
// head: "containerd-1.36 (v1.36.5)"; the key alone when the patch is
// unknown. Expectations can differ by patch, so the grid says which.
func (s StackInfo) Heading() string {
	if s.KubernetesVersion == "" {
		return s.Key
	}
	return s.Key + " (" + s.KubernetesVersion + ")"
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
