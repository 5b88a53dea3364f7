package dra

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/test/e2e/framework"

	"github.com/faultline-k8s/faultline/fakes/dra/driver"
	"github.com/faultline-k8s/faultline/suites/harness"
	"github.com/faultline-k8s/faultline/vocab/fakemodes"
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

// fixtureSet is fixtures/dra: the fake drivers (fakes/dra/instances),
// deployed into driverNamespace by the first spec that needs them and
// shared by the run.
const (
	fixtureSet      = "dra"
	driverNamespace = "faultline-dra-driver"
)

// The set is ready when every DaemonSet is (the kubelet confirmed each
// driver's registration: readiness probe /healthz) and each driver has
// published its pool with all devices on every node it runs on.
var _ = harness.RegisterFixtureSet(harness.FixtureSet{
	Name: fixtureSet, Namespace: driverNamespace,
	Values: driverValues,
	Ready:  []harness.ReadyCheck{slicesPublished},
})

// driverValues are the set's own template values: the drivers' fake modes
// (.Extra.FakeModes, vocab/fakemodes), from the cluster's facts; empty in a
// normal run.
func driverValues(context.Context, clientset.Interface) (map[string]string, error) {
	return map[string]string{"FakeModes": strings.Join(fakemodes.Of(harness.Cluster().FakeModes, fakemodes.DRA), ",")}, nil
}

// slicesPublished checks that every driver published all its devices on
// every node its DaemonSet runs on. Every spec's BeforeEach asks it
// (harness.Require), also while specs run in parallel; so a driver whose
// DRA service a spec's Unresponsive fault stopped on a node counts as
// published there until the fault's end and startSlack after it
// (stoppedByFault): meanwhile the kubelet removes its slices, and they are
// the business of that spec, which waits for them in its cleanup
// (unresponsive.go), not of the specs that start meanwhile and use other
// drivers.
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
			node := pod.Spec.NodeName
			devices, err := publishedDevices(ctx, cs, d.Name, node)
			if err != nil {
				return false, "", err
			}
			if len(devices) != d.Devices && !stoppedByFault(ctx, node, d) {
				missing = append(missing, fmt.Sprintf("%s on node %s: %d of %d devices published", d.Name, node, len(devices), d.Devices))
			}
		}
	}
	return len(missing) == 0, strings.Join(missing, "; "), nil
}

// stoppedByFault says whether an Unresponsive fault stopped d's DRA service
// on node (GET /service, its last stop) and the fault's end plus startSlack,
// by which the driver has published its devices again, is still ahead.
func stoppedByFault(ctx context.Context, node string, d driverRef) bool {
	st, err := draClient().On(node, d).Service(ctx)
	if err != nil {
		return false
	}
	for i := len(st.Events) - 1; i >= 0; i-- {
		if e := st.Events[i]; e.Event == driver.ServiceStopped && e.Until != nil {
			return time.Now().Before(e.Until.Add(startSlack))
		}
	}
	return false
}
