package preflight

import (
	"context"
	"fmt"
	"sort"
	"strings"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/faultline-k8s/faultline/fixtures"
	"github.com/faultline-k8s/faultline/suites/suitenames"
)

// access is one thing the suites do, asked as a SelfSubjectAccessReview.
// Namespaced resources are asked with no namespace (every namespace): the
// specs' namespaces are generated, so no narrower grant is enough.
type access struct {
	Verb, Group, Resource, Subresource, Name string
}

func (a access) String() string {
	s := a.Verb + " "
	if a.Group != "" {
		s += a.Group + "/"
	}
	s += a.Resource
	if a.Subresource != "" {
		s += "/" + a.Subresource
	}
	if a.Name != "" {
		s += " " + a.Name
	}
	return s
}

// specAccess is what every suite's specs do themselves (the fixtures' objects
// are derived from fixtures/, fixtureAccess): namespaces and pods, logs,
// events, port-forwards to the fakes and the fixtures' readiness probes
// (pods/portforward), and the kubelet's /configz and /metrics through the
// node proxy.
var specAccess = []access{
	{Verb: "create", Resource: "namespaces"},
	{Verb: "delete", Resource: "namespaces"},
	{Verb: "create", Resource: "pods"},
	{Verb: "delete", Resource: "pods"},
	{Verb: "get", Resource: "pods", Subresource: "log"},
	{Verb: "create", Resource: "pods", Subresource: "portforward"},
	{Verb: "list", Resource: "events"},
	{Verb: "list", Resource: "nodes"},
	{Verb: "get", Resource: "nodes", Subresource: "proxy"},
}

// draSpecAccess is what the DRA suite's specs create beyond that.
var draSpecAccess = []access{
	{Verb: "create", Group: "resource.k8s.io", Resource: "resourceclaims"},
	{Verb: "create", Group: "resource.k8s.io", Resource: "resourceclaimtemplates"},
	{Verb: "list", Group: "resource.k8s.io", Resource: "resourceslices"},
	{Verb: "create", Group: "apps", Resource: "deployments"},
}

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
func (c *checker) allowed(ctx context.Context, a access) (bool, error) {
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
func (c *checker) review(ctx context.Context, list []access) (denied []string, err error) {
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

// permissions: the specs' own access, the DRA specs', and per fixture set
// whether its objects' APIs are served and the caller may create them.
func (c *checker) permissions(ctx context.Context) []Condition {
	as := ""
	if u := c.who(ctx); u != "" {
		as = " (as " + u + ")"
	}
	denied, err := c.review(ctx, specAccess)
	out := []Condition{accessCondition(CondPermissions, describeAccess(specAccess), denied, err, as)}
	denied, err = c.review(ctx, draSpecAccess)
	out = append(out, accessCondition(CondPermissionsDRA, describeAccess(draSpecAccess), denied, err, as))
	for _, set := range suitenames.All {
		out = append(out, c.fixtureSet(ctx, set, as))
	}
	return out
}

func describeAccess(list []access) string {
	s := make([]string, len(list))
	for i, a := range list {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}

// fixtureValues fill the templates only so that they render: preflight
// needs each object's kind and rules, not a deployable manifest.
var fixtureValues = fixtures.Values{
	Namespace: "faultline-preflight", Image: "preflight.invalid/fakes:none", PullPolicy: "IfNotPresent",
	Extra: map[string]string{"CRISocketDir": "/run/containerd", "CRISocket": "containerd.sock", "RuntimeProcess": "containerd"},
}

// fixtureSet checks one set of fixtures/ as the suites would apply it: each
// object's API served, create allowed, and for RBAC objects what RBAC's
// escalation check also asks (hold the granted rules, or escalate/bind).
func (c *checker) fixtureSet(ctx context.Context, set, as string) Condition {
	name := CondFixtures(set)
	objects, err := fixtures.Render(set, fixtureValues)
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
		needs := []need{c.may(access{Verb: "create", Group: gvk.Group, Resource: res})}
		switch gvk.Kind {
		case "ClusterRole":
			if role := roles[obj.GetName()]; role != nil {
				needs = append(needs, c.holdsOr(role.Rules, access{Verb: "escalate", Group: rbacv1.GroupName, Resource: "clusterroles", Name: role.Name}))
			}
		case "ClusterRoleBinding":
			ref, _, _ := unstructured.NestedString(obj.Object, "roleRef", "name")
			bind := access{Verb: "bind", Group: rbacv1.GroupName, Resource: "clusterroles", Name: ref}
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

func (c *checker) may(a access) need {
	return need{a.String(), func(ctx context.Context) (bool, error) { return c.allowed(ctx, a) }}
}

// holdsOr: whoever creates a ClusterRole, or a binding to one, must hold
// every permission it grants, or may alt (escalate, bind): RBAC's
// escalation check, which a create review alone does not ask.
func (c *checker) holdsOr(rules []rbacv1.PolicyRule, alt access) need {
	return need{alt.String() + " (or hold every permission it grants)", func(ctx context.Context) (bool, error) {
		held, err := c.holds(ctx, rules)
		if err != nil || held {
			return held, err
		}
		return c.allowed(ctx, alt)
	}}
}

func (c *checker) holds(ctx context.Context, rules []rbacv1.PolicyRule) (bool, error) {
	for _, r := range rules {
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				resource, sub, _ := strings.Cut(res, "/")
				for _, v := range r.Verbs {
					for _, name := range names {
						ok, err := c.allowed(ctx, access{Verb: v, Group: g, Resource: resource, Subresource: sub, Name: name})
						if err != nil || !ok {
							return false, err
						}
					}
				}
			}
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
