// Package access is what faultline's suites do on the API server, in one
// place: preflight asks it of a cluster (SelfSubjectAccessReviews) and the
// conformance Job's ClusterRole grants exactly it (JobRules). Both come from
// the same lists (Specs, DRASpecs) and from the objects the fixture sets
// render (Fixture), so a fixture or a spec that needs something new changes
// the reviews and the role together; the tests fail when the role lacks
// what a fixture or a spec needs.
package access

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/faultline-k8s/faultline/fixtures"
	"github.com/faultline-k8s/faultline/suites/suitenames"
)

// Access is one thing the suites do, as RBAC names it. Namespaced resources
// are meant in every namespace: the specs' namespaces are generated, so no
// narrower grant is enough. Name narrows it to objects of that name (a
// get, delete or patch of a known object; a list or watch whose field
// selector names one object); "" is any.
type Access struct {
	Verb, Group, Resource, Subresource, Name string
}

func (a Access) String() string {
	s := a.Verb + " "
	if a.Group != "" {
		s += a.Group + "/"
	}
	s += a.resource()
	if a.Name != "" {
		s += " " + a.Name
	}
	return s
}

// resource is the resource as RBAC rules spell it: "pods/log".
func (a Access) resource() string {
	if a.Subresource != "" {
		return a.Resource + "/" + a.Subresource
	}
	return a.Resource
}

// Arming a namespace for faults. The label drivers/fake/scope.NamespaceLabel
// opens a namespace to faultline's fakes; each fixture set's policy
// (FaultsLabelPolicy) lets only requesters the authorizer allows Arm add it
// or change its value. faults.faultline.k8s.io is a virtual resource (no
// object exists): cluster-admin holds it through its wildcards, the
// built-in admin and edit roles do not, and a cluster administrator grants
// it to whoever else may decide where faults act.
const (
	FaultsGroup    = "faultline.k8s.io"
	FaultsResource = "faults"
	ArmVerb        = "arm"
)

// Arm is the access the faults label needs.
var Arm = Access{Verb: ArmVerb, Group: FaultsGroup, Resource: FaultsResource}

// FaultsLabelPolicyPrefix begins the name of each fixture set's
// ValidatingAdmissionPolicy (and its binding) on the faults label.
const FaultsLabelPolicyPrefix = "faultline-faults-label-"

// FaultsLabelPolicy is the name of set's policy on the faults label.
func FaultsLabelPolicy(set string) string { return FaultsLabelPolicyPrefix + set }

// ScopeTenant names the ClusterRole and ClusterRoleBinding the scope spec
// of suite makes for its tenant (suites/harness/scope.go): per suite, so
// that the suites' specs may run at once.
func ScopeTenant(suite string) string { return "faultline-scope-tenant-" + suite }

// ScopeTenantUser is the user the scope spec of suite impersonates: nobody
// authenticates as it.
func ScopeTenantUser(suite string) string { return "faultline:scope-tenant:" + suite }

// Specs is what every suite's specs and the harness do themselves (the
// fixture sets' objects are Fixture's).
var Specs = []Access{
	// The e2e framework makes and deletes each spec's namespace, with the
	// faults label (Arm); the harness reads whether a fixture set's
	// namespace exists; the scope specs make tenant namespaces.
	{Verb: "create", Resource: "namespaces"},
	{Verb: "get", Resource: "namespaces"},
	{Verb: "delete", Resource: "namespaces"},
	Arm,
	// The framework waits for a new namespace's default service account
	// and root CA ConfigMap, each by a field selector on its name.
	{Verb: "list", Resource: "serviceaccounts", Name: "default"},
	{Verb: "watch", Resource: "serviceaccounts", Name: "default"},
	{Verb: "list", Resource: "configmaps", Name: "kube-root-ca.crt"},
	{Verb: "watch", Resource: "configmaps", Name: "kube-root-ca.crt"},
	// The cluster's facts (clusters/facts: kube-system/faultline-cluster).
	{Verb: "get", Resource: "configmaps", Name: "faultline-cluster"},
	// Nodes: picking them, the stack, the kubelet's /configz and /metrics
	// through the node proxy.
	{Verb: "list", Resource: "nodes"},
	{Verb: "get", Resource: "nodes"},
	{Verb: "get", Resource: "nodes", Subresource: "proxy"},
	// Test pods, their waits, logs and events; the fakes' and the relay's
	// loopback ports through port-forwards; an in-place resize (NRI).
	{Verb: "create", Resource: "pods"},
	{Verb: "get", Resource: "pods"},
	{Verb: "list", Resource: "pods"},
	{Verb: "watch", Resource: "pods"},
	{Verb: "delete", Resource: "pods"},
	{Verb: "patch", Resource: "pods", Subresource: "resize"},
	{Verb: "get", Resource: "pods", Subresource: "log"},
	{Verb: "create", Resource: "pods", Subresource: "portforward"},
	{Verb: "list", Resource: "events"},
	// Fixture sets' readiness.
	{Verb: "list", Group: "apps", Resource: "daemonsets"},
}

