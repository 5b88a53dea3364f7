package dra

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/test/e2e/framework"

	"github.com/faultline-k8s/faultline/suites/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }

func TestDRA(t *testing.T) { harness.RunSuite(t, "faultline DRA suite") }

var _ = harness.DescribeSmoke("dra")

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

// driverNamespace holds the fake drivers for the whole suite run.
const driverNamespace = "faultline-dra-driver"

// deployment is the fixture set; only Ginkgo process 1 has it.
var deployment *harness.Deployment

var _ = ginkgo.SynchronizedBeforeSuite(func(ctx context.Context) []byte {
	cs, err := framework.LoadClientset()
	framework.ExpectNoError(err, "client for the cluster")
	ginkgo.By("deploying the fake DRA drivers into " + driverNamespace)
	deployment, err = harness.Deploy(ctx, "dra", driverNamespace, nil)
	framework.ExpectNoError(err, "deploy the dra fixture set")
	// Two DaemonSets; the image is loaded on the nodes, so this is the
	// time to start two small containers and for the kubelet to confirm
	// the registration (readiness probe /healthz).
	framework.ExpectNoError(harness.WaitForDaemonSets(ctx, cs, driverNamespace, 3*time.Minute))
	for _, d := range drivers {
		framework.ExpectNoError(waitForSlices(ctx, cs, d, 2*time.Minute), "ResourceSlices of %s", d.Name)
	}
	return nil
}, func(context.Context, []byte) {})

var _ = ginkgo.SynchronizedAfterSuite(func(context.Context) {}, func(ctx context.Context) {
	if deployment == nil {
		return
	}
	ginkgo.By("removing the fake DRA drivers")
	framework.ExpectNoError(deployment.Remove(ctx), "remove the dra fixture set")
})

// waitForSlices waits until the driver published its pool with all devices
// on every node its DaemonSet runs on.
func waitForSlices(ctx context.Context, cs clientset.Interface, d driverRef, timeout time.Duration) error {
	var missing string
	err := harness.PollUntil(ctx, timeout, func() (bool, error) {
		pods, err := d.pods(ctx, cs)
		if err != nil {
			return false, err
		}
		for _, pod := range pods {
			devices, err := publishedDevices(ctx, cs, d.Name, pod.Spec.NodeName)
			if err != nil {
				return false, err
			}
			if len(devices) != d.Devices {
				missing = fmt.Sprintf("node %s: %d of %d devices published", pod.Spec.NodeName, len(devices), d.Devices)
				return false, nil
			}
		}
		return len(pods) > 0, nil
	})
	if err != nil {
		return fmt.Errorf("%s: %s: %w", d.Name, missing, err)
	}
	return nil
}
