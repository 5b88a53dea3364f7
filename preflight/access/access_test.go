package access

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	rbacauthorizer "k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac"

	"github.com/faultline-k8s/faultline/drivers/fake/scope"
	"github.com/faultline-k8s/faultline/fixtures"
	"github.com/faultline-k8s/faultline/suites/suitenames"
)

// allows asks the API server's own RBAC rule matcher whether rules grant a.
func allows(rules []rbacv1.PolicyRule, a Access) bool {
	return rbacauthorizer.RulesAllow(authorizer.AttributesRecord{
		User: &user.DefaultInfo{Name: "system:serviceaccount:" + Job + ":" + Job},
		Verb: a.Verb, APIGroup: a.Group, Resource: a.Resource, Subresource: a.Subresource, Name: a.Name,
		ResourceRequest: true,
	}, rules...)
}

// TestJobRoleGrantsWhatTheRunNeeds: every access of the specs, of every
// fixture set (its objects, its roles' rules, its bindings' roles) and of
// the runner's self-removal is granted by the Job's ClusterRole, as the
// authorizer matches rules.
func TestJobRoleGrantsWhatTheRunNeeds(t *testing.T) {
	rules, err := JobRules()
	if err != nil {
		t.Fatal(err)
	}
	run, err := Run()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range append(run, JobSelfRemoval...) {
		if !allows(rules, a) {
			t.Errorf("the Job's ClusterRole does not grant %s", a)
		}
	}
	for _, set := range suitenames.All {
		n, err := Fixture(set)
		if err != nil {
			t.Fatal(err)
		}
		if len(n.Objects) == 0 {
			t.Errorf("fixtures/%s: no objects", set)
		}
		// RBAC's escalation check: whoever creates a role holds every rule
		// it grants.
		for _, a := range Expand(n.Held...) {
			if !allows(rules, a) {
				t.Errorf("fixtures/%s: the Job cannot create its roles: it does not hold %s", set, a)
			}
		}
	}
}

// TestANewNeedChangesTheRole: a fixture object of a kind the sets do not
// have today is not granted by the current role, and is once it is among
// the accesses: the role follows the fixtures, and the test above would
// catch a role that did not.
func TestANewNeedChangesTheRole(t *testing.T) {
	rules, err := JobRules()
	if err != nil {
		t.Fatal(err)
	}
	pc := &unstructured.Unstructured{}
	pc.SetAPIVersion("scheduling.k8s.io/v1")
	pc.SetKind("PriorityClass")
	pc.SetName("faultline-high")
	n, err := needsOf([]*unstructured.Unstructured{pc})
	if err != nil {
		t.Fatal(err)
	}
	want := Access{Verb: "create", Group: "scheduling.k8s.io", Resource: "priorityclasses"}
	if !slices.Contains(n.Objects, want) {
		t.Fatalf("a PriorityClass needs %v, want %s among them", n.Objects, want)
	}
	if allows(rules, want) {
		t.Fatalf("the role grants %s already: pick a kind no set has", want)
	}
	run, _ := Run()
	if !allows(Rules(append(run, n.Objects...)), want) {
		t.Errorf("a role with the new object does not grant %s", want)
	}
}

