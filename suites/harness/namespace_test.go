package harness

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/kubernetes/test/e2e/framework"

	"github.com/faultline-k8s/faultline/fakes/lib/scope"
	"github.com/faultline-k8s/faultline/fixtures"
)

// A spec's namespace carries the faults label, the framework's labels, and
// faultline's ownership annotations from its creation on, so that
// `faultline cleanup` may remove it; the run is the framework's RunID, as
// the test binary's Main installs it.
func TestSpecNamespaceIsOwned(t *testing.T) {
	installNamespaces()
	cs := fake.NewClientset()
	ns, err := createTestingNamespace(context.Background(), "dra-health", cs, map[string]string{"e2e-framework": "dra-health"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := cs.CoreV1().Namespaces().Get(context.Background(), ns.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !scope.Labelled(got.Labels) || got.Labels["e2e-framework"] != "dra-health" || got.Labels["e2e-run"] != string(framework.RunID) {
		t.Errorf("labels %v", got.Labels)
	}
	if got.Annotations[fixtures.AppliedByAnnotation] != fixtures.SpecNamespaces || got.Annotations[fixtures.RunAnnotation] != string(framework.RunID) {
		t.Errorf("annotations %v, want %s=%s and %s=%s", got.Annotations,
			fixtures.AppliedByAnnotation, fixtures.SpecNamespaces, fixtures.RunAnnotation, framework.RunID)
	}
}
