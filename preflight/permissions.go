package preflight

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/faultline-k8s/faultline/fakes/lib/scope"
	"github.com/faultline-k8s/faultline/fixtures"
	"github.com/faultline-k8s/faultline/fixtures/access"
	"github.com/faultline-k8s/faultline/vocab/needs"
	"github.com/faultline-k8s/faultline/vocab/suitenames"
)

// who says as whom the reviews were asked (SelfSubjectReview); "" if the
// server does not say.
func (c *checker) who(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	r, err := c.cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || r.Status.UserInfo.Username == "" {
		return ""
	}
	return r.Status.UserInfo.Username
}

// allowed asks the API server whether the caller may do a.
func (c *checker) allowed(ctx context.Context, a access.Access) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	r, err := c.cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authzv1.SelfSubjectAccessReview{
		Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authzv1.ResourceAttributes{
			Verb: a.Verb, Group: a.Group, Resource: a.Resource, Subresource: a.Subresource, Name: a.Name,
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("SelfSubjectAccessReview %s: %w", a, err)
	}
	return r.Status.Allowed, nil
}

// review asks every access and returns the denied ones; err is the first
// review that could not be asked.
func (c *checker) review(ctx context.Context, list []access.Access) (denied []string, err error) {
	for _, a := range list {
		ok, rerr := c.allowed(ctx, a)
		if rerr != nil {
			if err == nil {
				err = rerr
			}
			continue
		}
		if !ok {
			denied = append(denied, a.String())
		}
	}
	return denied, err
}

func accessCondition(name, what string, denied []string, err error, as string) Condition {
	switch {
	case len(denied) > 0:
		return Condition{name, Missing, "denied" + as + ": " + strings.Join(denied, ", ")}
	case err != nil:
		return Condition{name, Unknown, err.Error()}
	}
	return Condition{name, OK, "allowed" + as + ": " + what}
}

// permissions: the specs' own access (access.Specs, and the scope specs'),
// the DRA specs', and per fixture set whether its objects' APIs are served
// and the caller may create them. The conformance Job's ClusterRole grants
// the same lists (access.JobRules).
func (c *checker) permissions(ctx context.Context) []Condition {
	as := ""
	if u := c.who(ctx); u != "" {
		as = " (as " + u + ")"
	}
	specs := append(append([]access.Access(nil), access.Specs...), access.ScopeSpecs()...)
	denied, err := c.review(ctx, specs)
	out := []Condition{accessCondition(CondPermissions, describeAccess(specs), denied, err, as)}
	denied, err = c.review(ctx, access.DRASpecs)
	out = append(out, accessCondition(needs.PermissionsDRA, describeAccess(access.DRASpecs), denied, err, as))
	for _, set := range suitenames.All {
		out = append(out, c.fixtureSet(ctx, set, as))
	}
	return append(out, c.faultsLabel(ctx))
}

// CondFaultsLabel says who may open a namespace to faults on this cluster:
// the label fakes/lib/scope.NamespaceLabel, which the fixture sets'
// admission policies (access.FaultsLabelPolicy) let only requesters allowed
// access.Arm set. It informs the reader; no requirement needs it.
const CondFaultsLabel = "faults-label"

const admissionGroupVersion = "admissionregistration.k8s.io/v1"

