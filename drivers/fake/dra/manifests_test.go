// Package dra_test checks that the manifests in fixtures/dra render to valid
// objects and agree with the driver's defaults (driver name, HTTP port,
// binary path) and with faultline's fault scope (drivers/fake/scope), so
// that they cannot drift apart unnoticed, and that they keep the doors
// closed (issue 10): nothing on the pod network, only the driver's own
// host directories, no blanket tolerations, writes narrowed by policies.
package dra_test

import (
	"net"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/faultline-k8s/faultline/drivers/fake/dra/driver"
	"github.com/faultline-k8s/faultline/drivers/fake/scope"
	"github.com/faultline-k8s/faultline/fixtures"
)

// render renders the DRA fixture set the way the suites do, and converts each
// object to its typed form so that a field the API does not know fails here.
func render(t *testing.T, v fixtures.Values) []runtime.Object {
	t.Helper()
	objects, err := fixtures.Render("dra", v)
	if err != nil {
		t.Fatal(err)
	}
	var objs []runtime.Object
	for _, u := range objects {
		typed, err := scheme.Scheme.New(u.GroupVersionKind())
		if err != nil {
			t.Fatalf("%s: %v", u.GroupVersionKind(), err)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, typed, true); err != nil {
			t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
		objs = append(objs, typed)
	}
	return objs
}

// The fixture set runs two instances of the driver, for specs with two
// drivers; the second differs only in name, labels, driver name and device
// count.
const (
	// cdiDir is containerd's and CRI-O's default CDI spec directory.
	cdiDir             = "/var/run/cdi"
	secondDriverName   = "second.dra.faultline.k8s.io"
	defaultDeviceClass = "faultline.k8s.io"
	secondDeviceClass  = "second.faultline.k8s.io"
)

func TestManifests(t *testing.T) {
	objs := render(t, fixtures.Values{Image: "example.com/fake-dra-driver:dev", PullPolicy: "Never", Namespace: "faultline-system"})
	var (
		daemonSets = map[string]*appsv1.DaemonSet{}
		classes    = map[string]*resourceapi.DeviceClass{}
		role       *rbacv1.ClusterRole
		sa         *corev1.ServiceAccount
		bind       *rbacv1.ClusterRoleBinding
		netpol     *networkingv1.NetworkPolicy
		policies   = map[string]*admissionregistrationv1.ValidatingAdmissionPolicy{}
	)
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.DaemonSet:
			daemonSets[o.Name] = o
		case *resourceapi.DeviceClass:
			classes[o.Name] = o
		case *rbacv1.ClusterRole:
			role = o
		case *corev1.ServiceAccount:
			sa = o
		case *rbacv1.ClusterRoleBinding:
			bind = o
		case *networkingv1.NetworkPolicy:
			netpol = o
		case *admissionregistrationv1.ValidatingAdmissionPolicy:
			policies[o.Name] = o
		}
	}
	if len(daemonSets) != 2 || len(classes) != 2 || role == nil || sa == nil || bind == nil || netpol == nil || len(policies) != 3 {
		t.Fatalf("want 2 DaemonSets, 2 DeviceClasses, a ServiceAccount, a ClusterRole and its binding, a NetworkPolicy, 3 ValidatingAdmissionPolicies (2 of the set, the shared namespace-label one); got %d objects", len(objs))
	}
	checkLabelsAndNames(t, objs)
	checkNetworkPolicy(t, netpol)
	checkPolicies(t, policies)
	if bind.Subjects[0].Name != sa.Name || bind.Subjects[0].Namespace != sa.Namespace || bind.RoleRef.Name != role.Name || sa.Namespace != "faultline-system" {
		t.Error("ServiceAccount and binding do not line up")
	}

	for _, want := range []struct {
		daemonSet, driverName, class, devices string
		podResources                          bool
	}{
		{"fake-dra-driver", driver.DefaultDriverName, "faultline.k8s.io", "--devices=8", true},
		{"fake-dra-driver-second", secondDriverName, secondDeviceClass, "--devices=8", false},
	} {
		ds, class := daemonSets[want.daemonSet], classes[want.class]
		if ds == nil || class == nil {
			t.Errorf("no DaemonSet %s or DeviceClass %s", want.daemonSet, want.class)
			continue
		}
		if len(class.Spec.Selectors) != 1 || class.Spec.Selectors[0].CEL.Expression != `device.driver == "`+want.driverName+`"` {
			t.Errorf("DeviceClass %+v", class)
		}
		checkDaemonSet(t, ds, sa, want.driverName, want.devices, want.podResources)
	}
	if daemonSets["fake-dra-driver"].Spec.Selector.MatchLabels["app.kubernetes.io/name"] == daemonSets["fake-dra-driver-second"].Spec.Selector.MatchLabels["app.kubernetes.io/name"] {
		t.Error("the two DaemonSets must select different pods")
	}

	var driverRule, namespaceRule bool
	for _, r := range role.Rules {
		if slices.Contains(r.Resources, "resourceclaims/driver") {
			driverRule = slices.Equal(r.ResourceNames, []string{driver.DefaultDriverName, secondDriverName})
		}
		if slices.Contains(r.Resources, "namespaces") {
			// The fault scope gate: an informer and a GET, nothing else.
			namespaceRule = slices.Equal(r.Verbs, []string{"get", "list", "watch"}) && len(r.Resources) == 1
		}
		if slices.Contains(r.Verbs, "*") || slices.Contains(r.Resources, "*") {
			t.Errorf("wildcard rule %+v", r)
		}
	}
	if !driverRule {
		t.Error("resourceclaims/driver rule must name both drivers")
	}
	if !namespaceRule {
		t.Error("the ClusterRole must allow exactly get, list and watch on namespaces (scope.NewAPIGate)")
	}
}

