// Package pipeline is faultline's whole e2e run in one place: a container
// engine, the node and fakes images, one kind cluster per runtime (side by
// side), the suites in one test binary, the report, and a cleanup that leaves
// nothing running that the run started, also when it is interrupted.
package pipeline

import (
	"errors"
	"fmt"
	"github.com/faultline-k8s/faultline/vocab/wire"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/faultline-k8s/faultline/clusters/kindcluster"
	"github.com/faultline-k8s/faultline/internal/imageref"
	"github.com/faultline-k8s/faultline/judge/expectations"
	"github.com/faultline-k8s/faultline/vocab/runtimes"
	"github.com/faultline-k8s/faultline/vocab/suitenames"
	"github.com/faultline-k8s/faultline/vocab/versions"
)

// Suites are the suites of the test binary (vocab/suitenames).
var Suites = suitenames.All

// Options are one run's choices (faultline e2e's flags).
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
	// Focus and LabelFilter are Ginkgo's; Procs its parallel processes.
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
	// FeatureGates are set on every Kubernetes component of new clusters.
	FeatureGates map[string]bool
	// Workers is the number of worker nodes of new clusters beside the
	// control plane (0: one node).
	Workers int
	// KubernetesSrc and ContainerdSrc stand in for the pinned releases.
	KubernetesSrc, ContainerdSrc string
	// RuntimeRequestTimeout and NRIRequestTimeout configure new clusters;
	// zero is the default in vocab/facts.
	RuntimeRequestTimeout, NRIRequestTimeout time.Duration
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
	// Out gets progress and the final table.
	Out io.Writer
}