// DRASpecs is what the DRA suite's specs do beyond Specs.
var DRASpecs = []Access{
	{Verb: "create", Group: "resource.k8s.io", Resource: "resourceclaims"},
	{Verb: "get", Group: "resource.k8s.io", Resource: "resourceclaims"},
	{Verb: "list", Group: "resource.k8s.io", Resource: "resourceclaims"},
	{Verb: "watch", Group: "resource.k8s.io", Resource: "resourceclaims"},
	{Verb: "delete", Group: "resource.k8s.io", Resource: "resourceclaims"},
	{Verb: "create", Group: "resource.k8s.io", Resource: "resourceclaimtemplates"},
	{Verb: "list", Group: "resource.k8s.io", Resource: "resourceslices"},
	{Verb: "create", Group: "apps", Resource: "deployments"},
}

// ScopeSpecs is what the scope specs do to prove that only an
// administrator may arm a namespace (suites/harness/scope.go): make a
// tenant who may create namespaces (a ClusterRole granting that, bound to
// ScopeTenantUser), act as it, and remove both. Every name is the suite's.
func ScopeSpecs() []Access {
	out := []Access{
		{Verb: "create", Group: rbacv1.GroupName, Resource: "clusterroles"},
		{Verb: "create", Group: rbacv1.GroupName, Resource: "clusterrolebindings"},
	}
	for _, suite := range suitenames.All {
		name := ScopeTenant(suite)
		out = append(out,
			Access{Verb: "delete", Group: rbacv1.GroupName, Resource: "clusterroles", Name: name},
			Access{Verb: "delete", Group: rbacv1.GroupName, Resource: "clusterrolebindings", Name: name},
			Access{Verb: "bind", Group: rbacv1.GroupName, Resource: "clusterroles", Name: name},
			Access{Verb: "impersonate", Resource: "users", Name: ScopeTenantUser(suite)})
	}
	return append(out, ScopeTenantRules...)
}

// ScopeTenantRules are the rules of the scope spec's tenant ClusterRole:
// a tenant of a self-service cluster, who may make namespaces.
var ScopeTenantRules = []Access{{Verb: "create", Resource: "namespaces"}}

// Job names the conformance Job's namespace, service account, ClusterRole
// and ClusterRoleBinding (conformance/job.yaml.tmpl).
const Job = "faultline-conformance"

// JobSelfRemoval is what the conformance runner needs to remove its own
// ClusterRole and binding when the run ends (conformance.RemoveOwnRBAC):
// read the role, make it the binding's owner, delete it.
var JobSelfRemoval = []Access{
	{Verb: "get", Group: rbacv1.GroupName, Resource: "clusterroles", Name: Job},
	{Verb: "patch", Group: rbacv1.GroupName, Resource: "clusterrolebindings", Name: Job},
	{Verb: "delete", Group: rbacv1.GroupName, Resource: "clusterroles", Name: Job},
}

// RenderValues fill the fixture templates only so that they render: the
// names of the objects, which are all an access needs, do not depend on
// them (the namespace's name aside: namespaces are Specs' for any name).
var RenderValues = fixtures.Values{
	Namespace: "faultline-preflight", Image: "preflight.invalid/fakes:none", PullPolicy: "IfNotPresent",
	Extra: map[string]string{"CRISocketDir": "/run/containerd", "CRISocket": "containerd.sock", "RuntimeProcess": "containerd"},
}

// Needs is what applying and removing one fixture set takes.
type Needs struct {
	// Objects: create each object (by any name: a create has none when it
	// is authorized), and get (the removal waits) and delete it by name.
	Objects []Access
	// Held are the rules the set's roles grant. RBAC lets only a holder of
	// every one create such a role, or a requester allowed to escalate;
	// escalate cannot be narrowed to the roles' names on create (the
	// request names no object), and unnarrowed it allows any role, so the
	// Job's role holds these rules instead.
	Held []rbacv1.PolicyRule
	// Bind: the roles the set's bindings name, by name, so that a binding
	// may be created before its role exists.
	Bind []Access
}

// Fixture renders set (RenderValues) and says what applying and removing
// it takes.
func Fixture(set string) (Needs, error) {
	objects, err := fixtures.Render(set, RenderValues)
	if err != nil {
		return Needs{}, fmt.Errorf("render fixtures/%s: %w", set, err)
	}
	return needsOf(objects)
}

