package harness

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/test/e2e/framework"

	podproxy "github.com/faultline-k8s/faultline/drivers/fake/client"
	"github.com/faultline-k8s/faultline/drivers/fake/scope"
)

var fakePods struct {
	once sync.Once
	pods *podproxy.Pods
	err  error
}

// FakePods is this process's way to the HTTP side of faultline's pods (the
// fakes' records and controls, the CRI relay), which listen on loopback
// only: port-forwards, opened on first use and kept until the suite ends.
func FakePods() *podproxy.Pods {
	fakePods.once.Do(func() {
		config, err := framework.LoadConfig()
		if err != nil {
			fakePods.err = err
			return
		}
		fakePods.pods, fakePods.err = podproxy.NewPods(config)
	})
	framework.ExpectNoError(fakePods.err, "port-forwards to faultline's pods")
	return fakePods.pods
}

func closeFakePods() {
	if fakePods.pods != nil {
		fakePods.pods.Close()
	}
}

// createTestingNamespace creates a spec's namespace as the framework does,
// with scope.NamespaceLabel: faults act only in namespaces that carry it
// (the fakes check, and the fixture sets' admission policies refuse fault
// requests elsewhere), and the suites set it only on their own.
func createTestingNamespace(ctx context.Context, baseName string, cs clientset.Interface, labels map[string]string) (*v1.Namespace, error) {
	with := map[string]string{scope.NamespaceLabel: scope.NamespaceLabelValue}
	for k, v := range labels {
		with[k] = v
	}
	return framework.CreateTestingNS(ctx, baseName, cs, with)
}

func init() {
	framework.TestContext.CreateTestingNS = createTestingNamespace
}
