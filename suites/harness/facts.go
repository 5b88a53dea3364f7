package harness

// The cluster under test, as the specs see it: the facts the cluster code
// wrote into the cluster (vocab/facts), or what the nodes of a cluster
// faultline did not make show, with the --faultline.* overrides applied.
// Ginkgo process 1 reads them once, in the suite setup, and hands them to
// the other processes.

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/test/e2e/framework"

	"github.com/faultline-k8s/faultline/vocab/facts"
	"github.com/faultline-k8s/faultline/vocab/runtimes"
)

// ClusterInfo is what the specs know about the cluster.
type ClusterInfo struct {
	// Runtime is the nodes' container runtime.
	Runtime runtimes.Runtime
	// RuntimeVersion is its version ("2.4.2"); empty when unknown.
	RuntimeVersion string
	// KubernetesVersion is the kubelet's version; empty when unknown.
	KubernetesVersion string
	// RuntimeRequestTimeout is the kubelet's runtimeRequestTimeout; zero
	// when unknown (a cluster whose kubelet /configz cannot be read).
	RuntimeRequestTimeout time.Duration
	// NRIRequestTimeout and NRIRegistrationTimeout are the runtime's NRI
	// plugin timeouts.
	NRIRequestTimeout      time.Duration
	NRIRegistrationTimeout time.Duration
	// KubeletSyncFrequency is the kubelet's syncFrequency: a pod worker
	// syncs a pod it has no news of this often (with up to half of it
	// added as jitter). The DRA specs' retries and windows derive from it.
	KubeletSyncFrequency time.Duration
	// NRIVersion is the containerd/nri release the runtime was built with
	// ("v0.12.5"); empty when unknown (a cluster faultline did not make,
	// or a node image it did not build).
	NRIVersion string
	// Variant names what the node image changed on the pinned releases
	// ("" for none); it joins the stack's key.
	Variant string
	// FakeModes are the misbehaviours the suites deploy their fakes with
	// (vocab/fakemodes), from the cluster's facts; none in a normal run.
	FakeModes []string
	// Sources says where each fact came from, by fact name (runtime,
	// runtime-request-timeout, ...).
	Sources map[string]string
}

// RuntimeDescription is the runtime with its version, for messages
// ("containerd 2.4.2").
func (c ClusterInfo) RuntimeDescription() string {
	if c.RuntimeVersion == "" {
		return c.Runtime.Name
	}
	return c.Runtime.Name + " " + c.RuntimeVersion
}

// The sources of facts, as logged.
const (
	sourceConfigMap = "ConfigMap " + facts.Namespace + "/" + facts.Name
	sourceNodes     = "the nodes"
)

// clusterFacts is what process 1 hands the other processes: the facts as
// read and where from. Each process applies its (identical) flags itself.
type clusterFacts struct {
	Facts  facts.Facts `json:"facts"`
	Source string      `json:"source"`
}

// cluster is set on every process by the suite setup.
var cluster *ClusterInfo

// Cluster returns the cluster's facts. Only specs (and their setup nodes)
// may call it: the suite setup reads the facts.
func Cluster() ClusterInfo {
	if cluster == nil {
		framework.Failf("harness.Cluster: the cluster's facts are read in the suite setup; call Cluster from specs only")
	}
	return *cluster
}

// readClusterFacts reads the facts faultline wrote into the cluster, else
// what the nodes show. It logs why it fell back.
func readClusterFacts(ctx context.Context, cs clientset.Interface) (clusterFacts, error) {
	f, found, err := facts.Read(ctx, cs)
	switch {
	case err != nil:
		framework.Logf("cluster facts: %v; reading the nodes instead", err)
	case found:
		return clusterFacts{Facts: f, Source: sourceConfigMap}, nil
	default:
		framework.Logf("cluster facts: no %s (a cluster faultline did not make); reading the nodes", sourceConfigMap)
	}
	f, err = facts.FromNodes(ctx, cs)
	if err != nil {
		return clusterFacts{}, fmt.Errorf("read the cluster's facts from its nodes (a run can name the runtime with --faultline.runtime): %w", err)
	}
	return clusterFacts{Facts: f, Source: sourceNodes}, nil
}

