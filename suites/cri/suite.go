package cri

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/test/e2e/framework"

	"github.com/faultline-k8s/faultline/suites/harness"
)

// suite is the suite's name: its specs carry the label Suite:cri.
const suite = "cri"

// describe registers a top-level container of the suite: its specs carry the
// label Suite:cri and run once the CRI relay is deployed and ready, and the
// fake NRI plugins too where stage needs them (needsNRI).
func describe(stage string, args ...any) bool {
	ginkgo.GinkgoHelper()
	return harness.Describe(suite, func(ctx context.Context) {
		harness.Require(ctx, fixtureSet)
		if needsNRI(stage) {
			harness.Require(ctx, nriFixtureSet)
		}
	}, append([]any{harness.NeedsFixtures(fixtureSet)}, args...)...)
}

// needsNRI says whether a stage's specs run with the fake NRI plugins
// registered: containerd's CreateContainer is slowed through them
// (slowdown.go); and a registered plugin changes what a runtime does with a
// timed-out RunPodSandbox (CRI-O calls the plugins with the expired request
// and undoes the sandbox when that fails:
// docs/findings/crio-nri-expired-context-defeats-sandbox-cache.md), so the
// sandbox stage fixes that condition, as on a node that runs NRI plugins,
// wherever the node has NRI (its version is known).
func needsNRI(stage string) bool {
	switch stage {
	case stageContainer:
		return !harness.Cluster().Runtime.CreateContainerRunsOCICreate
	case stageSandbox:
		return harness.Cluster().NRIVersion != ""
	}
	return false
}

var _ = harness.DescribeSmoke(suite)

// featureResourceCache: the runtime keeps what it created for a timed-out
// RunPodSandbox or CreateContainer and hands it to the identical retry
// (CRI-O #4221). containerd has no such cache; its specs fail with what it
// really does.
var featureResourceCache = framework.ValidFeatures.Add("CRIResourceCache")

const (
	// fixtureSet is fixtures/cri: the CRI relay DaemonSet and the
	// faultline-slow RuntimeClass, in relayNamespace.
	fixtureSet = "cri"
	// nriFixtureSet is the NRI suite's fake NRI plugin (fixtures/nri),
	// which slows containerd's CreateContainer (see slowdown.go). Both
	// suites share its one deployment.
	nriFixtureSet = "nri"
)

var _ = harness.RegisterFixtureSet(harness.FixtureSet{
	Name: fixtureSet, Namespace: relayNamespace,
	Values: relayValues,
})

// relayValues are the relay's template values: the node's CRI socket, which
// it mounts, and the runtime's process name, the one process it may restart.
func relayValues(ctx context.Context, cs clientset.Interface) (map[string]string, error) {
	values, err := harness.CRISocketValues(ctx, cs)
	if err != nil {
		return nil, err
	}
	process := harness.Cluster().Runtime.Process
	if process == "" {
		return nil, fmt.Errorf("no process name known for runtime %q (vocab/runtimes)", harness.Cluster().Runtime.Name)
	}
	values["RuntimeProcess"] = process
	return values, nil
}
