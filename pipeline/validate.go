package pipeline

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/faultline-k8s/faultline/clusters/kindcluster"
	"github.com/faultline-k8s/faultline/internal/imageref"
	"github.com/faultline-k8s/faultline/judge/expectations"
	"github.com/faultline-k8s/faultline/vocab/fakemodes"
	"github.com/faultline-k8s/faultline/vocab/runtimes"
	"github.com/faultline-k8s/faultline/vocab/versions"
)

// An OptionError is one choice among the options that a run refuses. Its
// message names options by their Options field ("Procs wants a positive
// number, got 0"); a front end that calls them something else (faultline
// e2e: its flags) writes it with Message.
type OptionError struct {
	// Field is the option at fault.
	Field string
	// format gets the field's name, then args.
	format string
	args   []any
}

// option is an Options field's name among an OptionError's args: Message
// names it like the field at fault.
type option string

func (e *OptionError) Error() string { return e.Message(fieldName) }

// Message is the error's text with each option called name(field).
func (e *OptionError) Message(name func(field string) string) string {
	args := []any{name(e.Field)}
	for _, a := range e.args {
		if o, ok := a.(option); ok {
			a = name(string(o))
		}
		args = append(args, a)
	}
	return fmt.Sprintf(e.format, args...)
}

// OptionErrors are everything a run refuses in its options, in the order
// Validate checks them.
type OptionErrors []*OptionError

func (e OptionErrors) Error() string { return e.Message(fieldName) }

