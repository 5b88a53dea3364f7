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

func TestManifests(t *testing.T) {
	objs := render(t, fixtures.Values{Image: "example.com/fake-dra-driver:dev", PullPolicy: "Never", Namespace: "faultline-system"})
	var (
		ds    *appsv1.DaemonSet
		class *resourceapi.DeviceClass
		role  *rbacv1.ClusterRole
		sa    *corev1.ServiceAccount
		bind  *rbacv1.ClusterRoleBinding
	)
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.DaemonSet:
			ds = o
		case *resourceapi.DeviceClass:
			class = o
		case *rbacv1.ClusterRole:
			role = o
		case *corev1.ServiceAccount:
			sa = o
		case *rbacv1.ClusterRoleBinding:
			bind = o
		}
	}
	if ds == nil || class == nil || role == nil || sa == nil || bind == nil {
		t.Fatalf("missing objects in %d rendered", len(objs))
	}

	if class.Name != "faultline.k8s.io" || len(class.Spec.Selectors) != 1 ||
		class.Spec.Selectors[0].CEL.Expression != `device.driver == "`+driver.DefaultDriverName+`"` {
		t.Errorf("DeviceClass %+v", class)
	}

	pod := ds.Spec.Template.Spec
	c := pod.Containers[0]
	if ds.Namespace != "faultline-system" || pod.ServiceAccountName != sa.Name || sa.Namespace != ds.Namespace ||
		bind.Subjects[0].Name != sa.Name || bind.Subjects[0].Namespace != sa.Namespace || bind.RoleRef.Name != role.Name {
		t.Error("ServiceAccount, binding and DaemonSet do not line up")
	}
	if c.Image != "example.com/fake-dra-driver:dev" || c.ImagePullPolicy != corev1.PullNever ||
		!slices.Equal(c.Command, []string{"/usr/local/bin/fake-dra-driver"}) {
		t.Errorf("container %s %s %v", c.Image, c.ImagePullPolicy, c.Command)
	}
	if !slices.Contains(c.Args, "--driver-name="+driver.DefaultDriverName) || !slices.Contains(c.Args, "--http-address=:8080") {
		t.Errorf("args %v", c.Args)
	}
	if len(c.Env) != 1 || c.Env[0].Name != "NODE_NAME" || c.Env[0].ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
		t.Errorf("env %+v", c.Env)
	}
	if p := c.ReadinessProbe.HTTPGet; p == nil || p.Path != "/healthz" || p.Port.StrVal != "http" || c.Ports[0].ContainerPort != 8080 {
		t.Errorf("readiness probe %+v ports %+v", c.ReadinessProbe, c.Ports)
	}
	if c.SecurityContext.Privileged == nil || *c.SecurityContext.Privileged {
		t.Error("must not be privileged")
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	for _, v := range pod.Volumes {
		if v.HostPath == nil || mounts[v.Name] != v.HostPath.Path {
			t.Errorf("volume %s must be a hostPath mounted at the same path (kubelet and driver must agree on socket paths)", v.Name)
		}
	}
	if len(pod.Volumes) != 2 || mounts["plugins"] != "/var/lib/kubelet/plugins" || mounts["plugins-registry"] != "/var/lib/kubelet/plugins_registry" {
		t.Errorf("mounts %v", mounts)
	}

	var driverRule bool
	for _, r := range role.Rules {
		if slices.Contains(r.Resources, "resourceclaims/driver") {
			driverRule = slices.Equal(r.ResourceNames, []string{driver.DefaultDriverName})
		}
		if slices.Contains(r.Verbs, "*") || slices.Contains(r.Resources, "*") {
			t.Errorf("wildcard rule %+v", r)
		}
	}
	if !driverRule {
		t.Error("resourceclaims/driver rule must name our driver")
	}
}

func TestDeviceClassName(t *testing.T) {
	for _, o := range render(t, fixtures.Values{Image: "i", PullPolicy: "IfNotPresent", Namespace: "n", DeviceClass: "custom.example.com"}) {
		if dc, ok := o.(*resourceapi.DeviceClass); ok && dc.Name != "custom.example.com" {
			t.Errorf("DeviceClass name %q", dc.Name)
		}
	}
}
