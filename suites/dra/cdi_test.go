package dra

import (
	"slices"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/faultline-k8s/faultline/fakes/dra/driver"
	"github.com/faultline-k8s/faultline/fakes/dra/podresources"
)

// checkPodResources on the two shapes the kubelet gives: v1.37 lists each
// claim's device once; v1.36.3, after the retry of a partly failed prepare,
// lists the answered claim's device twice, the second entry with the CDI
// ID twice (pkg/kubelet/cm/container_manager_linux.go GetDynamicResources
// appends a driver's CDI IDs to one list across the claim's devices). The
// verdict's wording is what judge/expectations/*-1.36.yaml match.
func TestCheckPodResources(t *testing.T) {
	const drv, pool = "dra.faultline.k8s.io", "node-a"
	claim := func(name, dev string) cdiClaim {
		return cdiClaim{
			claim: &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}},
			devs:  []resourceapi.DeviceRequestAllocationResult{{Request: "dev", Driver: drv, Pool: pool, Device: dev}},
		}
	}
	answered, omitted := claim("answered", "dev-0"), claim("omitted", "dev-1")
	id := func(c cdiClaim) string { return driver.CDIDeviceID(drv, string(c.claim.UID), c.devs[0].Device) }
	res := func(c cdiClaim, ids ...string) podresources.Resource {
		return podresources.Resource{Driver: drv, Pool: pool, Device: c.devs[0].Device, CDIDevices: ids}
	}
	pod := func(claims ...podresources.Claim) *podresources.Pod {
		return &podresources.Pod{Namespace: "ns", Name: "cdi", Containers: []podresources.Container{{Name: "c", DynamicResources: claims}}}
	}
	fixed := pod(
		podresources.Claim{Namespace: "ns", Name: "answered", Resources: []podresources.Resource{res(answered, id(answered))}},
		podresources.Claim{Namespace: "ns", Name: "omitted", Resources: []podresources.Resource{res(omitted, id(omitted))}})
	if dup, problems := checkPodResources(fixed, "c", []cdiClaim{answered, omitted}); dup != nil || problems != nil {
		t.Errorf("v1.37's list: duplicated %v, problems %v", dup, problems)
	}

	buggy := pod(
		podresources.Claim{Namespace: "ns", Name: "answered", Resources: []podresources.Resource{res(answered, id(answered)), res(answered, id(answered), id(answered))}},
		podresources.Claim{Namespace: "ns", Name: "omitted", Resources: []podresources.Resource{res(omitted, id(omitted))}})
	dup, problems := checkPodResources(buggy, "c", []cdiClaim{answered, omitted})
	want := "claim answered: device " + drv + "/" + pool + "/dev-0 2 times, its CDI ID " + id(answered) + " 3 times, want once"
	if !slices.Equal(dup, []string{want}) || problems != nil {
		t.Errorf("v1.36.3's list: duplicated %q, problems %v; want %q", dup, problems, want)
	}

	for name, tc := range map[string]struct {
		pod  *podresources.Pod
		want string
	}{
		"no container": {&podresources.Pod{}, "container c is not listed"},
		"claim missing": {pod(podresources.Claim{Namespace: "ns", Name: "answered", Resources: []podresources.Resource{res(answered, id(answered))}}),
			"claim omitted is listed 0 times"},
		"no CDI ID": {pod(
			podresources.Claim{Namespace: "ns", Name: "answered", Resources: []podresources.Resource{res(answered)}},
			podresources.Claim{Namespace: "ns", Name: "omitted", Resources: []podresources.Resource{res(omitted, id(omitted))}}),
			"claim answered: device " + drv + "/" + pool + "/dev-0 listed 1 times, its CDI ID " + id(answered) + " 0 times"},
		"a stranger": {pod(
			podresources.Claim{Namespace: "ns", Name: "answered", Resources: []podresources.Resource{res(answered, id(answered))}},
			podresources.Claim{Namespace: "ns", Name: "omitted", Resources: []podresources.Resource{res(omitted, id(omitted))}},
			podresources.Claim{Namespace: "ns", Name: "other"}),
			"claim ns/other is none of the pod's"},
	} {
		dup, problems := checkPodResources(tc.pod, "c", []cdiClaim{answered, omitted})
		if dup != nil || !strings.Contains(strings.Join(problems, "; "), tc.want) {
			t.Errorf("%s: duplicated %v, problems %v; want a problem %q", name, dup, problems, tc.want)
		}
	}
}
