// Package nri_test checks that the manifests in fixtures/nri keep the doors
// of issue 10 closed (nothing served on the pod IP, faults only in
// faultline's namespaces, the least RBAC) and agree with the plugin's code
// (ports, annotation prefix, namespace label), so neither drifts unnoticed.
package nri_test

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/faultline-k8s/faultline/drivers/fake/nri/client"
	"github.com/faultline-k8s/faultline/drivers/fake/nri/faults"
	"github.com/faultline-k8s/faultline/drivers/fake/scope"
	"github.com/faultline-k8s/faultline/fixtures"
	"github.com/faultline-k8s/faultline/preflight/access"
)

const namespace = "faultline-nri-test"

// objects is the rendered set, typed (a field the API does not know fails).
type objects struct {
	all       []runtime.Object
	ds        *appsv1.DaemonSet
	sa        *corev1.ServiceAccount
	role      *rbacv1.ClusterRole
	binding   *rbacv1.ClusterRoleBinding
	netpol    *networkingv1.NetworkPolicy
	vap       *admissionv1.ValidatingAdmissionPolicy
	vapBinder *admissionv1.ValidatingAdmissionPolicyBinding
}

func render(t *testing.T) objects {
	t.Helper()
	rendered, err := fixtures.Render("nri", fixtures.Values{Namespace: namespace, Image: "example.com/fakes:dev", PullPolicy: "Never"})
	if err != nil {
		t.Fatal(err)
	}
	var o objects
	for _, u := range rendered {
		typed, err := scheme.Scheme.New(u.GroupVersionKind())
		if err != nil {
			t.Fatalf("%s: %v", u.GroupVersionKind(), err)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, typed, true); err != nil {
			t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
		o.all = append(o.all, typed)
		switch x := typed.(type) {
		case *appsv1.DaemonSet:
			o.ds = x
		case *corev1.ServiceAccount:
			o.sa = x
		case *rbacv1.ClusterRole:
			o.role = x
		case *rbacv1.ClusterRoleBinding:
			o.binding = x
		case *networkingv1.NetworkPolicy:
			o.netpol = x
		// The namespace-label policy every set renders is
		// fixtures/_shared's, tested in preflight/access.
		case *admissionv1.ValidatingAdmissionPolicy:
			if !strings.HasPrefix(x.Name, access.FaultsLabelPolicyPrefix) {
				o.vap = x
			}
		case *admissionv1.ValidatingAdmissionPolicyBinding:
			if !strings.HasPrefix(x.Name, access.FaultsLabelPolicyPrefix) {
				o.vapBinder = x
			}
		}
	}
	if o.ds == nil || o.sa == nil || o.role == nil || o.binding == nil || o.netpol == nil || o.vap == nil || o.vapBinder == nil {
		t.Fatalf("want a DaemonSet, ServiceAccount, ClusterRole, ClusterRoleBinding, NetworkPolicy, ValidatingAdmissionPolicy and its binding; got %+v", o)
	}
	return o
}

// A cleanup command finds faultline's objects by the part-of label; cluster-scoped
// names say whose they are.
func TestEveryObjectIsFaultlines(t *testing.T) {
	for _, obj := range render(t).all {
		m, err := meta.Accessor(obj)
		if err != nil {
			t.Fatal(err)
		}
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		if m.GetLabels()["app.kubernetes.io/part-of"] != "faultline" {
			t.Errorf("%s %s lacks app.kubernetes.io/part-of=faultline", kind, m.GetName())
		}
		if m.GetNamespace() == "" && kind != "Namespace" && !strings.HasPrefix(m.GetName(), "faultline-") {
			t.Errorf("cluster-scoped %s %s: name must start with faultline-", kind, m.GetName())
		}
	}
}

// Nothing is served on the pod IP: no ports, no probe the kubelet dials,
// every --http-address on 127.0.0.1 and probed there by exec, at the port
// drivers/fake/nri/client forwards to.
func TestNothingListensOnThePodIP(t *testing.T) {
	o := render(t)
	pod := o.ds.Spec.Template.Spec
	if pod.HostNetwork {
		t.Error("hostNetwork would put 127.0.0.1 on the node")
	}
	want := map[string]string{client.RuntimeStateContainer: client.RuntimeStatePort}
	for _, in := range client.Instances {
		want[in.Container] = in.Port
	}
	containers := append(slices.Clone(pod.InitContainers), pod.Containers...)
	for _, c := range containers {
		if len(c.Ports) > 0 {
			t.Errorf("container %s declares ports %+v", c.Name, c.Ports)
		}
		for what, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe, "startup": c.StartupProbe} {
			if p != nil && (p.HTTPGet != nil || p.TCPSocket != nil || p.GRPC != nil) {
				t.Errorf("container %s: %s probe dials the pod IP: %+v", c.Name, what, p.ProbeHandler)
			}
		}
		var addrs []string
		for _, arg := range append(slices.Clone(c.Command), c.Args...) {
			if v, ok := strings.CutPrefix(arg, "--http-address="); ok {
				addrs = append(addrs, v)
			} else if arg == "--http-address" {
				t.Errorf("container %s: write --http-address=<addr>, so this test can read it", c.Name)
			}
		}
		port, ok := want[c.Name]
		if !ok {
			if len(addrs) > 0 {
				t.Errorf("unknown container %s serves %v", c.Name, addrs)
			}
			continue
		}
		delete(want, c.Name)
		if len(addrs) != 1 || addrs[0] != "127.0.0.1:"+port {
			t.Errorf("container %s: --http-address %v, want exactly 127.0.0.1:%s", c.Name, addrs, port)
		}
		p := c.ReadinessProbe
		if p == nil || p.Exec == nil || len(p.Exec.Command) != 2 || p.Exec.Command[0] != "/usr/local/bin/probe" {
			t.Errorf("container %s: readiness probe %+v, want exec /usr/local/bin/probe", c.Name, p)
			continue
		}
		u, err := url.Parse(p.Exec.Command[1])
		if err != nil || u.Scheme != "http" || u.Host != "127.0.0.1:"+port || u.Path != "/healthz" {
			t.Errorf("container %s: probe URL %q, want http://127.0.0.1:%s/healthz", c.Name, p.Exec.Command[1], port)
		}
	}
	for name := range want {
		t.Errorf("no container %s (drivers/fake/nri/client expects it)", name)
	}

	np := o.netpol
	if np.Namespace != namespace || len(np.Spec.PodSelector.MatchLabels)+len(np.Spec.PodSelector.MatchExpressions) != 0 ||
		!slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) || len(np.Spec.Ingress) != 0 {
		t.Errorf("NetworkPolicy must deny all ingress to every pod of %s: %+v", namespace, np.Spec)
	}
}