// faultsLabel: whether the API server can enforce the fixture sets'
// policies on the faults label, whether one is in effect now (they come and
// go with the sets), and which namespaces carry the label without having
// been made by faultline's specs: a policy cannot take a label back, so
// faults would act in those while faultline's fakes run.
func (c *checker) faultsLabel(ctx context.Context) Condition {
	var policies []string
	for _, set := range suitenames.All {
		objects, err := fixtures.Render(set, access.RenderValues)
		if err != nil {
			return Condition{CondFaultsLabel, Unknown, fmt.Sprintf("render fixtures/%s: %v", set, err)}
		}
		for _, o := range objects {
			if o.GetKind() == "ValidatingAdmissionPolicy" && o.GetName() == access.FaultsLabelPolicy(set) {
				policies = append(policies, o.GetName())
			}
		}
	}
	who := fmt.Sprintf("only requesters allowed %s may set the label %s", access.Arm, scope.NamespaceLabel)
	list, err := c.cs.Discovery().ServerResourcesForGroupVersion(admissionGroupVersion)
	served := false
	if err == nil {
		for _, r := range list.APIResources {
			served = served || r.Name == "validatingadmissionpolicies"
		}
	}
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		return Condition{CondFaultsLabel, Unknown, fmt.Sprintf("discovery of %s: %v", admissionGroupVersion, err)}
	case !served:
		return Condition{CondFaultsLabel, Missing, fmt.Sprintf("%s does not serve ValidatingAdmissionPolicies: faultline's policies (%s), by which %s, cannot apply; anyone who may create or label a namespace can open it to faults",
			admissionGroupVersion, strings.Join(policies, ", "), who)}
	}

	rctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	var inEffect []string
	for _, name := range policies {
		_, perr := c.cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(rctx, name, metav1.GetOptions{})
		_, berr := c.cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(rctx, name, metav1.GetOptions{})
		switch {
		case perr == nil && berr == nil:
			inEffect = append(inEffect, name)
		case perr != nil && !apierrors.IsNotFound(perr):
			return Condition{CondFaultsLabel, Unknown, fmt.Sprintf("read ValidatingAdmissionPolicy %s: %v", name, perr)}
		case berr != nil && !apierrors.IsNotFound(berr):
			return Condition{CondFaultsLabel, Unknown, fmt.Sprintf("read ValidatingAdmissionPolicyBinding %s: %v", name, berr)}
		}
	}
	effect := "in effect now: " + strings.Join(inEffect, ", ")
	if len(inEffect) == 0 {
		effect = "none in effect now (each comes and goes with its fixture set: until then whoever may create or label a namespace can set it)"
	}
	reason := fmt.Sprintf("the fixture sets' policies (%s) make sure %s; %s", strings.Join(policies, ", "), who, effect)

	nss, err := c.cs.CoreV1().Namespaces().List(rctx, metav1.ListOptions{LabelSelector: scope.NamespaceLabel})
	if err != nil {
		return Condition{CondFaultsLabel, Unknown, reason + "; the namespaces that carry the label cannot be listed: " + err.Error()}
	}
	var foreign []string
	for _, ns := range nss.Items {
		if ns.Annotations[fixtures.AppliedByAnnotation] != fixtures.SpecNamespaces {
			foreign = append(foreign, ns.Name)
		}
	}
	if len(foreign) > 0 {
		sort.Strings(foreign)
		return Condition{CondFaultsLabel, Missing, fmt.Sprintf("%s; but these namespaces carry %s and were not made by faultline's specs, so faults act in them while faultline's fakes run (remove the label): %s",
			reason, scope.NamespaceLabel, strings.Join(foreign, ", "))}
	}
	if len(nss.Items) == 0 {
		return Condition{CondFaultsLabel, OK, reason + "; no namespace carries the label"}
	}
	return Condition{CondFaultsLabel, OK, reason + fmt.Sprintf("; the %d namespace(s) that carry the label were made by faultline's specs", len(nss.Items))}
}

// describeAccess sums up granted accesses: how many, on what.
func describeAccess(list []access.Access) string {
	var on []string
	for _, a := range list {
		r := a.Resource
		if a.Group != "" {
			r = a.Group + "/" + r
		}
		if !slices.Contains(on, r) {
			on = append(on, r)
		}
	}
	return fmt.Sprintf("%d accesses (fixtures/access) to %s", len(list), strings.Join(on, ", "))
}