// TestJobRoleIsNarrow: what a role near cluster-admin would grant and this
// one must not: secrets, other RBAC, escalation, other admission policies,
// other users, exec, changing namespaces or nodes.
func TestJobRoleIsNarrow(t *testing.T) {
	rules, err := JobRules()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		for _, s := range slices.Concat(r.Verbs, r.APIGroups, r.Resources, r.ResourceNames) {
			if strings.Contains(s, "*") {
				t.Errorf("a wildcard in rule %+v", r)
			}
		}
		if len(r.NonResourceURLs) > 0 {
			t.Errorf("non-resource URLs in rule %+v", r)
		}
	}
	for _, a := range []Access{
		{Verb: "get", Resource: "secrets"},
		{Verb: "list", Resource: "secrets"},
		{Verb: "list", Resource: "configmaps"},
		{Verb: "get", Resource: "configmaps", Name: "kubeadm-config"},
		{Verb: "create", Resource: "pods", Subresource: "exec"},
		{Verb: "get", Resource: "pods", Subresource: "exec"},
		{Verb: "update", Resource: "namespaces"},
		{Verb: "patch", Resource: "namespaces"},
		{Verb: "patch", Resource: "nodes"},
		{Verb: "delete", Resource: "nodes"},
		{Verb: "update", Resource: "pods"},
		{Verb: "create", Resource: "serviceaccounts", Subresource: "token"},
		{Verb: "escalate", Group: rbacv1.GroupName, Resource: "clusterroles"},
		{Verb: "escalate", Group: rbacv1.GroupName, Resource: "clusterroles", Name: "faultline-fake-dra-driver"},
		{Verb: "bind", Group: rbacv1.GroupName, Resource: "clusterroles", Name: "cluster-admin"},
		{Verb: "bind", Group: rbacv1.GroupName, Resource: "clusterroles", Name: "admin"},
		{Verb: "bind", Group: rbacv1.GroupName, Resource: "clusterroles", Name: "edit"},
		{Verb: "create", Group: rbacv1.GroupName, Resource: "rolebindings"},
		{Verb: "update", Group: rbacv1.GroupName, Resource: "clusterroles", Name: "faultline-fake-dra-driver"},
		{Verb: "delete", Group: rbacv1.GroupName, Resource: "clusterroles", Name: "cluster-admin"},
		{Verb: "delete", Group: rbacv1.GroupName, Resource: "clusterrolebindings", Name: "cluster-admin"},
		{Verb: "patch", Group: rbacv1.GroupName, Resource: "clusterrolebindings", Name: "cluster-admin"},
		{Verb: "delete", Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies", Name: "other"},
		{Verb: "update", Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies", Name: FaultsLabelPolicy("cri")},
		{Verb: "delete", Group: "apps", Resource: "daemonsets", Name: "kube-proxy"},
		{Verb: "impersonate", Resource: "users", Name: "kubernetes-admin"},
		{Verb: "impersonate", Resource: "groups", Name: "system:masters"},
		{Verb: "impersonate", Resource: "serviceaccounts"},
		{Verb: "create", Group: "certificates.k8s.io", Resource: "certificatesigningrequests"},
	} {
		if allows(rules, a) {
			t.Errorf("the Job's ClusterRole grants %s", a)
		}
	}
}

func TestRules(t *testing.T) {
	got := Rules([]Access{
		{Verb: "get", Resource: "pods"},
		{Verb: "list", Resource: "pods"},
		{Verb: "get", Resource: "pods", Name: "x"}, // covered by get of any pod
		{Verb: "delete", Resource: "pods", Name: "x"},
		{Verb: "delete", Resource: "pods", Name: "y"},
		{Verb: "get", Resource: "events"},
		{Verb: "list", Resource: "events"},
		{Verb: "create", Resource: "pods", Subresource: "portforward"},
		{Verb: "bind", Group: rbacv1.GroupName, Resource: "clusterroles", Name: "r"},
	})
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"events", "pods"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"delete"}, ResourceNames: []string{"x", "y"}},
		{APIGroups: []string{""}, Resources: []string{"pods/portforward"}, Verbs: []string{"create"}},
		{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, Verbs: []string{"bind"}, ResourceNames: []string{"r"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Rules:\n got %+v\nwant %+v", got, want)
	}
	if back := Expand(want...); len(back) != 8 {
		t.Errorf("Expand gives %d accesses, want 8: %v", len(back), back)
	}
}

