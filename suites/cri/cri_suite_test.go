package cri

import (
	"context"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"k8s.io/kubernetes/test/e2e/framework"

	"github.com/faultline-k8s/faultline/suites/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }

func TestCRI(t *testing.T) { harness.RunSuite(t, "faultline CRI suite") }

var _ = harness.DescribeSmoke("cri")

// featureResourceCache: the runtime keeps what it created for a timed-out
// RunPodSandbox or CreateContainer and hands it to the identical retry
// (CRI-O #4221). containerd has no such cache; its specs fail with what it
// really does.
var featureResourceCache = framework.ValidFeatures.Add("CRIResourceCache")

// deploymentTimeout bounds the fixtures' DaemonSets becoming Ready: the image
// is on the nodes already.
const deploymentTimeout = 3 * time.Minute

var deployments []*harness.Deployment

var _ = ginkgo.SynchronizedBeforeSuite(func(ctx context.Context) {
	cs, err := framework.LoadClientset()
	framework.ExpectNoError(err, "connect to the cluster")
	node, err := harness.SchedulableNode(ctx, cs)
	framework.ExpectNoError(err)
	socket, err := harness.CRISocketValues(ctx, cs, node)
	framework.ExpectNoError(err, "find the runtime's CRI socket for the relay")
	sets := map[string]string{"cri": relayNamespace}
	rt, err := harness.NodeRuntime(ctx, cs, node)
	framework.ExpectNoError(err, "read node %s's runtime", node)
	if needsNRISlowdown(rt) {
		sets["nri"] = nriNamespace
	}
	for set, ns := range sets {
		d, err := harness.Deploy(ctx, set, ns, socket)
		framework.ExpectNoError(err, "deploy fixture set %s", set)
		deployments = append(deployments, d)
		framework.ExpectNoError(harness.WaitForDaemonSets(ctx, cs, ns, deploymentTimeout), "fixture set %s must become Ready", set)
	}
}, func(context.Context) {})

var _ = ginkgo.SynchronizedAfterSuite(func(context.Context) {}, func(ctx context.Context) {
	for _, d := range deployments {
		framework.ExpectNoError(d.Remove(ctx), "remove %s", d.Namespace)
	}
})