// fixtureSet checks one set of fixtures/ as the suites would apply it: each
// object's API served, create allowed, and for RBAC objects what RBAC's
// escalation check also asks (hold the granted rules, or escalate/bind).
func (c *checker) fixtureSet(ctx context.Context, set, as string) Condition {
	name := needs.Fixtures(set)
	objects, err := fixtures.Render(set, access.RenderValues)
	if err != nil {
		return Condition{name, Unknown, fmt.Sprintf("render fixtures/%s: %v", set, err)}
	}
	var notServed, denied, errs []string
	seen := map[string]bool{}
	roles := map[string]*rbacv1.ClusterRole{}
	for _, obj := range objects {
		if obj.GetKind() == "ClusterRole" {
			var role rbacv1.ClusterRole
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &role); err == nil {
				roles[role.Name] = &role
			}
		}
	}
	for _, obj := range objects {
		gvk := obj.GroupVersionKind()
		res, served, err := c.resourceFor(obj)
		switch {
		case err != nil:
			errs = append(errs, err.Error())
			continue
		case !served:
			if !seen["served "+gvk.String()] {
				notServed = append(notServed, gvk.Kind+" "+obj.GetAPIVersion())
				seen["served "+gvk.String()] = true
			}
			continue
		}
		needs := []need{c.may(access.Access{Verb: "create", Group: gvk.Group, Resource: res})}
		switch gvk.Kind {
		case "ClusterRole":
			if role := roles[obj.GetName()]; role != nil {
				needs = append(needs, c.holdsOr(role.Rules, access.Access{Verb: "escalate", Group: rbacv1.GroupName, Resource: "clusterroles", Name: role.Name}))
			}
		case "ClusterRoleBinding":
			ref, _, _ := unstructured.NestedString(obj.Object, "roleRef", "name")
			bind := access.Access{Verb: "bind", Group: rbacv1.GroupName, Resource: "clusterroles", Name: ref}
			if role := roles[ref]; role != nil {
				needs = append(needs, c.holdsOr(role.Rules, bind))
			} else {
				needs = append(needs, c.may(bind))
			}
		}
		for _, n := range needs {
			if seen[n.label] {
				continue
			}
			seen[n.label] = true
			ok, err := n.check(ctx)
			switch {
			case err != nil:
				errs = append(errs, err.Error())
			case !ok:
				denied = append(denied, n.label)
			}
		}
	}
	sort.Strings(denied)
	switch {
	case len(notServed) > 0 || len(denied) > 0:
		var parts []string
		if len(notServed) > 0 {
			parts = append(parts, "not served: "+strings.Join(notServed, ", "))
		}
		if len(denied) > 0 {
			parts = append(parts, "denied"+as+": "+strings.Join(denied, ", "))
		}
		return Condition{name, Missing, fmt.Sprintf("fixtures/%s cannot be applied: %s", set, strings.Join(parts, "; "))}
	case len(errs) > 0:
		return Condition{name, Unknown, fmt.Sprintf("fixtures/%s: %s", set, errs[0])}
	}
	return Condition{name, OK, fmt.Sprintf("fixtures/%s: %d objects, every API served and create allowed%s", set, len(objects), as)}
}

// need is one permission check with the label a denial is reported by.
type need struct {
	label string
	check func(ctx context.Context) (bool, error)
}

func (c *checker) may(a access.Access) need {
	return need{a.String(), func(ctx context.Context) (bool, error) { return c.allowed(ctx, a) }}
}

// holdsOr: whoever creates a ClusterRole, or a binding to one, must hold
// every permission it grants, or may alt (escalate, bind): RBAC's
// escalation check, which a create review alone does not ask.
func (c *checker) holdsOr(rules []rbacv1.PolicyRule, alt access.Access) need {
	return need{alt.String() + " (or hold every permission it grants)", func(ctx context.Context) (bool, error) {
		held, err := c.holds(ctx, rules)
		if err != nil || held {
			return held, err
		}
		return c.allowed(ctx, alt)
	}}
}

func (c *checker) holds(ctx context.Context, rules []rbacv1.PolicyRule) (bool, error) {
	for _, a := range access.Expand(rules...) {
		ok, err := c.allowed(ctx, a)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// resourceFor finds obj's resource by discovery; served is false when the
// API server does not serve its group version or kind.
func (c *checker) resourceFor(obj *unstructured.Unstructured) (resource string, served bool, err error) {
	list, err := c.cs.Discovery().ServerResourcesForGroupVersion(obj.GetAPIVersion())
	if apierrors.IsNotFound(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("discovery of %s: %w", obj.GetAPIVersion(), err)
	}
	for _, r := range list.APIResources {
		if r.Kind == obj.GetKind() && !strings.Contains(r.Name, "/") {
			return r.Name, true, nil
		}
	}
	return "", false, nil
}