// TestFaultsLabelPolicies: the cri and nri sets (and any other that has
// one) bring the same policy on the faults label, under their own names;
// it asks the authorizer for Arm and evaluates only writes that add or
// change the label.
func TestFaultsLabelPolicies(t *testing.T) {
	var specs []admissionv1.ValidatingAdmissionPolicySpec
	var have []string
	for _, set := range suitenames.All {
		objects, err := fixtures.Render(set, RenderValues)
		if err != nil {
			t.Fatal(err)
		}
		var policy *admissionv1.ValidatingAdmissionPolicy
		var binding *admissionv1.ValidatingAdmissionPolicyBinding
		for _, o := range objects {
			switch {
			case o.GetKind() == "ValidatingAdmissionPolicy" && o.GetName() == FaultsLabelPolicy(set):
				policy = &admissionv1.ValidatingAdmissionPolicy{}
				convert(t, o, policy)
			case o.GetKind() == "ValidatingAdmissionPolicyBinding" && o.GetName() == FaultsLabelPolicy(set):
				binding = &admissionv1.ValidatingAdmissionPolicyBinding{}
				convert(t, o, binding)
			case strings.HasPrefix(o.GetName(), FaultsLabelPolicyPrefix):
				t.Errorf("fixtures/%s: %s %s has another set's name", set, o.GetKind(), o.GetName())
			}
		}
		if policy == nil {
			continue
		}
		have = append(have, set)
		if binding == nil || binding.Spec.PolicyName != policy.Name || !slices.Equal(binding.Spec.ValidationActions, []admissionv1.ValidationAction{admissionv1.Deny}) {
			t.Errorf("fixtures/%s: policy %s needs a binding of its name that denies, got %+v", set, policy.Name, binding)
		}
		specs = append(specs, policy.Spec)
	}
	for _, want := range []string{"cri", "nri"} {
		if !slices.Contains(have, want) {
			t.Errorf("fixtures/%s has no policy %s", want, FaultsLabelPolicy(want))
		}
	}
	if len(specs) == 0 {
		t.FailNow()
	}
	for i := range specs[1:] {
		if !reflect.DeepEqual(specs[0], specs[i+1]) {
			t.Errorf("the policies of %s and %s differ: keep the copies alike", have[0], have[i+1])
		}
	}
	spec := specs[0]
	if spec.FailurePolicy == nil || *spec.FailurePolicy != admissionv1.Fail || len(spec.Validations) != 1 || len(spec.MatchConditions) != 1 {
		t.Fatalf("want failurePolicy Fail, one match condition, one validation: %+v", spec)
	}
	rules := spec.MatchConstraints.ResourceRules
	if len(rules) != 1 || !slices.Equal(rules[0].Operations, []admissionv1.OperationType{admissionv1.Create, admissionv1.Update}) ||
		!slices.Equal(rules[0].Resources, []string{"namespaces", "namespaces/status", "namespaces/finalize"}) {
		t.Errorf("want CREATE and UPDATE of namespaces and the subresources that write labels: %+v", rules)
	}
	// Drift guard: the check is Arm's, the label scope's.
	check := `authorizer.group("` + FaultsGroup + `").resource("` + FaultsResource + `").check("` + ArmVerb + `").allowed()`
	if got := strings.TrimSpace(spec.Validations[0].Expression); got != check {
		t.Errorf("validation %q, want %q", got, check)
	}

	env, err := cel.NewEnv(cel.Variable("object", cel.DynType), cel.Variable("oldObject", cel.DynType))
	if err != nil {
		t.Fatal(err)
	}
	match := spec.MatchConditions[0].Expression
	if !strings.Contains(match, `"`+scope.NamespaceLabel+`"`) {
		t.Errorf("match condition %q does not name %s", match, scope.NamespaceLabel)
	}
	ast, iss := env.Compile(match)
	if iss.Err() != nil {
		t.Fatal(iss.Err())
	}
	prg, err := env.Program(ast)
	if err != nil {
		t.Fatal(err)
	}
	ns := func(labels map[string]any) map[string]any {
		m := map[string]any{"name": "n"}
		if labels != nil {
			m["labels"] = labels
		}
		return map[string]any{"metadata": m}
	}
	armed := map[string]any{scope.NamespaceLabel: scope.NamespaceLabelValue}
	for _, tc := range []struct {
		name        string
		object, old any
		want        bool
	}{
		{"create without labels", ns(nil), nil, false},
		{"create with other labels", ns(map[string]any{"team": "a"}), nil, false},
		{"create armed", ns(armed), nil, true},
		{"create with another value", ns(map[string]any{scope.NamespaceLabel: "no"}), nil, true},
		{"update adding it", ns(armed), ns(nil), true},
		{"update adding it among others", ns(map[string]any{scope.NamespaceLabel: scope.NamespaceLabelValue, "team": "a"}), ns(map[string]any{"team": "a"}), true},
		{"update changing its value", ns(armed), ns(map[string]any{scope.NamespaceLabel: "no"}), true},
		{"update keeping it", ns(map[string]any{scope.NamespaceLabel: scope.NamespaceLabelValue, "team": "b"}), ns(armed), false},
		{"update removing it", ns(map[string]any{"team": "a"}), ns(armed), false},
		{"update of an unarmed namespace", ns(map[string]any{"team": "b"}), ns(map[string]any{"team": "a"}), false},
	} {
		out, _, err := prg.Eval(map[string]any{"object": tc.object, "oldObject": tc.old})
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got, ok := out.Value().(bool); !ok || got != tc.want {
			t.Errorf("%s: match condition gives %v, want %v", tc.name, out, tc.want)
		}
	}
}

func convert(t *testing.T, u *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, into, true); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
}
