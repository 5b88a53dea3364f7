// Package dra_test checks that the manifests in fixtures/dra render to valid
// objects and agree with the driver's defaults (driver name, HTTP port,
// binary path), so that the two cannot drift apart unnoticed.
package dra_test

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/faultline-k8s/faultline/drivers/fake/dra/driver"
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
	secondDriverName  = "second.dra.faultline.k8s.io"
	secondDeviceClass = "second.faultline.k8s.io"
)

func TestManifests(t *testing.T) {
	objs := render(t, fixtures.Values{Image: "example.com/fake-dra-driver:dev", PullPolicy: "Never", Namespace: "faultline-system"})
	var (
		daemonSets = map[string]*appsv1.DaemonSet{}
		classes    = map[string]*resourceapi.DeviceClass{}
		role       *rbacv1.ClusterRole
		sa         *corev1.ServiceAccount
		bind       *rbacv1.ClusterRoleBinding
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
		}
	}
	if len(daemonSets) != 2 || len(classes) != 2 || role == nil || sa == nil || bind == nil {
		t.Fatalf("want 2 DaemonSets, 2 DeviceClasses, a ServiceAccount, a ClusterRole and its binding; got %d objects", len(objs))
	}
	if bind.Subjects[0].Name != sa.Name || bind.Subjects[0].Namespace != sa.Namespace || bind.RoleRef.Name != role.Name || sa.Namespace != "faultline-system" {
		t.Error("ServiceAccount and binding do not line up")
	}

	for _, want := range []struct {
		daemonSet, driverName, class, devices string
	}{
		{"fake-dra-driver", driver.DefaultDriverName, "faultline.k8s.io", "--devices=8"},
		{"fake-dra-driver-second", secondDriverName, secondDeviceClass, "--devices=4"},
	} {
		ds, class := daemonSets[want.daemonSet], classes[want.class]
		if ds == nil || class == nil {
			t.Errorf("no DaemonSet %s or DeviceClass %s", want.daemonSet, want.class)
			continue
		}
		if len(class.Spec.Selectors) != 1 || class.Spec.Selectors[0].CEL.Expression != `device.driver == "`+want.driverName+`"` {
			t.Errorf("DeviceClass %+v", class)
		}
		checkDaemonSet(t, ds, sa, want.driverName, want.devices)
	}
	if daemonSets["fake-dra-driver"].Spec.Selector.MatchLabels["app.kubernetes.io/name"] == daemonSets["fake-dra-driver-second"].Spec.Selector.MatchLabels["app.kubernetes.io/name"] {
		t.Error("the two DaemonSets must select different pods")
	}

	var driverRule bool
	for _, r := range role.Rules {
		if slices.Contains(r.Resources, "resourceclaims/driver") {
			driverRule = slices.Equal(r.ResourceNames, []string{driver.DefaultDriverName, secondDriverName})
		}
		if slices.Contains(r.Verbs, "*") || slices.Contains(r.Resources, "*") {
			t.Errorf("wildcard rule %+v", r)
		}
	}
	if !driverRule {
		t.Error("resourceclaims/driver rule must name both drivers")
	}
}

func checkDaemonSet(t *testing.T, ds *appsv1.DaemonSet, sa *corev1.ServiceAccount, driverName, devices string) {
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
	if !slices.Contains(c.Args, "--driver-name="+driverName) || !slices.Contains(c.Args, "--http-address=:8080") || !slices.Contains(c.Args, devices) {
		t.Errorf("%s: args %v", ds.Name, c.Args)
	}
	if len(c.Env) != 1 || c.Env[0].Name != "NODE_NAME" || c.Env[0].ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
		t.Errorf("%s: env %+v", ds.Name, c.Env)
	}
	if p := c.ReadinessProbe.HTTPGet; p == nil || p.Path != "/healthz" || p.Port.StrVal != "http" || c.Ports[0].ContainerPort != 8080 {
		t.Errorf("%s: readiness probe %+v ports %+v", ds.Name, c.ReadinessProbe, c.Ports)
	}
	if c.SecurityContext.Privileged == nil || *c.SecurityContext.Privileged {
		t.Errorf("%s: must not be privileged", ds.Name)
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	for _, v := range pod.Volumes {
		if v.HostPath == nil || mounts[v.Name] != v.HostPath.Path {
			t.Errorf("%s: volume %s must be a hostPath mounted at the same path (kubelet and driver must agree on socket paths)", ds.Name, v.Name)
		}
	}
	if len(pod.Volumes) != 2 || mounts["plugins"] != "/var/lib/kubelet/plugins" || mounts["plugins-registry"] != "/var/lib/kubelet/plugins_registry" {
		t.Errorf("%s: mounts %v", ds.Name, mounts)
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
