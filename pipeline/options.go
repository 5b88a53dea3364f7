// Package pipeline is faultline's whole e2e run in one place: a container
// engine, the node and fakes images, one kind cluster per runtime (side by
// side), the suites in one test binary, the report, and a cleanup that leaves
// nothing running that the run started, also when it is interrupted.
package pipeline

import (
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/faultline-k8s/faultline/internal/capacity"
	"github.com/faultline-k8s/faultline/vocab/fakemodes"
	"github.com/faultline-k8s/faultline/vocab/runtimes"
	"github.com/faultline-k8s/faultline/vocab/suitenames"
	"github.com/faultline-k8s/faultline/vocab/versions"
	"github.com/faultline-k8s/faultline/vocab/wire"
)

// Suites are the suites of the test binary (vocab/suitenames).
var Suites = suitenames.All

// Options are one run's choices (faultline e2e's flags). A zero choice is
// its default (Run fills them in one place, withDefaults): RepoRoot ".",
// ClusterName "faultline", Artifacts "_artifacts", Runtimes the default
// runtime, Suites all of them, Repeat once, Out standard error.
type Options struct {
	// RepoRoot is the faultline checkout the run builds from.
	RepoRoot string
	// CacheDir holds built binaries and build logs (node images).
	CacheDir string
	// Suites to run; empty or "all" is every suite.
	Suites []string
	// Runtimes to run, one cluster each, side by side.
	Runtimes []runtimes.Runtime
	// RuntimesGiven: the user named the runtime (with Kubeconfig it must
	// match the cluster's).
	RuntimesGiven bool
	// Focus and LabelFilter are Ginkgo's; Procs its parallel processes per
	// cluster, zero: as many as the Machine carries (capacity.Machine.Procs).
	Focus, LabelFilter string
	Procs              int
	// Artifacts is where results, logs and timings go.
	Artifacts string
	// Kubeconfig names an existing cluster: nothing is built or created.
	Kubeconfig string
	// FakesImage is the image with the fakes. With Kubeconfig its default is
	// this build's fakes image in ImageRegistry (internal/imageref).
	FakesImage string
	// ImageRegistry is where an existing cluster pulls faultline's images
	// from (faultline images push); empty: imageref.DefaultRegistry.
	ImageRegistry string
	// Disruptive runs the specs that disrupt a node (restart its runtime) on
	// a cluster faultline did not create; on its own clusters they always run.
	Disruptive bool
	// Keep keeps clusters and engine; with it an existing cluster of the
	// same name and facts is reused.
	Keep bool
	// ReplaceCluster deletes a cluster of the same name that this run did
	// not create; without it such a cluster is refused.
	ReplaceCluster bool
	// ClusterName is the kind cluster's name (with several runtimes,
	// <name>-<runtime>).
	ClusterName string
	// NodeImage is used instead of building one (one runtime only).
	NodeImage string
	// KubernetesVersions are the pinned Kubernetes releases the node images
	// are built from (vocab/versions), each runtime on each; empty: the
	// default release.
	KubernetesVersions []string
	// NRIVersion builds the runtimes with this containerd/nri release
	// instead of their own (nodeimage.Sources.NRI).
	NRIVersion string
	// KubernetesPatches are applied to the pinned Kubernetes release before
	// it is built (nodeimage.Sources.KubernetesPatches).
	KubernetesPatches []string
	// ContainerdPatches, CRIOPatches and NRIPatches are applied the same
	// way to the pinned containerd release (containerd stacks), the pinned
	// CRI-O release (CRI-O stacks) and the NRI release every runtime is
	// built with: the mutants of judge/controls break the runtimes so.
	ContainerdPatches, CRIOPatches, NRIPatches []string
	// FeatureGates are set on every Kubernetes component of new clusters.
	FeatureGates map[string]bool
	// FakeModes are documented misbehaviours of the fakes
	// (vocab/fakemodes), for negative controls: the suites deploy the
	// fakes with them, and the stacks' keys name them.
	FakeModes []string
	// Workers is the number of worker nodes of new clusters beside the
	// control plane (0: one node).
	Workers int
	// KubernetesSrc and ContainerdSrc stand in for the pinned releases.
	KubernetesSrc, ContainerdSrc string
	// ContainerdVersion is a containerd release containerd stacks build
	// instead of the pinned one (their stack's variant says which).
	ContainerdVersion string
	// RuntimeRequestTimeout, NRIRequestTimeout and KubeletSyncFrequency
	// configure new clusters; zero is the default in vocab/facts.
	RuntimeRequestTimeout, NRIRequestTimeout, KubeletSyncFrequency time.Duration
	// Repeat runs the selection this many times on each cluster (zero:
	// once); the report says per requirement whether its verdict varied.
	Repeat int
	// Expectations is a file or directory of expectations to judge by
	// instead of the built-in ones (package expectations).
	Expectations string
	// AllowIncomplete accepts a run that checked less than it selected (a
	// requirement skipped or inconclusive): it ends without
	// verdicts.ErrIncomplete. The report says so either way.
	AllowIncomplete bool
	// SuiteArgs go to the test binary after the run's own.
	SuiteArgs []string
	// SpecTree is the test binary's spec tree (suites/all), read without
	// running it: which specs the selection holds. Empty: unknown, and each
	// stack runs on one cluster.
	SpecTree SpecTree
	// SerialCluster says whether a stack's Serial specs run on a second
	// cluster of the stack, at the same time as the rest (shares): zero
	// (SerialClusterAuto) where the machine has two spare cores per cluster.
	SerialCluster SerialClusterMode
	// Machine is what the auto modes weigh (Procs zero, SerialClusterAuto):
	// the cores and how idle they are. Zero: measured as the run starts
	// (internal/capacity), before faultline puts its own load on it.
	Machine capacity.Machine
	// Out gets progress and the final table.
	Out io.Writer
	// OptionName is how the caller names an Options field to its user (the
	// CLI: by its flag), for the messages that point at an option; nil: the
	// field's own name.
	OptionName func(field string) string
}