// Message is each error's Message, one a line.
func (e OptionErrors) Message(name func(field string) string) string {
	lines := make([]string, len(e))
	for i, err := range e {
		lines[i] = err.Message(name)
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As reach each OptionError.
func (e OptionErrors) Unwrap() []error {
	out := make([]error, len(e))
	for i, err := range e {
		out[i] = err
	}
	return out
}

func (e *OptionErrors) add(field, format string, args ...any) {
	*e = append(*e, &OptionError{Field: field, format: format, args: args})
}

// orNil is nil when nothing was refused: an empty OptionErrors is no error.
func (e OptionErrors) orNil() error {
	if len(e) == 0 {
		return nil
	}
	return e
}

func fieldName(field string) string { return field }

// prepare is where a run starts: the options with their defaults, checked,
// and the expectations it judges by loaded. What it refuses is bad input,
// refused before anything runs.
func prepare(o Options) (Options, error) {
	o = o.withDefaults()
	bad := o.problems()
	if err := o.loadExpectations(); err != nil {
		bad = append(bad, err)
	}
	return o, bad.orNil()
}

// withDefaults is the one place a run's defaults are filled: what the
// caller left zero, and the paths made absolute (the manifest names results
// relative to the artifacts, and the suites run in another directory). It
// changes no slice or map the caller holds.
func (o Options) withDefaults() Options {
	if o.Out == nil {
		o.Out = os.Stderr
	}
	if o.OptionName == nil {
		o.OptionName = fieldName
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
	if len(o.Runtimes) == 0 {
		o.Runtimes = []runtimes.Runtime{runtimes.MustLookup(runtimes.Default)}
	}
	// Suites Validate refuses stay as they are, for it to name.
	if suites, err := ParseSuites(o.Suites); err == nil {
		o.Suites = suites
	}
	if o.Repeat == 0 {
		o.Repeat = 1
	}
	if o.Kubeconfig != "" && o.FakesImage == "" {
		o.FakesImage = imageref.Fakes(o.ImageRegistry)
	}
	return o.withAbsolutePaths()
}

func (o Options) withAbsolutePaths() Options {
	o.Artifacts, o.Kubeconfig, o.Expectations = absolute(o.Artifacts), absolute(o.Kubeconfig), absolute(o.Expectations)
	o.KubernetesPatches = absolutes(o.KubernetesPatches)
	o.ContainerdPatches, o.CRIOPatches, o.NRIPatches = absolutes(o.ContainerdPatches), absolutes(o.CRIOPatches), absolutes(o.NRIPatches)
	return o
}

// absolutes is paths made absolute, in a new slice (the caller's stays).
func absolutes(paths []string) []string {
	if len(paths) == 0 {
		return paths
	}
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = absolute(p)
	}
	return out
}

// absolute is path made absolute; "" stays unset.
func absolute(path string) string {
	if path == "" {
		return ""
	}
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// loadExpectations loads the expectations the run judges by (the report
// loads them again): a file that does not parse is refused before any work.
func (o Options) loadExpectations() *OptionError {
	if o.Expectations == "" {
		return nil
	}
	if _, err := expectations.Load(o.Expectations); err != nil {
		return &OptionError{Field: "Expectations", format: "%s: %v", args: []any{err}}
	}
	return nil
}

// Validate checks options that have their defaults (Run fills them first)
// and reads no cluster. It changes nothing, not even what the options'
// slices and maps hold. What it refuses is OptionErrors, each naming its
// field.
func (o Options) Validate() error { return o.problems().orNil() }

func (o Options) problems() OptionErrors {
	var bad OptionErrors
	if _, err := ParseSuites(o.Suites); err != nil {
		bad.add("Suites", "%s: %v", err)
	}
	releasesKnown := o.checkReleases(&bad)
	o.checkNodeImageSources(&bad)
	// Stacks of unknown releases would only repeat the errors above.
	if releasesKnown {
		o.checkStackLabels(&bad)
	}
	o.checkSelection(&bad)
	o.checkClusterName(&bad)
	if o.Kubeconfig != "" {
		o.checkExistingCluster(&bad)
	}
	o.checkRuntimeSources(&bad)
	o.checkNewClusters(&bad)
	o.checkFakeModes(&bad)
	return bad
}

// checkFakeModes checks the fakes' misbehaviours: known ones, each once,
// and on a cluster faultline makes, whose facts carry them to the suites.
func (o Options) checkFakeModes(bad *OptionErrors) {
	if len(o.FakeModes) == 0 {
		return
	}
	if err := fakemodes.Check(o.FakeModes, ""); err != nil {
		bad.add("FakeModes", "%s: %v", err)
	}
	if o.Kubeconfig != "" {
		bad.add("FakeModes", "%s is for a cluster faultline makes (its facts carry the modes to the suites); it does not go with %s", option("Kubeconfig"))
	}
}

// checkReleases checks the Kubernetes releases and what goes with them; it
// says whether every release is known.
func (o Options) checkReleases(bad *OptionErrors) (known bool) {
	if len(o.KubernetesVersions) == 0 {
		return true
	}
	known = o.checkReleaseNames(bad)
	if o.Kubeconfig != "" || o.NodeImage != "" {
		bad.add("KubernetesVersions", "%s picks the releases node images are built from; it does not go with %s or %s", option("Kubeconfig"), option("NodeImage"))
	}
	if o.KubernetesSrc != "" && len(o.KubernetesVersions) > 1 {
		bad.add("KubernetesSrc", "%s stands in for one release: give one %s with it", option("KubernetesVersions"))
	}
	return known
}

func (o Options) checkReleaseNames(bad *OptionErrors) (known bool) {
	known = true
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
			known = false
			bad.add("KubernetesVersions", "%s: %v", err)
		}
		if seen[v] {
			bad.add("KubernetesVersions", "%s %s is named twice", v)
		}
		seen[v] = true
	}
	if empty {
		bad.add("KubernetesVersions", "%s %q: an empty release; name %s or all", strings.Join(o.KubernetesVersions, ","), strings.Join(versions.Kubernetes(), ", "))
	}
	return known && !empty
}

// checkNodeImageSources checks what changes the pinned releases a node
// image is built from.
func (o Options) checkNodeImageSources(bad *OptionErrors) {
	if o.NRIVersion != "" && !versions.IsRelease(o.NRIVersion) {
		bad.add("NRIVersion", "%s %q: want a release like v0.12.5", o.NRIVersion)
	}
	if o.NodeImage != "" && o.NRIVersion != "" {
		bad.add("NRIVersion", "%s builds a node image; it does not go with %s", option("NodeImage"))
	}
	has := map[string]bool{}
	for _, rt := range o.Runtimes {
		has[rt.Name] = true
	}
	for _, series := range []struct {
		field   string
		patches []string
		runtime string // the runtime whose release it patches; "" every stack's
		// srcField builds that release from a checkout instead, src is its value
		srcField, src string
	}{
		{"KubernetesPatches", o.KubernetesPatches, "", "KubernetesSrc", o.KubernetesSrc},
		{"ContainerdPatches", o.ContainerdPatches, "containerd", "ContainerdSrc", o.ContainerdSrc},
		{"CRIOPatches", o.CRIOPatches, "crio", "", ""},
		{"NRIPatches", o.NRIPatches, "", "", ""},
	} {
		if len(series.patches) == 0 {
			continue
		}
		if o.NodeImage != "" {
			bad.add(series.field, "%s builds a node image; it does not go with %s", option("NodeImage"))
		}
		if series.src != "" {
			bad.add(series.field, "%s applies to the pinned release; with %s, apply it to the checkout", option(series.srcField))
		}
		if series.runtime != "" && !has[series.runtime] {
			bad.add(series.field, "%s is for %s "+series.runtime, option("Runtimes"))
		}
		for _, p := range series.patches {
			if _, err := os.Stat(p); err != nil {
				bad.add(series.field, "%s: %v", err)
			}
		}
	}
}

func (o Options) checkStackLabels(bad *OptionErrors) {
	labels := map[string]bool{}
	for _, st := range o.Stacks() {
		if labels[st.Label] {
			bad.add("KubernetesVersions", "%s: two stacks of the run would both be %s; pin Kubernetes releases of different minors", st.Label)
		}
		labels[st.Label] = true
	}
}

// checkSelection checks what the suites are run with; Ginkgo would refuse
// a bad filter only once the clusters exist.
func (o Options) checkSelection(bad *OptionErrors) {
	if o.Procs < 0 {
		bad.add("Procs", "%s wants a positive number (or 0: as many as the machine carries), got %d", o.Procs)
	}
	if o.Repeat < 1 {
		bad.add("Repeat", "%s wants a positive number, got %d", o.Repeat)
	}
	if o.Focus != "" {
		if _, err := regexp.Compile(o.Focus); err != nil {
			bad.add("Focus", "%s: %v", err)
		}
	}
	if o.LabelFilter != "" {
		if _, err := types.ParseLabelFilter(o.LabelFilter); err != nil {
			bad.add("LabelFilter", "%s %q: %s", o.LabelFilter, labelFilterError(err))
		}
	}
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

func (o Options) checkClusterName(bad *OptionErrors) {
	if limit := kindcluster.MaxNameLength - maxClusterNameSuffix(); len(o.ClusterName) > limit {
		bad.add("ClusterName", "%s %q has %d characters: at most %d, so that the node names of every stack's cluster (<name>-<runtime>-<minor>-control-plane) stay DNS labels of at most 63",
			o.ClusterName, len(o.ClusterName), limit)
	} else if err := kindcluster.ValidateName(o.ClusterName); err != nil {
		bad.add("ClusterName", "%s: %v", err)
	}
}

// maxClusterNameSuffix is the longest suffix clusterName appends to
// ClusterName: "-<runtime>-<minor>" when a run has several stacks. Every
// name leaves room for it, so a name that works for one runtime works for
// all of them (and the next run with Keep finds the same clusters).
func maxClusterNameSuffix() int {
	all := Options{Runtimes: runtimes.All(), KubernetesVersions: versions.Kubernetes()}
	longest := 0
	for _, st := range all.Stacks() {
		longest = max(longest, len(all.clusterName(st)))
	}
	return longest
}

// checkExistingCluster checks a run on a cluster faultline did not create:
// nothing that builds a cluster goes with it.
func (o Options) checkExistingCluster(bad *OptionErrors) {
	if _, err := os.Stat(o.Kubeconfig); err != nil {
		bad.add("Kubeconfig", "%s: %v", err)
	}
	if len(o.Runtimes) > 1 {
		bad.add("Kubeconfig", "%s names one cluster: give at most one %s (or none: it is read from the cluster)", option("Runtimes"))
	}
	for _, c := range []struct {
		field string
		set   bool
	}{
		{"KubernetesPatches", len(o.KubernetesPatches) > 0}, {"ContainerdPatches", len(o.ContainerdPatches) > 0}, {"CRIOPatches", len(o.CRIOPatches) > 0}, {"NRIPatches", len(o.NRIPatches) > 0},
		{"FeatureGates", len(o.FeatureGates) > 0}, {"Workers", o.Workers != 0},
		{"NodeImage", o.NodeImage != ""}, {"KubernetesSrc", o.KubernetesSrc != ""}, {"ContainerdSrc", o.ContainerdSrc != ""}, {"ContainerdVersion", o.ContainerdVersion != ""}, {"NRIVersion", o.NRIVersion != ""},
		// A cluster's timers are its own; the suites read them from it.
		{"RuntimeRequestTimeout", o.RuntimeRequestTimeout != 0}, {"NRIRequestTimeout", o.NRIRequestTimeout != 0}, {"KubeletSyncFrequency", o.KubeletSyncFrequency != 0},
	} {
		if c.set {
			bad.add(c.field, "%s builds a cluster; it does not go with %s", option("Kubeconfig"))
		}
	}
	if o.ReplaceCluster {
		bad.add("ReplaceCluster", "%s does not go with %s: faultline never deletes a cluster it did not create", option("Kubeconfig"))
	}
}

// checkRuntimeSources checks what a node image's runtime is built from.
func (o Options) checkRuntimeSources(bad *OptionErrors) {
	if o.NodeImage != "" && len(o.Runtimes) > 1 {
		bad.add("NodeImage", "%s is one runtime's image; use it with a single %s", option("Runtimes"))
	}
	if o.ContainerdSrc != "" && !o.runsContainerd() {
		bad.add("ContainerdSrc", "%s is for %s containerd", option("Runtimes"))
	}
	if v := o.ContainerdVersion; v != "" {
		switch {
		case !o.runsContainerd():
			bad.add("ContainerdVersion", "%s is for %s containerd", option("Runtimes"))
		case !versions.IsRelease(v):
			bad.add("ContainerdVersion", "%s %q: want a containerd release like v2.3.7", v)
		case o.ContainerdSrc != "":
			bad.add("ContainerdVersion", "%s builds a release; it does not go with %s", option("ContainerdSrc"))
		case o.NodeImage != "":
			bad.add("ContainerdVersion", "%s builds a node image; it does not go with %s", option("NodeImage"))
		}
	}
	for _, src := range []struct{ field, dir string }{{"KubernetesSrc", o.KubernetesSrc}, {"ContainerdSrc", o.ContainerdSrc}} {
		if src.dir == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(src.dir, "go.mod")); err != nil {
			bad.add(src.field, "%s %s is not a Go module checkout (no go.mod)", src.dir)
		}
	}
}

func (o Options) runsContainerd() bool {
	for _, r := range o.Runtimes {
		if r.Name == "containerd" {
			return true
		}
	}
	return false
}

// checkNewClusters checks the settings of the clusters the run creates.
func (o Options) checkNewClusters(bad *OptionErrors) {
	if o.Workers < 0 || o.Workers > kindcluster.MaxWorkers {
		bad.add("Workers", "%s %d: want 0 (one node) to %d", o.Workers, kindcluster.MaxWorkers)
	}
	for _, t := range []struct {
		field string
		d     time.Duration
	}{{"RuntimeRequestTimeout", o.RuntimeRequestTimeout}, {"NRIRequestTimeout", o.NRIRequestTimeout}, {"KubeletSyncFrequency", o.KubeletSyncFrequency}} {
		if err := kindcluster.CheckTimeout(t.d); err != nil {
			bad.add(t.field, "%s %v", err)
		}
	}
}