// resolveCluster applies the overrides o to the facts read: a flag that is
// set wins, then the facts, then (NRI timeouts, which a cluster faultline
// did not make does not show) the defaults of vocab/facts. notes are
// lines to log: where each fact came from, and overrides that contradict
// the cluster's facts.
func resolveCluster(o Options, in clusterFacts) (ClusterInfo, []string, error) {
	f := in.Facts
	info := ClusterInfo{Sources: map[string]string{}, KubernetesVersion: f.KubernetesVersion, NRIVersion: f.NRIVersion, Variant: f.Variant, FakeModes: f.FakeModes}
	var notes []string
	from := func(nodeSource string) string {
		if in.Source == sourceNodes {
			return nodeSource
		}
		return in.Source
	}

	switch {
	case o.Runtime != "":
		rt, err := runtimes.Lookup(o.Runtime)
		if err != nil {
			return ClusterInfo{}, nil, fmt.Errorf("--faultline.runtime: %w", err)
		}
		info.Runtime, info.Sources["runtime"] = rt, "flag --faultline.runtime"
	case f.Runtime != "":
		rt, err := runtimes.Lookup(f.Runtime)
		if err != nil {
			return ClusterInfo{}, nil, fmt.Errorf("cluster facts (%s): %w", in.Source, err)
		}
		info.Runtime, info.Sources["runtime"] = rt, from("node status (containerRuntimeVersion)")
	default:
		return ClusterInfo{}, nil, fmt.Errorf("the cluster's runtime is unknown (%s names none): pass --faultline.runtime", in.Source)
	}
	if f.Runtime != "" {
		if rt, err := runtimes.Lookup(f.Runtime); err == nil && rt.Name == info.Runtime.Name {
			info.RuntimeVersion = f.RuntimeVersion
		}
	}

	duration := func(name, flag string, override time.Duration, fact facts.Duration, nodeSource string, def time.Duration, defSource string) time.Duration {
		switch {
		case override > 0:
			info.Sources[name] = "flag " + flag
			return override
		case fact > 0:
			info.Sources[name] = from(nodeSource)
			return time.Duration(fact)
		case def > 0:
			info.Sources[name] = defSource
			return def
		}
		info.Sources[name] = "unknown (pass " + flag + ")"
		return 0
	}
	info.RuntimeRequestTimeout = duration("runtime-request-timeout", "--faultline.runtime-request-timeout",
		o.RuntimeRequestTimeout, f.RuntimeRequestTimeout, "the kubelet's /configz", 0, "")
	info.NRIRequestTimeout = duration("nri-request-timeout", "--faultline.nri-request-timeout",
		o.NRIRequestTimeout, f.NRIRequestTimeout, "", facts.DefaultNRIRequestTimeout, "default (the runtime's NRI settings are not visible from the API)")
	info.NRIRegistrationTimeout = duration("nri-registration-timeout", "",
		0, f.NRIRegistrationTimeout, "", facts.DefaultNRIRegistrationTimeout, "default (the runtime's NRI settings are not visible from the API)")
	info.KubeletSyncFrequency = duration("kubelet-sync-frequency", "--faultline.kubelet-sync-frequency",
		o.KubeletSyncFrequency, f.KubeletSyncFrequency, "the kubelet's /configz", facts.KubeletBuiltinSyncFrequency, "the kubelet's default (its /configz was not read)")

	notes = append(notes,
		fmt.Sprintf("runtime %s (%s)", info.RuntimeDescription(), info.Sources["runtime"]),
		fmt.Sprintf("runtime-request-timeout %s (%s)", info.RuntimeRequestTimeout, info.Sources["runtime-request-timeout"]),
		fmt.Sprintf("nri-request-timeout %s (%s)", info.NRIRequestTimeout, info.Sources["nri-request-timeout"]),
		fmt.Sprintf("nri-registration-timeout %s (%s)", info.NRIRegistrationTimeout, info.Sources["nri-registration-timeout"]),
		fmt.Sprintf("kubelet-sync-frequency %s (%s)", info.KubeletSyncFrequency, info.Sources["kubelet-sync-frequency"]),
	)
	if f.KubernetesVersion != "" {
		notes = append(notes, fmt.Sprintf("kubernetes %s (%s)", f.KubernetesVersion, from("node status")))
	}
	if f.NRIVersion != "" {
		notes = append(notes, fmt.Sprintf("nri %s (%s)", f.NRIVersion, in.Source))
	}
	if len(f.FeatureGates) > 0 {
		notes = append(notes, fmt.Sprintf("feature gates %s (%s)", facts.FormatGates(f.FeatureGates), in.Source))
	}
	// An override that contradicts what the cluster says is the user's
	// call, but worth a line: specs derive delays from these values.
	// Only what the facts know can contradict an override.
	var want facts.Settings
	if f.Runtime != "" {
		want.Runtime = o.Runtime
	}
	if f.RuntimeRequestTimeout > 0 {
		want.RuntimeRequestTimeout = o.RuntimeRequestTimeout
	}
	if f.NRIRequestTimeout > 0 {
		want.NRIRequestTimeout = o.NRIRequestTimeout
	}
	if f.KubeletSyncFrequency > 0 {
		want.KubeletSyncFrequency = o.KubeletSyncFrequency
	}
	for _, m := range f.Mismatch(want) {
		notes = append(notes, "override contradicts the cluster's facts: "+m)
	}
	return info, notes, nil
}

// setCluster resolves the facts on this process; log says whether to log
// the notes (process 1 does, once per run).
func setCluster(in clusterFacts, log bool) error {
	info, notes, err := resolveCluster(Flags, in)
	if err != nil {
		return err
	}
	if err := checkTreeRuntime(info); err != nil {
		return err
	}
	if log {
		for _, n := range notes {
			framework.Logf("cluster facts: %s", n)
		}
	}
	cluster = &info
	return nil
}

func encodeClusterFacts(in clusterFacts) []byte {
	raw, err := json.Marshal(in)
	framework.ExpectNoError(err, "encode the cluster's facts")
	return raw
}

func decodeClusterFacts(raw []byte) clusterFacts {
	var in clusterFacts
	framework.ExpectNoError(json.Unmarshal(raw, &in), "decode the cluster's facts from process 1")
	return in
}