// SpecTree is a spec tree as ginkgo.PreviewSpecs lists it.
type SpecTree struct {
	// Description is the tree's (RunSpecs'): Ginkgo's focus matches it.
	Description string
	// Specs are its It nodes.
	Specs []types.SpecReport
}

// ParseSuites reads suite names (comma-separated or repeated; "all" or
// nothing is every suite) into a list in the binary's order.
func ParseSuites(values []string) ([]string, error) {
	want := map[string]bool{}
	for _, v := range values {
		for _, s := range strings.Split(v, ",") {
			s = strings.TrimSpace(s)
			if s == "all" {
				for _, k := range Suites {
					want[k] = true
				}
				continue
			}
			known := false
			for _, k := range Suites {
				known = known || k == s
			}
			if !known {
				return nil, fmt.Errorf("unknown suite %q (want %s or all)", s, strings.Join(Suites, ", "))
			}
			want[s] = true
		}
	}
	var out []string
	for _, k := range Suites {
		if want[k] || len(want) == 0 {
			out = append(out, k)
		}
	}
	return out, nil
}

// LabelFilter is the Ginkgo label filter of a run: the chosen suites, and the
// user's filter.
func LabelFilter(suites []string, user string) string {
	var parts []string
	if len(suites) > 0 && len(suites) < len(Suites) {
		labels := make([]string, len(suites))
		for i, s := range suites {
			labels[i] = suitenames.Label(s)
		}
		parts = append(parts, "("+strings.Join(labels, " || ")+")")
	}
	if user != "" {
		parts = append(parts, "("+user+")")
	}
	return strings.Join(parts, " && ")
}

// labelFilter is the run's label filter: on a cluster faultline did not
// create, no Disruptive spec unless asked for.
func (o *Options) labelFilter() string {
	user := o.LabelFilter
	if o.Kubeconfig != "" && !o.Disruptive {
		if user != "" {
			user = "(" + user + ") && " + suitenames.NotDisruptive
		} else {
			user = suitenames.NotDisruptive
		}
	}
	return LabelFilter(o.Suites, user)
}

