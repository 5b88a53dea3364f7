package nri

import (
	"context"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"k8s.io/kubernetes/test/e2e/framework"

	"github.com/faultline-k8s/faultline/suites/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }

func TestNRI(t *testing.T) { harness.RunSuite(t, "faultline NRI suite") }

var _ = harness.DescribeSmoke("nri")

// Features of the suite's specs, for --label-filter (Feature:NRI, ...).
var (
	featureNRI = framework.ValidFeatures.Add("NRI")
	// featureValidator: the runtime enforces the NRI default validator's
	// required plugins (containerd >= 2.2 with default_validator enabled).
	featureValidator = framework.ValidFeatures.Add("NRIDefaultValidator")
	// featureFailurePolicy: per-plugin failure policy, containerd/nri#45.
	featureFailurePolicy = framework.ValidFeatures.Add("NRIFailurePolicy")
)

// deploymentTimeout bounds the fake plugin DaemonSet becoming Ready: the
// image is on the nodes (loaded into kind, or pulled once), and each
// instance registers within the runtime's registration timeout.
const deploymentTimeout = 3 * time.Minute

// deployment is the fake plugin DaemonSet, deployed once by process 1.
var deployment *harness.Deployment

var _ = ginkgo.SynchronizedBeforeSuite(func(ctx context.Context) {
	cs, err := framework.LoadClientset()
	framework.ExpectNoError(err, "connect to the cluster")
	node, err := harness.SchedulableNode(ctx, cs)
	framework.ExpectNoError(err)
	socket, err := harness.CRISocketValues(ctx, cs, node)
	framework.ExpectNoError(err, "find the runtime's CRI socket for the runtime-state container")
	deployment, err = harness.Deploy(ctx, "nri", PluginNamespace, socket)
	framework.ExpectNoError(err, "deploy the fake NRI plugin")
	framework.ExpectNoError(harness.WaitForDaemonSets(ctx, cs, PluginNamespace, deploymentTimeout),
		"every fake NRI plugin instance must register with the runtime (its container is Ready only then)")
}, func(context.Context) {})

var _ = ginkgo.SynchronizedAfterSuite(func(context.Context) {}, func(ctx context.Context) {
	if deployment != nil {
		framework.ExpectNoError(deployment.Remove(ctx), "remove the fake NRI plugin")
	}
})
