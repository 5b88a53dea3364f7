package harness

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	authzv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/test/e2e/framework"

	"github.com/faultline-k8s/faultline/fakes/lib/scope"
	"github.com/faultline-k8s/faultline/fixtures"
	"github.com/faultline-k8s/faultline/fixtures/access"
	"github.com/faultline-k8s/faultline/vocab/suitenames"
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
	decorators := append([]any(nil), args...)
	args = append([]any{"refuses " + req.What + " outside faultline's own namespaces (admission policy), and admits it in them", Checks("FAULTLINE-FAULTS-SCOPED")}, args...)
	args = append(args, func(ctx context.Context) {
		// The policy's propagation is no timer of a known length.
		Floor()
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
		Cause("not-refused", func() {
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
		})
		Cause("refused-inside", func() {
			framework.ExpectNoError(dryRun(ctx, f.Namespace.Name), "the same request in the spec's own namespace (labelled %s) must be admitted", scope.NamespaceLabel)
		})
	})
	framework.It(args...)
	if suite, ok := constructionSuite(); ok && bringsFaultsLabelPolicy(suite) {
		itRefusesArmingToTenants(f, suite, decorators...)
	}
}

// constructionSuite is the suite of the container being built (its
// Suite:<name> label).
func constructionSuite() (string, bool) {
	for _, labels := range ginkgo.CurrentTreeConstructionNodeReport().ContainerHierarchyLabels {
		for _, l := range labels {
			if s, ok := strings.CutPrefix(l, suitenames.LabelPrefix); ok {
				return s, true
			}
		}
	}
	return "", false
}

// bringsFaultsLabelPolicy: the suite's fixture set (named as the suite)
// renders the policy on the faults label. A suite whose set has none gets
// no arming spec: nothing would refuse its tenant.
func bringsFaultsLabelPolicy(suite string) bool {
	objects, err := fixtures.Render(suite, access.RenderValues)
	if err != nil {
		return false
	}
	for _, o := range objects {
		if o.GetKind() == "ValidatingAdmissionPolicy" && o.GetName() == access.FaultsLabelPolicy(suite) {
			return true
		}
	}
	return false
}

// itRefusesArmingToTenants registers the spec that proves, at the API
// server, that opening a namespace to faults (scope.NamespaceLabel) is a
// cluster administrator's decision: a tenant of a self-service cluster,
// who may create namespaces and administers one (the built-in admin role,
// where this identity may bind it), is refused a namespace with the label
// by the fixture sets' policy (access.FaultsLabelPolicy), and faultline's
// own identity, allowed access.Arm, is admitted. Dry runs: no namespace is
// made.
func itRefusesArmingToTenants(f *framework.Framework, suite string, args ...any) {
	ginkgo.GinkgoHelper()
	args = append([]any{"refuses to arm a namespace for faults (label " + scope.NamespaceLabel + ") to a tenant who may create namespaces and administers one (admission policy), and lets faultline's identity", Checks("FAULTLINE-FAULTS-SCOPED")}, args...)
	args = append(args, func(ctx context.Context) {
		Floor()
		cs := f.ClientSet
		name, user := access.ScopeTenant(suite), access.ScopeTenantUser(suite)
		// Left by a killed run?
		for _, del := range []func(context.Context, string, metav1.DeleteOptions) error{cs.RbacV1().ClusterRoleBindings().Delete, cs.RbacV1().ClusterRoles().Delete} {
			if err := del(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				framework.Failf("remove the tenant's %s left by an earlier run: %v", name, err)
			}
		}
		meta := metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/part-of": "faultline"},
			Annotations: fixtures.Ownership(fixtures.SpecNamespaces)}
		_, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: meta, Rules: access.Rules(access.ScopeTenantRules)}, metav1.CreateOptions{})
		framework.ExpectNoError(err, "the tenant's ClusterRole: it may create namespaces")
		ginkgo.DeferCleanup(framework.IgnoreNotFound(cs.RbacV1().ClusterRoles().Delete), name, metav1.DeleteOptions{})
		subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
		_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: meta, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}}, metav1.CreateOptions{})
		framework.ExpectNoError(err, "bind the tenant's ClusterRole to %s", user)
		ginkgo.DeferCleanup(framework.IgnoreNotFound(cs.RbacV1().ClusterRoleBindings().Delete), name, metav1.DeleteOptions{})

		// The conformance Job's role may not bind admin (it would let it
		// bind admin anywhere): there the tenant only creates namespaces.
		ns := f.Namespace.Name
		if mayBind(ctx, cs, ns, "admin") {
			_, err = cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: subjects,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"}}, metav1.CreateOptions{})
			framework.ExpectNoError(err, "make %s an admin of %s", user, ns)
			framework.Logf("%s may create namespaces and is admin of %s", user, ns)
		} else {
			framework.Logf("%s may create namespaces; not bound to admin of %s: this identity may not bind admin", user, ns)
		}

		config := f.ClientConfig()
		config.Impersonate = rest.ImpersonationConfig{UserName: user}
		tenant, err := clientset.NewForConfig(config)
		framework.ExpectNoError(err)
		dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
		plain := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "faultline-tenant-"}}
		armed := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "faultline-armed-",
			Labels: map[string]string{scope.NamespaceLabel: scope.NamespaceLabelValue}}}
		// RBAC and the policy take effect a moment after their objects.
		Cause("not-refused", func() {
			gomega.Eventually(ctx, func(ctx context.Context) error {
				if _, err := tenant.CoreV1().Namespaces().Create(ctx, plain, dry); err != nil {
					return fmt.Errorf("%s may not create a namespace (yet): %w", user, err)
				}
				_, err := tenant.CoreV1().Namespaces().Create(ctx, armed, dry)
				switch {
				case err == nil:
					return fmt.Errorf("%s was admitted a namespace labelled %s=%s", user, scope.NamespaceLabel, scope.NamespaceLabelValue)
				case !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err):
					return fmt.Errorf("refused, but not by an admission policy: %w", err)
				case !strings.Contains(err.Error(), "ValidatingAdmissionPolicy") || !strings.Contains(err.Error(), access.FaultsLabelPolicyPrefix):
					return fmt.Errorf("refused by something else than faultline's policy on the label: %w", err)
				}
				framework.Logf("refused for %s: %v", user, err)
				return nil
			}).WithTimeout(policyPropagation).Should(gomega.Succeed())
		})
		_, err = cs.CoreV1().Namespaces().Create(ctx, armed, dry)
		Cause("refused-inside", func() {
			framework.ExpectNoError(err, "faultline's own identity (allowed %s) must be admitted a namespace labelled %s", access.Arm, scope.NamespaceLabel)
		})
	})
	framework.It(args...)
}

// mayBind: this identity may create a RoleBinding of the ClusterRole role
// in namespace (SelfSubjectAccessReviews).
func mayBind(ctx context.Context, cs clientset.Interface, namespace, role string) bool {
	for _, a := range []authzv1.ResourceAttributes{
		{Namespace: namespace, Verb: "create", Group: rbacv1.GroupName, Resource: "rolebindings"},
		{Namespace: namespace, Verb: "bind", Group: rbacv1.GroupName, Resource: "clusterroles", Name: role},
	} {
		r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authzv1.SelfSubjectAccessReview{
			Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &a}}, metav1.CreateOptions{})
		if err != nil || !r.Status.Allowed {
			return false
		}
	}
	return true
}