// Each instance of drivers/fake/nri/client is a container that registers
// under the client's name and index and declares exactly the client's
// failure policy (the specs of suites/nri failure_policy.go rely on it);
// the client lists the instances in the runtime's call order, one per
// index.
func TestInstancesAgreeWithTheClient(t *testing.T) {
	pod := render(t).ds.Spec.Template.Spec
	containers := map[string]corev1.Container{}
	for _, c := range pod.Containers {
		containers[c.Name] = c
	}
	for i, in := range client.Instances {
		if i > 0 && client.Instances[i-1].Index >= in.Index {
			t.Errorf("client.Instances: %s after %s, want strictly increasing indexes (the runtime's call order)", in, client.Instances[i-1])
		}
		c, ok := containers[in.Container]
		if !ok {
			t.Errorf("no container %s for instance %s", in.Container, in)
			continue
		}
		args := slices.Concat(c.Command, c.Args)
		for _, want := range []string{"--name=" + in.Name, "--index=" + in.Index, "--state-dir=/var/lib/faultline/" + in.Name} {
			if !slices.Contains(args, want) {
				t.Errorf("container %s: args %v lack %s", c.Name, args, want)
			}
		}
		for flag, want := range map[string]bool{"--fail-request": in.FailRequest, "--keep-connected": in.KeepConnected} {
			got := slices.ContainsFunc(args, func(a string) bool { return a == flag || strings.HasPrefix(a, flag+"=") })
			if got != want || slices.Contains(args, flag+"=false") {
				t.Errorf("container %s (%s, policy %s): %s in args %v is %v, want %v", c.Name, in, in.Policy(), flag, args, got, want)
			}
		}
	}
	if got, want := len(pod.Containers), len(client.Instances)+1; got != want {
		t.Errorf("%d containers, want one per instance and runtime-state (%d)", got, want)
	}
}

// The plugin reads namespaces' labels with its own identity, which may do
// nothing else.
func TestRBAC(t *testing.T) {
	o := render(t)
	pod := o.ds.Spec.Template.Spec
	if pod.ServiceAccountName != o.sa.Name || o.sa.Namespace != namespace ||
		pod.AutomountServiceAccountToken == nil || !*pod.AutomountServiceAccountToken {
		t.Errorf("DaemonSet must run as ServiceAccount %s/%s with its token (serviceAccountName %q, automount %v)",
			o.sa.Namespace, o.sa.Name, pod.ServiceAccountName, pod.AutomountServiceAccountToken)
	}
	want := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}}}
	if len(o.role.Rules) != 1 || !slices.Equal(o.role.Rules[0].APIGroups, want[0].APIGroups) ||
		!slices.Equal(o.role.Rules[0].Resources, want[0].Resources) || !slices.Equal(o.role.Rules[0].Verbs, want[0].Verbs) ||
		len(o.role.Rules[0].ResourceNames)+len(o.role.Rules[0].NonResourceURLs) != 0 || o.role.AggregationRule != nil {
		t.Errorf("ClusterRole rules %+v, want exactly %+v", o.role.Rules, want)
	}
	b := o.binding
	if b.RoleRef.Kind != "ClusterRole" || b.RoleRef.Name != o.role.Name || len(b.Subjects) != 1 ||
		b.Subjects[0].Kind != "ServiceAccount" || b.Subjects[0].Name != o.sa.Name || b.Subjects[0].Namespace != o.sa.Namespace {
		t.Errorf("ClusterRoleBinding %+v does not bind %s to %s/%s", b, o.role.Name, o.sa.Namespace, o.sa.Name)
	}
	for _, c := range pod.Containers {
		if c.Name != client.RuntimeStateContainer && !slices.Contains(c.Args, "--allow-faults-in=api") {
			t.Errorf("container %s: args %v, want --allow-faults-in=api", c.Name, c.Args)
		}
	}
}