func needsOf(objects []*unstructured.Unstructured) (Needs, error) {
	var n Needs
	for _, obj := range objects {
		gvk := obj.GroupVersionKind()
		res, _ := meta.UnsafeGuessKindToResource(gvk)
		a := Access{Group: gvk.Group, Resource: res.Resource, Name: obj.GetName()}
		if gvk.Kind == "Namespace" {
			// A set's namespace is named by the suite that registers it;
			// the specs create, read and delete namespaces of any name.
			a.Name = ""
		}
		for _, verb := range []string{"get", "delete"} {
			a.Verb = verb
			n.Objects = append(n.Objects, a)
		}
		n.Objects = append(n.Objects, Access{Verb: "create", Group: gvk.Group, Resource: res.Resource})
		switch gvk.Kind {
		case "ClusterRole", "Role":
			var rules struct {
				Rules []rbacv1.PolicyRule `json:"rules"`
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &rules); err != nil {
				return Needs{}, fmt.Errorf("%s %s: %w", gvk.Kind, obj.GetName(), err)
			}
			n.Held = append(n.Held, rules.Rules...)
		case "ClusterRoleBinding", "RoleBinding":
			kind, _, _ := unstructured.NestedString(obj.Object, "roleRef", "kind")
			name, _, _ := unstructured.NestedString(obj.Object, "roleRef", "name")
			resource := "clusterroles"
			if kind == "Role" {
				resource = "roles"
			}
			n.Bind = append(n.Bind, Access{Verb: "bind", Group: rbacv1.GroupName, Resource: resource, Name: name})
		}
	}
	return n, nil
}

// Expand lists every access a rule grants: one per verb, group, resource
// and name. Wildcards stay as they are.
func Expand(rules ...rbacv1.PolicyRule) []Access {
	var out []Access
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
						out = append(out, Access{Verb: v, Group: g, Resource: resource, Subresource: sub, Name: name})
					}
				}
			}
		}
	}
	return out
}

// Run lists everything a run of every suite does on the API server:
// Specs, DRASpecs, ScopeSpecs, and per fixture set of the suites its
// objects, the rules its roles grant and the roles its bindings name.
func Run() ([]Access, error) {
	out := slices.Concat(Specs, DRASpecs, ScopeSpecs())
	for _, set := range suitenames.All {
		n, err := Fixture(set)
		if err != nil {
			return nil, err
		}
		out = slices.Concat(out, n.Objects, Expand(n.Held...), n.Bind)
	}
	return out, nil
}

// JobRules are the rules of the conformance Job's ClusterRole: Run, and
// JobSelfRemoval.
func JobRules() ([]rbacv1.PolicyRule, error) {
	run, err := Run()
	if err != nil {
		return nil, err
	}
	return Rules(append(run, JobSelfRemoval...)), nil
}

// Rules grants exactly the accesses, as few rules as that takes: per group
// and resource the verbs for any name, then the verbs only some names need
// with those names; rules that differ only in their resource are merged.
// The order is stable, so the rendered role is too.
func Rules(list []Access) []rbacv1.PolicyRule {
	type key struct{ group, resource string }
	anyName := map[key]map[string]bool{}
	named := map[key]map[string]map[string]bool{}
	add := func(m map[string]bool, v string) map[string]bool {
		if m == nil {
			m = map[string]bool{}
		}
		m[v] = true
		return m
	}
	for _, a := range list {
		k := key{a.Group, a.resource()}
		if a.Name == "" {
			anyName[k] = add(anyName[k], a.Verb)
			continue
		}
		if named[k] == nil {
			named[k] = map[string]map[string]bool{}
		}
		named[k][a.Name] = add(named[k][a.Name], a.Verb)
	}
	keys := map[key]bool{}
	for k := range anyName {
		keys[k] = true
	}
	for k := range named {
		keys[k] = true
	}
	sorted := make([]key, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].group != sorted[j].group {
			return sorted[i].group < sorted[j].group
		}
		return sorted[i].resource < sorted[j].resource
	})
	var rules []rbacv1.PolicyRule
	for _, k := range sorted {
		if verbs := anyName[k]; len(verbs) > 0 {
			rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{k.group}, Resources: []string{k.resource}, Verbs: setList(verbs)})
		}
		// Names grouped by the verbs they need beyond those for any name.
		byVerbs := map[string][]string{}
		for name, verbs := range named[k] {
			var extra []string
			for _, v := range setList(verbs) {
				if !anyName[k][v] && !anyName[k]["*"] {
					extra = append(extra, v)
				}
			}
			if len(extra) > 0 {
				byVerbs[strings.Join(extra, ",")] = append(byVerbs[strings.Join(extra, ",")], name)
			}
		}
		for _, verbs := range sortedKeys(byVerbs) {
			names := byVerbs[verbs]
			sort.Strings(names)
			rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{k.group}, Resources: []string{k.resource},
				Verbs: strings.Split(verbs, ","), ResourceNames: names})
		}
	}
	return mergeResources(rules)
}

// mergeResources joins rules of one group with the same verbs and names.
func mergeResources(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	at := map[string]int{}
	for _, r := range rules {
		k := strings.Join(r.APIGroups, ",") + "|" + strings.Join(r.Verbs, ",") + "|" + strings.Join(r.ResourceNames, ",")
		if i, ok := at[k]; ok {
			out[i].Resources = append(out[i].Resources, r.Resources...)
			continue
		}
		at[k] = len(out)
		out = append(out, r)
	}
	return out
}

func setList(m map[string]bool) []string {
	return sortedKeys(m)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
