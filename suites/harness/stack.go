package harness

import (
	"context"
	"github.com/faultline-k8s/faultline/vocab/wire"

	"github.com/onsi/ginkgo/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/test/e2e/framework"
)

// recordStack adds what this run tests to the report (wire.StackEntry on
// the suite setup): the runtime and Kubernetes versions the cluster's facts
// name, and each node's versions as its status shows them. The report's
// header and its stack columns come from it, also for a run faultline did
// not start (an image in a vendor's cluster).
func recordStack(ctx context.Context, cs clientset.Interface, in clusterFacts) {
	info := Cluster()
	s := wire.StackInfo{
		Key:               wire.StackKey(info.Runtime.Name, info.KubernetesVersion, info.Variant),
		Runtime:           info.Runtime.Name,
		RuntimeVersion:    info.RuntimeVersion,
		KubernetesVersion: info.KubernetesVersion,
		Skew:              info.Runtime.Skew(info.RuntimeVersion, info.KubernetesVersion),
		NRIVersion:        info.NRIVersion,
		Variant:           info.Variant,
		NodeImage:         in.Facts.NodeImage,
		FakesImage:        Flags.FakesImage,
		Framework:         FrameworkVersion,
		FactsSource:       in.Source,
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		framework.Logf("list nodes for the report: %v", err)
	} else {
		for _, n := range nodes.Items {
			ni := n.Status.NodeInfo
			s.Nodes = append(s.Nodes, wire.Node{
				Name: n.Name, KubeletVersion: ni.KubeletVersion, ContainerRuntime: ni.ContainerRuntimeVersion,
				Kernel: ni.KernelVersion, OSImage: ni.OSImage, Architecture: ni.Architecture,
			})
		}
	}
	ginkgo.AddReportEntry(wire.StackEntry, s, ginkgo.ReportEntryVisibilityNever)
}

// FrameworkVersion is the k8s.io/kubernetes module (its e2e framework) the
// test binary was built with. A test binary records no module versions, so
// the build stamps it: -ldflags -X with this variable's full name
// (pipeline.BuildTestBinary reads it from go.mod).
var FrameworkVersion = ""
