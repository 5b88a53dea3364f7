package harness

import (
	"context"
	"errors"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/kubernetes/test/e2e/framework"

	"github.com/faultline-k8s/faultline/fakes/lib/podproxy"
	"github.com/faultline-k8s/faultline/fakes/lib/scope"
	"github.com/faultline-k8s/faultline/fixtures"
)

var fakePods struct {
	once sync.Once
	pods *podproxy.Pods
	err  error
}

// FakePods is this process's way to the HTTP side of faultline's pods (the
// fakes' records and controls, the CRI relay), which listen on loopback
// only: port-forwards, opened on first use and kept until the suite ends.
// Every request carries the run's control token (Pods.Token, for the CRI
// relay's gRPC port too).
func FakePods() *podproxy.Pods {
	fakePods.once.Do(func() {
		token := runControlToken()
		if token.IsZero() {
			fakePods.err = errors.New("no control token: the suite setup makes it (SynchronizedBeforeSuite)")
			return
		}
		config, err := framework.LoadConfig()
		if err != nil {
			fakePods.err = err
			return
		}
		fakePods.pods, fakePods.err = podproxy.NewPods(config, token)
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
// requests elsewhere), and the suites set it only on their own. It carries
// faultline's ownership annotations (fixtures.Ownership), written in the
// same create, so that `faultline cleanup` may remove it after a killed run.
func createTestingNamespace(ctx context.Context, baseName string, cs clientset.Interface, labels map[string]string) (*v1.Namespace, error) {
	with := map[string]string{scope.NamespaceLabel: scope.NamespaceLabelValue}
	for k, v := range labels {
		with[k] = v
	}
	return framework.CreateTestingNS(ctx, baseName, annotatingClient{cs}, with)
}

// annotatingClient adds the ownership annotations to every namespace it
// creates: the framework's CreateTestingNS takes labels only, and it keeps
// its own naming, retries and service account wait.
type annotatingClient struct{ clientset.Interface }

func (c annotatingClient) CoreV1() corev1client.CoreV1Interface {
	return annotatingCore{c.Interface.CoreV1()}
}

type annotatingCore struct{ corev1client.CoreV1Interface }

func (c annotatingCore) Namespaces() corev1client.NamespaceInterface {
	return annotatingNamespaces{c.CoreV1Interface.Namespaces()}
}

type annotatingNamespaces struct {
	corev1client.NamespaceInterface
}

func (n annotatingNamespaces) Create(ctx context.Context, ns *v1.Namespace, opts metav1.CreateOptions) (*v1.Namespace, error) {
	ns = ns.DeepCopy()
	if ns.Annotations == nil {
		ns.Annotations = map[string]string{}
	}
	for k, v := range fixtures.Ownership(fixtures.SpecNamespaces) {
		ns.Annotations[k] = v
	}
	return n.NamespaceInterface.Create(ctx, ns, opts)
}

// installNamespaces makes the framework create faultline's namespaces; Main
// calls it, so a program that only lists the specs changes nothing.
func installNamespaces() {
	framework.TestContext.CreateTestingNS = createTestingNamespace
	// One ID names this process's namespaces (the framework's e2e-run
	// label) and what it applies (fixtures.RunAnnotation).
	fixtures.RunID = string(framework.RunID)
}