// Validate checks the options and fills defaults; it reads no cluster.
func (o *Options) Validate() error {
	var errs []string
	if o.Out == nil {
		o.Out = os.Stderr
	}
	if o.RepoRoot == "" {
		o.RepoRoot = "."
	}
	if o.ClusterName == "" {
		o.ClusterName = "faultline"
	}
	if o.Artifacts == "" {
		o.Artifacts = "_artifacts"
	}
	// Absolute: the manifest names results relative to it, and the suites
	// run in another directory.
	if abs, err := filepath.Abs(o.Artifacts); err == nil {
		o.Artifacts = abs
	}
	if len(o.Runtimes) == 0 {
		o.Runtimes = []runtimes.Runtime{runtimes.MustLookup(runtimes.Default)}
	}
	suites, err := ParseSuites(o.Suites)
	if err != nil {
		errs = append(errs, err.Error())
	}
	o.Suites = suites
	if o.Repeat < 1 {
		o.Repeat = 1 // the zero value: one run (the CLI refuses less than 1)
	}
	if o.Expectations != "" {
		if _, err := expectations.Load(o.Expectations); err != nil {
			errs = append(errs, fmt.Sprintf("--expectations: %v", err))
		} else if abs, err := filepath.Abs(o.Expectations); err == nil {
			o.Expectations = abs
		}
	}
	releasesValid := true
	if len(o.KubernetesVersions) > 0 {
		seen := map[string]bool{}
		empty := false
		for _, v := range o.KubernetesVersions {
			if v == "" {
				// versions.ForKubernetes("") is the default release: a stray
				// comma must not pick it silently.
				empty = true
				continue
			}
			if _, err := versions.ForKubernetes(v); err != nil {
				releasesValid = false
				errs = append(errs, "--kubernetes-version: "+err.Error())
			}
			if seen[v] {
				errs = append(errs, "--kubernetes-version "+v+" is named twice")
			}
			seen[v] = true
		}
		if empty {
			releasesValid = false
			errs = append(errs, fmt.Sprintf("--kubernetes-version %q: an empty release; name %s or all", strings.Join(o.KubernetesVersions, ","), strings.Join(versions.Kubernetes(), ", ")))
		}
		if o.Kubeconfig != "" || o.NodeImage != "" {
			errs = append(errs, "--kubernetes-version picks the releases node images are built from; it does not go with --kubeconfig or --node-image")
		}
		if o.KubernetesSrc != "" && len(o.KubernetesVersions) > 1 {
			errs = append(errs, "--kubernetes-src stands in for one release: give one --kubernetes-version with it")
		}
	}
	if o.NRIVersion != "" && !versions.IsRelease(o.NRIVersion) {
		errs = append(errs, fmt.Sprintf("--nri-version %q: want a release like v0.12.5", o.NRIVersion))
	}
	if o.NodeImage != "" && o.NRIVersion != "" {
		errs = append(errs, "--nri-version builds a node image; it does not go with --node-image")
	}
	if len(o.KubernetesPatches) > 0 {
		if o.NodeImage != "" {
			errs = append(errs, "--kubernetes-patch builds a node image; it does not go with --node-image")
		}
		if o.KubernetesSrc != "" {
			errs = append(errs, "--kubernetes-patch applies to the pinned release; with --kubernetes-src, apply it to the checkout")
		}
		for i, p := range o.KubernetesPatches {
			if _, err := os.Stat(p); err != nil {
				errs = append(errs, fmt.Sprintf("--kubernetes-patch: %v", err))
			} else if abs, err := filepath.Abs(p); err == nil {
				o.KubernetesPatches[i] = abs
			}
		}
	}
	// Stacks of unknown releases would only repeat the error above.
	if releasesValid {
		labels := map[string]bool{}
		for _, st := range o.Stacks() {
			if labels[st.Label] {
				errs = append(errs, "two stacks of the run would both be "+st.Label+": pin Kubernetes releases of different minors")
			}
			labels[st.Label] = true
		}
	}
	if o.Procs < 1 {
		errs = append(errs, fmt.Sprintf("--procs wants a positive number, got %d", o.Procs))
	}
	if o.Focus != "" {
		if _, err := regexp.Compile(o.Focus); err != nil {
			errs = append(errs, fmt.Sprintf("--focus: %v", err))
		}
	}
	// Ginkgo would refuse a bad filter only once the clusters exist.
	if o.LabelFilter != "" {
		if _, err := types.ParseLabelFilter(o.LabelFilter); err != nil {
			errs = append(errs, fmt.Sprintf("--label-filter %q: %s", o.LabelFilter, labelFilterError(err)))
		}
	}
	if limit := kindcluster.MaxNameLength - maxClusterNameSuffix(); len(o.ClusterName) > limit {
		errs = append(errs, fmt.Sprintf("--cluster-name %q has %d characters: at most %d, so that the node names of every stack's cluster (<name>-<runtime>-<minor>-control-plane) stay DNS labels of at most 63",
			o.ClusterName, len(o.ClusterName), limit))
	} else if err := kindcluster.ValidateName(o.ClusterName); err != nil {
		errs = append(errs, "--cluster-name: "+err.Error())
	}
	if o.Kubeconfig != "" {
		if _, err := os.Stat(o.Kubeconfig); err != nil {
			errs = append(errs, fmt.Sprintf("--kubeconfig: %v", err))
		} else if abs, err := filepath.Abs(o.Kubeconfig); err == nil {
			o.Kubeconfig = abs
		}
		if o.FakesImage == "" {
			o.FakesImage = imageref.Fakes(o.ImageRegistry)
		}
		if len(o.Runtimes) > 1 {
			errs = append(errs, "--kubeconfig names one cluster: give at most one --runtime (or none: it is read from the cluster)")
		}
		if len(o.KubernetesPatches) > 0 || len(o.FeatureGates) > 0 || o.Workers != 0 {
			errs = append(errs, "--kubernetes-patch, --feature-gates and --workers build a cluster; they do not go with --kubeconfig")
		}
		for name, v := range map[string]string{"--node-image": o.NodeImage, "--kubernetes-src": o.KubernetesSrc, "--containerd-src": o.ContainerdSrc, "--nri-version": o.NRIVersion} {
			if v != "" {
				errs = append(errs, name+" builds a cluster; it does not go with --kubeconfig")
			}
		}
		if o.ReplaceCluster {
			errs = append(errs, "--replace-cluster does not go with --kubeconfig: faultline never deletes a cluster it did not create")
		}
	}
	if o.NodeImage != "" && len(o.Runtimes) > 1 {
		errs = append(errs, "--node-image is one runtime's image; use it with a single --runtime")
	}
	if o.ContainerdSrc != "" {
		hasContainerd := false
		for _, r := range o.Runtimes {
			hasContainerd = hasContainerd || r.Name == "containerd"
		}
		if !hasContainerd {
			errs = append(errs, "--containerd-src is for --runtime containerd")
		}
	}
	for name, dir := range map[string]string{"--kubernetes-src": o.KubernetesSrc, "--containerd-src": o.ContainerdSrc} {
		if dir == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
			errs = append(errs, fmt.Sprintf("%s %s is not a Go module checkout (no go.mod)", name, dir))
		}
	}
	if o.Workers < 0 || o.Workers > kindcluster.MaxWorkers {
		errs = append(errs, fmt.Sprintf("--workers %d: want 0 (one node) to %d", o.Workers, kindcluster.MaxWorkers))
	}
	for _, t := range []struct {
		flag string
		d    time.Duration
	}{{"--runtime-request-timeout", o.RuntimeRequestTimeout}, {"--nri-request-timeout", o.NRIRequestTimeout}} {
		if err := kindcluster.CheckTimeout(t.d); err != nil {
			errs = append(errs, t.flag+" "+err.Error())
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "\n"))
	}
	return nil
}

// labelFilterError is the one line of Ginkgo's parse error that says what
// is wrong (its message also repeats the filter, with color markup).
func labelFilterError(err error) string {
	var g types.GinkgoError
	if errors.As(err, &g) {
		lines := strings.Split(strings.TrimSpace(g.Message), "\n")
		return lines[len(lines)-1]
	}
	return err.Error()
}

// maxClusterNameSuffix is the longest suffix clusterName appends to
// --cluster-name: "-<runtime>-<minor>" when a run has several stacks. Every
// name leaves room for it, so a name that works for one runtime works for
// all of them (and the next run with --keep finds the same clusters).
func maxClusterNameSuffix() int {
	all := Options{Runtimes: runtimes.All(), KubernetesVersions: versions.Kubernetes()}
	longest := 0
	for _, st := range all.Stacks() {
		longest = max(longest, len(all.clusterName(st)))
	}
	return longest
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
			st := Stack{Runtime: rt, Kubernetes: kube, Label: rt.Name, Variant: o.Variant()}
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

// Variant names what the run changes on the pinned releases, for the stack
// keys (wire.StackKey) and so the expectations: "nri-v0.12.5" for
// --nri-version, the patch series' name for --kubernetes-patch,
// "feature-gates" for gates without patches, and "multinode" for clusters
// with workers; "" when it changes nothing.
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
	return strings.Join(parts, "+")
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