// Every object carries app.kubernetes.io/part-of=faultline (the cleanup
// command finds leftovers by it), and cluster-scoped objects are named
// faultline-*, except the DeviceClasses, which claims name by their domain,
// and the namespace, which the suites name.
func checkLabelsAndNames(t *testing.T, objs []runtime.Object) {
	t.Helper()
	for _, o := range objs {
		m, err := meta.Accessor(o)
		if err != nil {
			t.Fatal(err)
		}
		kind := o.GetObjectKind().GroupVersionKind().Kind
		if m.GetLabels()["app.kubernetes.io/part-of"] != "faultline" {
			t.Errorf("%s %s: not labelled app.kubernetes.io/part-of=faultline", kind, m.GetName())
		}
		switch o.(type) {
		case *corev1.Namespace, *resourceapi.DeviceClass:
			continue
		}
		if m.GetNamespace() == "" && !strings.HasPrefix(m.GetName(), "faultline-") {
			t.Errorf("cluster-scoped %s %s: name must start with faultline-", kind, m.GetName())
		}
	}
}

// Defense in depth: no ingress to the set's pods at all.
func checkNetworkPolicy(t *testing.T, np *networkingv1.NetworkPolicy) {
	t.Helper()
	if np.Namespace != "faultline-system" || len(np.Spec.PodSelector.MatchLabels)+len(np.Spec.PodSelector.MatchExpressions) != 0 ||
		!slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) || len(np.Spec.Ingress) != 0 {
		t.Errorf("NetworkPolicy must deny all ingress to every pod of the namespace: %+v", np.Spec)
	}
}