// The admission policy refuses fault annotations outside faultline's
// namespaces; its CEL names the plugin's prefix and the suites' label.
func TestAdmissionPolicy(t *testing.T) {
	o := render(t)
	vap, bind := o.vap, o.vapBinder
	if vap.Name != "faultline-nri-fault-annotations" || bind.Spec.PolicyName != vap.Name ||
		!slices.Equal(bind.Spec.ValidationActions, []admissionv1.ValidationAction{admissionv1.Deny}) {
		t.Errorf("policy %s, binding to %q with actions %v", vap.Name, bind.Spec.PolicyName, bind.Spec.ValidationActions)
	}
	if vap.Spec.FailurePolicy == nil || *vap.Spec.FailurePolicy != admissionv1.Fail {
		t.Error("failurePolicy must be Fail")
	}
	rules := vap.Spec.MatchConstraints.ResourceRules
	if len(rules) != 1 || !slices.Equal(rules[0].Resources, []string{"pods"}) || !slices.Equal(rules[0].APIGroups, []string{""}) ||
		!slices.Equal(rules[0].Operations, []admissionv1.OperationType{admissionv1.Create, admissionv1.Update}) {
		t.Errorf("match rules %+v, want CREATE and UPDATE of pods", rules)
	}
	if len(vap.Spec.MatchConditions) != 1 || len(vap.Spec.Validations) != 1 {
		t.Fatalf("want one match condition and one validation, got %+v", vap.Spec)
	}
	match, valid := vap.Spec.MatchConditions[0].Expression, vap.Spec.Validations[0].Expression

	// Drift guard: the strings the plugin and the suites use.
	if !strings.Contains(match, `"`+faults.Prefix+`"`) {
		t.Errorf("match condition %q does not name faults.Prefix %q", match, faults.Prefix)
	}
	for _, s := range []string{`"` + scope.NamespaceLabel + `"`, `== "` + scope.NamespaceLabelValue + `"`, "namespaceObject.metadata.labels", "has(namespaceObject.metadata.labels)"} {
		if !strings.Contains(valid, s) {
			t.Errorf("validation %q lacks %s", valid, s)
		}
	}
	if msg := vap.Spec.Validations[0].Message; !strings.Contains(msg, faults.Prefix) || !strings.Contains(msg, scope.NamespaceLabel+"="+scope.NamespaceLabelValue) {
		t.Errorf("message %q must say which annotations and which label", msg)
	}

	// Evaluate both expressions on plain maps, as the API server sees the
	// objects, to catch a CEL mistake without a cluster.
	env, err := cel.NewEnv(cel.Variable("object", cel.DynType), cel.Variable("namespaceObject", cel.DynType))
	if err != nil {
		t.Fatal(err)
	}
	eval := func(expr string, vars map[string]any) bool {
		t.Helper()
		ast, iss := env.Compile(expr)
		if iss.Err() != nil {
			t.Fatalf("%q: %v", expr, iss.Err())
		}
		prg, err := env.Program(ast)
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := prg.Eval(vars)
		if err != nil {
			t.Fatalf("%q on %v: %v", expr, vars, err)
		}
		b, ok := out.Value().(bool)
		if !ok {
			t.Fatalf("%q gives %v, not a bool", expr, out)
		}
		return b
	}
	pod := func(annotations map[string]any) map[string]any {
		m := map[string]any{"name": "p"}
		if annotations != nil {
			m["annotations"] = annotations
		}
		return map[string]any{"metadata": m}
	}
	for _, tc := range []struct {
		pod  map[string]any
		want bool
	}{
		{pod(nil), false},
		{pod(map[string]any{"example.com/x": "y"}), false},
		{pod(map[string]any{"nri.faultline.k8s.io": "no slash"}), false},
		{pod(map[string]any{faults.Key("faultline-b", "CreateContainer"): "error"}), true},
	} {
		if got := eval(match, map[string]any{"object": tc.pod}); got != tc.want {
			t.Errorf("match condition on %v = %v, want %v", tc.pod, got, tc.want)
		}
	}
	ns := func(labels map[string]any) map[string]any {
		m := map[string]any{"name": "n"}
		if labels != nil {
			m["labels"] = labels
		}
		return map[string]any{"metadata": m}
	}
	for _, tc := range []struct {
		ns   any
		want bool
	}{
		{nil, false},
		{ns(nil), false},
		{ns(map[string]any{"other": "x"}), false},
		{ns(map[string]any{scope.NamespaceLabel: "yes"}), false},
		{ns(map[string]any{scope.NamespaceLabel: scope.NamespaceLabelValue}), true},
	} {
		if got := eval(valid, map[string]any{"namespaceObject": tc.ns}); got != tc.want {
			t.Errorf("validation with namespace %v = %v, want %v", tc.ns, got, tc.want)
		}
	}
}
