package harness

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kubernetes/test/e2e/framework"

	"github.com/faultline-k8s/faultline/drivers/fake/scope"
	"github.com/faultline-k8s/faultline/fixtures"
)

// FaultRequest is an object that asks one of faultline's fakes for a fault
// (a pod with fault annotations, a claim of the fake driver's class), built
// for a namespace.
type FaultRequest struct {
	// What names it in the spec's text ("a pod with an NRI fault annotation").
	What     string
	Resource schema.GroupVersionResource
	Build    func(namespace string) runtime.Object
}

// PodsResource is the resource of FaultRequests that are pods.
var PodsResource = v1.SchemeGroupVersion.WithResource("pods")

// policyPropagation bounds an admission policy taking effect after its
// fixture set was applied: the API server compiles policies and bindings
// from an informer, within about a second.
const policyPropagation = 30 * time.Second

// ItRefusesFaultsOutsideOwnNamespaces registers, inside a suite's container,
// the spec that proves the suite's fixture set opens no door to other
// tenants: the API server (the witness; no fake is involved) refuses req in
// a namespace without scope.NamespaceLabel, and admits it in the spec's own
// namespace. Both are server-side dry runs, so nothing is created.
func ItRefusesFaultsOutsideOwnNamespaces(f *framework.Framework, req FaultRequest, args ...any) {
	ginkgo.GinkgoHelper()
	args = append([]any{"refuses " + req.What + " outside faultline's own namespaces (admission policy), and admits it in them", Checks("FAULTLINE-FAULTS-SCOPED")}, args...)
	args = append(args, func(ctx context.Context) {
		tenant, err := f.ClientSet.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{
			GenerateName: "faultline-tenant-",
			Labels:       map[string]string{"app.kubernetes.io/part-of": "faultline"},
			// faultline's to remove after a killed run (faultline cleanup).
			Annotations: fixtures.Ownership(fixtures.SpecNamespaces),
		}}, metav1.CreateOptions{})
		framework.ExpectNoError(err, "create a namespace without %s", scope.NamespaceLabel)
		ginkgo.DeferCleanup(framework.IgnoreNotFound(f.ClientSet.CoreV1().Namespaces().Delete), tenant.Name, metav1.DeleteOptions{})

		dryRun := func(ctx context.Context, namespace string) error {
			typed := req.Build(namespace)
			gvks, _, err := scheme.Scheme.ObjectKinds(typed)
			if err != nil {
				return err
			}
			typed.GetObjectKind().SetGroupVersionKind(gvks[0])
			obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
			if err != nil {
				return err
			}
			_, err = f.DynamicClient.Resource(req.Resource).Namespace(namespace).Create(ctx,
				&unstructured.Unstructured{Object: obj}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}
		gomega.Eventually(ctx, func(ctx context.Context) error {
			err := dryRun(ctx, tenant.Name)
			switch {
			case err == nil:
				return fmt.Errorf("admitted in %s, a namespace without %s=%s", tenant.Name, scope.NamespaceLabel, scope.NamespaceLabelValue)
			case !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err):
				return fmt.Errorf("refused, but not by an admission policy: %w", err)
			case !strings.Contains(err.Error(), "ValidatingAdmissionPolicy"):
				return fmt.Errorf("refused by something else than faultline's admission policy: %w", err)
			}
			framework.Logf("refused in %s: %v", tenant.Name, err)
			return nil
		}).WithTimeout(policyPropagation).Should(gomega.Succeed())
		framework.ExpectNoError(dryRun(ctx, f.Namespace.Name), "the same request in the spec's own namespace (labelled %s) must be admitted", scope.NamespaceLabel)
	})
	framework.It(args...)
}
