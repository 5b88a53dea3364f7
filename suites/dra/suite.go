package dra

import (
	"context"
	"fmt"
	"strings"

	"github.com/onsi/ginkgo/v2"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/test/e2e/framework"

	"github.com/faultline-k8s/faultline/suites/harness"
)

// suite is the suite's name: its specs carry the label Suite:dra.
const suite = "dra"

// describe registers a top-level container of the suite: its specs carry the
// label Suite:dra and run once the fake drivers are deployed and ready.
func describe(args ...any) bool {
	ginkgo.GinkgoHelper()
	return harness.Describe(suite, func(ctx context.Context) { harness.Require(ctx, fixtureSet) }, append([]any{harness.NeedsFixtures(fixtureSet)}, args...)...)
}

var _ = harness.DescribeSmoke(suite)

// Features the specs depend on, for --label-filter 'Feature: ...'.
var (
	featureDRA = framework.ValidFeatures.Add("DynamicResourceAllocation")
	// DRADeviceTaints (KEP-5055): the eviction controller acts on NoExecute
	// device taints; beta and on by default in 1.36.
	featureDeviceTaints = framework.ValidFeatures.Add("DRADeviceTaints")
	// ResourceHealthStatus (KEP-4680): device health in pod status; beta
	// and on by default in 1.36.
	featureResourceHealth = framework.ValidFeatures.Add("ResourceHealthStatus")
	// DRAHandlePermanentDriverFailures (KEP-5322 draft): a kubelet that
	// fails the pod on a permanent NodePrepareResources error. No released
	// kubelet has it.
	featurePermanentFailures = framework.ValidFeatures.Add("DRAHandlePermanentDriverFailures")
)

// fixtureSet is fixtures/dra: the two fake drivers, deployed into
// driverNamespace by the first spec that needs them and shared by the run.
const (
	fixtureSet      = "dra"
	driverNamespace = "faultline-dra-driver"
)

// The set is ready when both DaemonSets are (the kubelet confirmed each
// driver's registration: readiness probe /healthz) and each driver has
// published its pool with all devices on every node it runs on.
var _ = harness.RegisterFixtureSet(harness.FixtureSet{
	Name: fixtureSet, Namespace: driverNamespace,
	Ready: []harness.ReadyCheck{slicesPublished},
})

// slicesPublished checks that every driver published all its devices on
// every node its DaemonSet runs on.
func slicesPublished(ctx context.Context, cs clientset.Interface) (bool, string, error) {
	var missing []string
	for _, d := range drivers {
		pods, err := draClient().Pods(ctx, d)
		if err != nil {
			return false, "", err
		}
		if len(pods) == 0 {
			missing = append(missing, d.Name+": no driver pods")
		}
		for _, pod := range pods {
			devices, err := publishedDevices(ctx, cs, d.Name, pod.Spec.NodeName)
			if err != nil {
				return false, "", err
			}
			if len(devices) != d.Devices {
				missing = append(missing, fmt.Sprintf("%s on node %s: %d of %d devices published", d.Name, pod.Spec.NodeName, len(devices), d.Devices))
			}
		}
	}
	return len(missing) == 0, strings.Join(missing, "; "), nil
}