// Stack is one cluster of a run: a runtime on a Kubernetes release.
type Stack struct {
	Runtime runtimes.Runtime
	// Kubernetes is the pinned release its node image is built from.
	Kubernetes string
	// Variant is what the run changes on the pinned releases (Options.Variant).
	Variant string
	// Label names it in the stage table, the artifacts (<artifacts>/<Label>)
	// and cluster names: the runtime, and the Kubernetes minor when the run
	// has several releases ("containerd-1.37").
	Label string
}

// Stacks are the run's clusters: each runtime on each Kubernetes release.
func (o *Options) Stacks() []Stack {
	kubes := o.KubernetesVersions
	if len(kubes) == 0 {
		kubes = []string{versions.Default().Kubernetes()}
	}
	var out []Stack
	for _, kube := range kubes {
		for _, rt := range o.Runtimes {
			st := Stack{Runtime: rt, Kubernetes: kube, Label: rt.Name, Variant: o.variantOf(rt)}
			if len(kubes) > 1 {
				st.Label = wire.StackKey(rt.Name, kube, "")
			}
			out = append(out, st)
		}
	}
	return out
}

// clusterName is the kind cluster of a stack in this run.
func (o *Options) clusterName(st Stack) string {
	if len(o.Stacks()) == 1 {
		return o.ClusterName
	}
	return o.ClusterName + "-" + strings.ReplaceAll(st.Label, ".", "-")
}

// Variant names what the run changes on the pinned releases of every
// stack, for the stack keys (wire.StackKey) and so the expectations:
// "nri-v0.12.5" for --nri-version, the patch series' names of
// --kubernetes-patch and --nri-patch, "feature-gates" for gates without
// patches, "multinode" for clusters with workers, and "fake-<mode>" for
// each --fake-mode; "" when it changes nothing. variantOf adds what
// changes one runtime's stacks only.
func (o *Options) Variant() string {
	var parts []string
	if o.Workers > 0 {
		parts = append(parts, "multinode")
	}
	if o.NRIVersion != "" {
		parts = append(parts, "nri-"+o.NRIVersion)
	}
	if name := PatchSeriesName(o.KubernetesPatches); name != "" {
		parts = append(parts, name)
	} else if len(o.FeatureGates) > 0 {
		parts = append(parts, "feature-gates")
	}
	if name := PatchSeriesName(o.NRIPatches); name != "" {
		parts = append(parts, name)
	}
	for _, m := range o.FakeModes {
		parts = append(parts, fakemodes.VariantPart(m))
	}
	return strings.Join(parts, "+")
}

// variantOf is the run's variant on a stack of runtime rt: another
// containerd release changes only containerd's stacks ("containerd-v2.3.7"
// first), a runtime's patches only its own (their series' names last).
func (o *Options) variantOf(rt runtimes.Runtime) string {
	var parts []string
	if o.ContainerdVersion != "" && rt.Name == "containerd" {
		parts = append(parts, "containerd-"+o.ContainerdVersion)
	}
	if v := o.Variant(); v != "" {
		parts = append(parts, v)
	}
	if name := PatchSeriesName(o.RuntimePatches(rt)); name != "" {
		parts = append(parts, name)
	}
	return strings.Join(parts, "+")
}

// RuntimePatches are the patches of runtime rt's own release.
func (o *Options) RuntimePatches(rt runtimes.Runtime) []string {
	switch rt.Name {
	case "containerd":
		return o.ContainerdPatches
	case "crio":
		return o.CRIOPatches
	}
	return nil
}

// numberedPatch is a file of a numbered series (git format-patch names them
// 0001-subject.patch).
var numberedPatch = regexp.MustCompile(`^[0-9]{4}-`)

// PatchSeriesName names a patch series: the directory of a numbered series
// (clusters/patches/kep-5322/0001-....patch is "kep-5322"), the file's
// name without its extension otherwise; several names join with "+".
func PatchSeriesName(patches []string) string {
	var names []string
	seen := map[string]bool{}
	for _, p := range patches {
		name := strings.TrimSuffix(filepath.Base(p), filepath.Ext(p))
		if numberedPatch.MatchString(filepath.Base(p)) {
			if abs, err := filepath.Abs(p); err == nil {
				name = filepath.Base(filepath.Dir(abs))
			}
		}
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	return strings.Join(names, "+")
}