// The policies name what the Go side names: the drivers, the DeviceClasses
// and the namespace label of drivers/fake/scope (policy_test.go checks how
// they behave).
func checkPolicies(t *testing.T, policies map[string]*admissionregistrationv1.ValidatingAdmissionPolicy) {
	t.Helper()
	text := func(p *admissionregistrationv1.ValidatingAdmissionPolicy) string {
		var b strings.Builder
		for _, c := range p.Spec.MatchConditions {
			b.WriteString(c.Expression + "\n")
		}
		for _, v := range p.Spec.Variables {
			b.WriteString(v.Expression + "\n")
		}
		for _, v := range p.Spec.Validations {
			b.WriteString(v.Expression + "\n" + v.MessageExpression + "\n")
		}
		return b.String()
	}
	for name, wants := range map[string][]string{
		policySlices: {`"` + driver.DefaultDriverName + `"`, `"` + secondDriverName + `"`,
			`"system:serviceaccount:faultline-system:fake-dra-driver"`, `"` + nodeNameKey + `"`},
		policyClaims: {`"` + driver.DefaultDriverName + `"`, `"` + secondDriverName + `"`,
			`"` + defaultDeviceClass + `"`, `"` + secondDeviceClass + `"`,
			`"` + scope.NamespaceLabel + `"`, `"` + scope.NamespaceLabelValue + `"`},
	} {
		p := policies[name]
		if p == nil {
			t.Errorf("no ValidatingAdmissionPolicy %s", name)
			continue
		}
		if p.Spec.FailurePolicy == nil || *p.Spec.FailurePolicy != admissionregistrationv1.Fail {
			t.Errorf("%s: failurePolicy must be Fail", name)
		}
		for _, want := range wants {
			if !strings.Contains(text(p), want) {
				t.Errorf("%s does not mention %s", name, want)
			}
		}
	}
}

// podResourcesDir holds the kubelet's PodResources socket.
const podResourcesDir = "/var/lib/kubelet/pod-resources"

