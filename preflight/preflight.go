// Package preflight says, before anything is installed, whether a cluster can
// check each requirement of the catalogue, and if not, why. It only reads:
// GETs, discovery, SelfSubjectAccessReviews and server-side dry runs; it
// persists no object and starts no pod. Run does the checks (checks.go,
// nodes.go, kubelet.go, permissions.go), mapping.go reads which conditions
// each requirement needs from its specs' labels (Options.Specs, vocab/needs),
// output.go writes the report.
package preflight

import (
	"context"
	"errors"
	"fmt"
	"time"

	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline-k8s/faultline/vocab/facts"
	"github.com/faultline-k8s/faultline/vocab/kubelet"
)

// State is what a check found out about a condition.
type State string

const (
	// OK: the condition holds.
	OK State = "ok"
	// Missing: the cluster lacks it; the specs that need it fail or skip.
	Missing State = "missing"
	// Unknown: the API does not show it (or refused to say).
	Unknown State = "unknown"
)

// Condition is one named fact about the cluster, with the evidence.
type Condition struct {
	Name   string `json:"name"`
	State  State  `json:"state"`
	Reason string `json:"reason"`
}

// Verdict kinds of a requirement.
const (
	CanCheck    = "can check"
	CannotCheck = "cannot check"
	Undecided   = "unknown"
	// Pending: the specs are written but Pending (an upstream design); no
	// cluster can check them yet, so --strict does not count them.
	Pending = "pending"
)

// Verdict is whether this cluster can check one requirement.
type Verdict struct {
	ID      string `json:"id"`
	Area    string `json:"area"`
	Verdict string `json:"verdict"`
	// Reasons name the conditions (or the pending design) behind a verdict
	// other than "can check".
	Reasons []string `json:"reasons,omitempty"`
	// Needs are the conditions the requirement's specs need (their labels).
	Needs []string `json:"needs"`
	// Notes say what does not decide the verdict but matters (Disruptive,
	// a gate that only changes the expected outcome).
	Notes []string `json:"notes,omitempty"`
}

// Report is the whole preflight answer.
type Report struct {
	// Server is the API server's version (discovery /version).
	Server       string      `json:"server"`
	Conditions   []Condition `json:"conditions"`
	Requirements []Verdict   `json:"requirements"`
}

// Condition returns the named condition.
func (r Report) Condition(name string) (Condition, bool) {
	for _, c := range r.Conditions {
		if c.Name == name {
			return c, true
		}
	}
	return Condition{}, false
}

// CannotCheck lists the requirements this cluster cannot check.
func (r Report) CannotCheck() []string {
	var ids []string
	for _, v := range r.Requirements {
		if v.Verdict == CannotCheck {
			ids = append(ids, v.ID)
		}
	}
	return ids
}

// Options tune Run; the zero value reads everything through cs.
type Options struct {
	// Endpoints reads the kubelets' /configz and /metrics and the API
	// server's /metrics; nil: through cs (ProxyEndpoints).
	Endpoints Endpoints
	// NodeSelector are the labels of the run's --faultline.node-selector:
	// the suites use only nodes with them (and kubernetes.io/os=linux).
	NodeSelector map[string]string
	// MaxNodes bounds how many usable nodes' kubelets are asked for their
	// feature gates (0: 10), so a large cluster is not read node by node.
	MaxNodes int
	// Timeout bounds each read (0: 20s), so one hung kubelet proxy does
	// not hang the whole report.
	Timeout time.Duration
	// Specs are the test binary's specs (suites/specs): what each
	// requirement's specs need is what Run judges them by.
	Specs []Spec
}

// Run checks the cluster behind cs. An error means the API server could not
// be asked at all; everything else, refusals included, is in the report.
func Run(ctx context.Context, cs kubernetes.Interface, o Options) (Report, error) {
	if len(o.Specs) == 0 {
		return Report{}, errors.New("preflight: no specs to judge the requirements by")
	}
	if o.Endpoints == nil {
		o.Endpoints = ProxyEndpoints{Client: cs}
	}
	if o.MaxNodes <= 0 {
		o.MaxNodes = 10
	}
	if o.Timeout <= 0 {
		o.Timeout = 20 * time.Second
	}
	info, err := cs.Discovery().ServerVersion()
	if err != nil {
		return Report{}, fmt.Errorf("the API server does not answer discovery (/version): %w", err)
	}
	r := Report{Server: info.GitVersion}
	add := func(cs ...Condition) { r.Conditions = append(r.Conditions, cs...) }
	add(Condition{CondAPI, OK, fmt.Sprintf("API server %s (discovery /version, platform %s)", info.GitVersion, info.Platform)})

	c := &checker{cs: cs, o: o}
	c.readFacts(ctx)
	add(c.permissions(ctx)...)
	add(c.draAPI())
	add(c.nodes(ctx)...)
	add(c.gates(ctx)...)
	add(c.nri()...)
	add(c.runtimeRequestTimeout())
	add(c.podSecurity(ctx))
	r.Requirements = judge(r.Conditions, o.Specs)
	return r, nil
}

// checker carries what one Run has read, for the checks that build on it.
type checker struct {
	cs kubernetes.Interface
	o  Options

	facts      facts.Facts
	factsFound bool
	factsErr   error

	// Of the nodes (nodes.go): the recognised runtime (nil if not), the
	// node the suites pick, the usable nodes, and the test node's
	// kubelet configuration.
	runtime  *runtimeInfo
	testNode string
	usable   []string
	kubelets map[string]*utilversion.Version
	configz  map[string]kubelet.Config
}

func (c *checker) readFacts(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	c.facts, c.factsFound, c.factsErr = facts.Read(ctx, c.cs)
}

// faultlineMade: the cluster's facts say faultline made it, so what its
// node images configure (NRI, its validator) is there by construction.
func (c *checker) faultlineMade() bool {
	return c.factsErr == nil && c.factsFound && c.facts.CreatedBy == facts.CreatedByFaultline
}