func checkDaemonSet(t *testing.T, ds *appsv1.DaemonSet, sa *corev1.ServiceAccount, driverName, devices string, podResources bool) {
	t.Helper()
	pod := ds.Spec.Template.Spec
	c := pod.Containers[0]
	if ds.Namespace != "faultline-system" || pod.ServiceAccountName != sa.Name || sa.Namespace != ds.Namespace {
		t.Errorf("%s: ServiceAccount and DaemonSet do not line up", ds.Name)
	}
	if ds.Spec.Selector.MatchLabels["app.kubernetes.io/name"] != ds.Name || ds.Spec.Template.Labels["app.kubernetes.io/name"] != ds.Name {
		t.Errorf("%s: selector %v, pod labels %v", ds.Name, ds.Spec.Selector.MatchLabels, ds.Spec.Template.Labels)
	}
	if c.Image != "example.com/fake-dra-driver:dev" || c.ImagePullPolicy != corev1.PullNever ||
		!slices.Equal(c.Command, []string{"/usr/local/bin/fake-dra-driver"}) {
		t.Errorf("%s: container %s %s %v", ds.Name, c.Image, c.ImagePullPolicy, c.Command)
	}
	ownDir := "/var/lib/kubelet/plugins/" + driverName
	if !slices.Contains(c.Args, "--driver-name="+driverName) || !slices.Contains(c.Args, devices) ||
		!slices.Contains(c.Args, "--plugin-data-dir="+ownDir) || !slices.Contains(c.Args, "--registrar-dir=/var/lib/kubelet/plugins_registry") ||
		!slices.Contains(c.Args, "--cdi-dir="+cdiDir) {
		t.Errorf("%s: args %v", ds.Name, c.Args)
	}
	// Loopback only, on the port drivers/fake/dra/client uses.
	var address string
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--http-address="); ok {
			address = v
		}
	}
	if host, port, err := net.SplitHostPort(address); err != nil || !net.ParseIP(host).IsLoopback() || port != "8080" {
		t.Errorf("%s: --http-address=%q, want a loopback IP with port 8080", ds.Name, address)
	}
	if len(c.Env) != 1 || c.Env[0].Name != "NODE_NAME" || c.Env[0].ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
		t.Errorf("%s: env %+v", ds.Name, c.Env)
	}
	// Nothing on the pod network: no ports, and no probe the kubelet
	// would dial the pod IP for; readiness asks /healthz from inside.
	checkNoNetwork(t, ds.Name, pod)
	if p := c.ReadinessProbe; p == nil || p.Exec == nil ||
		!slices.Equal(p.Exec.Command, []string{"/usr/local/bin/probe", "http://" + address + "/healthz"}) {
		t.Errorf("%s: readiness probe %+v, want exec /usr/local/bin/probe on /healthz", ds.Name, c.ReadinessProbe)
	}
	for _, tol := range pod.Tolerations {
		if tol.Key == "" {
			t.Errorf("%s: toleration %+v tolerates every taint", ds.Name, tol)
		}
	}
	if want := []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}; !slices.Equal(pod.Tolerations, want) {
		t.Errorf("%s: tolerations %+v, want only the control-plane one", ds.Name, pod.Tolerations)
	}
	if pod.HostNetwork || pod.HostPID || pod.HostIPC {
		t.Errorf("%s: must not share host namespaces", ds.Name)
	}
	if c.SecurityContext.Privileged == nil || *c.SecurityContext.Privileged {
		t.Errorf("%s: must not be privileged", ds.Name)
	}
	// Only the first driver reads the kubelet's PodResources socket, and
	// only through a read-only mount.
	socketArg := "--pod-resources-socket=" + podResourcesDir + "/kubelet.sock"
	if slices.Contains(c.Args, socketArg) != podResources {
		t.Errorf("%s: %s given: %v, want %v", ds.Name, socketArg, !podResources, podResources)
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
		if m.MountPath == podResourcesDir && !m.ReadOnly {
			t.Errorf("%s: %s must be mounted read-only", ds.Name, podResourcesDir)
		}
	}
	for _, v := range pod.Volumes {
		if v.HostPath == nil || mounts[v.Name] != v.HostPath.Path {
			t.Errorf("%s: volume %s must be a hostPath mounted at the same path (kubelet and driver must agree on socket paths)", ds.Name, v.Name)
		}
	}
	// Only the driver's own plugin directory, the registration directory,
	// the runtime's CDI spec directory (see the DaemonSet for why the
	// last two are whole) and, for the first driver, the kubelet's
	// PodResources directory.
	var hostPaths []string
	for _, v := range pod.Volumes {
		if v.HostPath != nil {
			hostPaths = append(hostPaths, v.HostPath.Path)
			if (v.HostPath.Path == ownDir || v.HostPath.Path == cdiDir) && (v.HostPath.Type == nil || *v.HostPath.Type != corev1.HostPathDirectoryOrCreate) {
				t.Errorf("%s: %s must be DirectoryOrCreate", ds.Name, v.HostPath.Path)
			}
			if v.HostPath.Path == podResourcesDir && (v.HostPath.Type == nil || *v.HostPath.Type != corev1.HostPathDirectory) {
				t.Errorf("%s: %s must be Directory (the kubelet's)", ds.Name, v.HostPath.Path)
			}
		}
	}
	slices.Sort(hostPaths)
	want := []string{ownDir, "/var/lib/kubelet/plugins_registry", cdiDir}
	if podResources {
		want = append(want, podResourcesDir)
	}
	slices.Sort(want)
	if !slices.Equal(hostPaths, want) || len(mounts) != len(want) {
		t.Errorf("%s: host paths %v (mounts %v), want exactly %v", ds.Name, hostPaths, mounts, want)
	}
}

func checkNoNetwork(t *testing.T, name string, pod corev1.PodSpec) {
	t.Helper()
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		if len(c.Ports) > 0 {
			t.Errorf("%s: container %s declares ports %+v", name, c.Name, c.Ports)
		}
		for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe, c.StartupProbe} {
			if p != nil && (p.HTTPGet != nil || p.TCPSocket != nil || p.GRPC != nil) {
				t.Errorf("%s: container %s has a network probe %+v", name, c.Name, p.ProbeHandler)
			}
		}
	}
}

func TestDeviceClassName(t *testing.T) {
	var names []string
	for _, o := range render(t, fixtures.Values{Image: "i", PullPolicy: "IfNotPresent", Namespace: "n", DeviceClass: "custom.example.com"}) {
		if dc, ok := o.(*resourceapi.DeviceClass); ok {
			names = append(names, dc.Name)
		}
	}
	if !slices.Contains(names, "custom.example.com") || !slices.Contains(names, secondDeviceClass) {
		t.Errorf("DeviceClass names %q", names)
	}
}
