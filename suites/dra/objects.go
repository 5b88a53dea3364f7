package dra

// Building and reading the objects of a spec: claims with FaultSpecs, test
// pods that use them, events, and the kubelet's feature gates.

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/kubernetes/test/e2e/framework"
	"k8s.io/utils/ptr"

	"github.com/faultline-k8s/faultline/fakes/dra/draclient"
	"github.com/faultline-k8s/faultline/fakes/dra/faultspec"
	"github.com/faultline-k8s/faultline/suites/harness"
)

// resourceDevice is a published device and the slice it is in.
type resourceDevice struct {
	resourceapi.Device
	Slice string
}

// request is one device request of a claim: one device of driver's class,
// optionally narrowed by a CEL selector.
type request struct {
	name   string
	driver driverRef
	cel    string
}

// faults is the FaultSpec that makes the fake driver fail prepare and
// unprepare calls (built by the driver's client, typed by its faultspec).
func faults(prepare, unprepare []faultspec.Fault) faultspec.FaultSpec {
	return draclient.Faults(prepare, unprepare)
}

// config is the opaque config entry handing spec to driver d, for the given
// requests (none: all of the claim's requests).
func config(d driverRef, spec faultspec.FaultSpec, requests ...string) resourceapi.DeviceClaimConfiguration {
	c, err := d.Config(spec, requests...)
	framework.ExpectNoError(err, "FaultSpec for %s", d.Name)
	return c
}

// claimSpec builds the spec of a claim with one device per request.
func claimSpec(requests []request, configs ...resourceapi.DeviceClaimConfiguration) resourceapi.ResourceClaimSpec {
	var spec resourceapi.ResourceClaimSpec
	for _, r := range requests {
		exact := &resourceapi.ExactDeviceRequest{DeviceClassName: r.driver.DeviceClass}
		if r.cel != "" {
			exact.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: r.cel}}}
		}
		spec.Devices.Requests = append(spec.Devices.Requests, resourceapi.DeviceRequest{Name: r.name, Exactly: exact})
	}
	spec.Devices.Config = configs
	return spec
}

// createClaim creates a claim in the spec's namespace.
func createClaim(ctx context.Context, f *framework.Framework, name string, requests []request, configs ...resourceapi.DeviceClaimConfiguration) *resourceapi.ResourceClaim {
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: claimSpec(requests, configs...)}
	claim, err := f.ClientSet.ResourceV1().ResourceClaims(f.Namespace.Name).Create(ctx, claim, metav1.CreateOptions{})
	framework.ExpectNoError(err, "create ResourceClaim %s", name)
	return claim
}

// podWithClaims returns harness.TestPod using every claim in its container.
func podWithClaims(name string, claims ...*resourceapi.ResourceClaim) *v1.Pod {
	pod := withTeardown(harness.TestPod(name, "faultline dra "+name))
	for i, c := range claims {
		ref := fmt.Sprintf("claim-%d", i)
		pod.Spec.ResourceClaims = append(pod.Spec.ResourceClaims, v1.PodResourceClaim{Name: ref, ResourceClaimName: ptr.To(c.Name)})
		pod.Spec.Containers[0].Resources.Claims = append(pod.Spec.Containers[0].Resources.Claims, v1.ResourceClaim{Name: ref})
	}
	return pod
}

// withTeardown gives the pod a termination grace period of 1 s instead of
// harness.TestPod's 0. With 0, deleting the pod (also by the eviction
// controller) removes it from the API at once, before the kubelet has torn
// it down and unprepared its claims; a spec could then never see "the pod
// is gone only after its claims were unprepared". With a positive grace
// period the kubelet removes the pod only after SyncTerminatedPod, which
// unprepares first. The test workload exits on SIGTERM at once.
func withTeardown(pod *v1.Pod) *v1.Pod {
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
	return pod
}

// createPod creates pod in the spec's namespace, without waiting for it.
func createPod(ctx context.Context, f *framework.Framework, pod *v1.Pod) *v1.Pod {
	pod, err := f.ClientSet.CoreV1().Pods(f.Namespace.Name).Create(ctx, pod, metav1.CreateOptions{})
	framework.ExpectNoError(err, "create pod %s", pod.Name)
	return pod
}

// scheduled waits until the scheduler placed pod (and so allocated its
// claims) and returns it.
func scheduled(ctx context.Context, f *framework.Framework, pod *v1.Pod) *v1.Pod {
	gomega.Eventually(ctx, func(ctx context.Context) (*v1.Pod, error) {
		p, err := f.ClientSet.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err == nil {
			pod = p
		}
		return p, err
	}).WithTimeout(scheduleTimeout).Should(gomega.HaveField("Spec.NodeName", gomega.Not(gomega.BeEmpty())),
		"the scheduler must allocate the claims and place the pod")
	return pod
}

// allocated waits until the claim created as created is allocated and
// returns it with the devices of driver d it got. It watches from the
// claim's creation, so it sees the allocation also when the claim has lost
// it again by now: a kubelet with KEP-5322 fails the pod at once, and the
// claim of a failed pod is deallocated within a second, faster than a poll.
func allocated(ctx context.Context, f *framework.Framework, created *resourceapi.ResourceClaim, d driverRef) (*resourceapi.ResourceClaim, []resourceapi.DeviceRequestAllocationResult) {
	ginkgo.GinkgoHelper()
	claims := f.ClientSet.ResourceV1().ResourceClaims(f.Namespace.Name)
	byName := fields.OneTermEqualSelector("metadata.name", created.Name).String()
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.FieldSelector = byName
		return claims.Watch(ctx, o)
	}}
	wctx, cancel := context.WithTimeout(ctx, scheduleTimeout)
	defer cancel()
	ev, err := watchtools.Until(wctx, created.ResourceVersion, lw, func(ev watch.Event) (bool, error) {
		c, ok := ev.Object.(*resourceapi.ResourceClaim)
		return ok && c.Status.Allocation != nil, nil
	})
	framework.ExpectNoError(err, "claim %s must be allocated within %s", created.Name, scheduleTimeout)
	return ev.Object.(*resourceapi.ResourceClaim), devicesOf(ev.Object.(*resourceapi.ResourceClaim), d)
}

// allocatedByName waits until the claim name (one a template made) is
// allocated, polling: its creation is not the spec's to watch.
func allocatedByName(ctx context.Context, f *framework.Framework, name string, d driverRef) (*resourceapi.ResourceClaim, []resourceapi.DeviceRequestAllocationResult) {
	var claim *resourceapi.ResourceClaim
	gomega.Eventually(ctx, func(ctx context.Context) (*resourceapi.ResourceClaim, error) {
		c, err := f.ClientSet.ResourceV1().ResourceClaims(f.Namespace.Name).Get(ctx, name, metav1.GetOptions{})
		claim = c
		return c, err
	}).WithTimeout(scheduleTimeout).Should(gomega.HaveField("Status.Allocation", gomega.Not(gomega.BeNil())), "claim %s must be allocated", name)
	return claim, devicesOf(claim, d)
}

// devicesOf are the devices of driver d an allocated claim got.
func devicesOf(claim *resourceapi.ResourceClaim, d driverRef) []resourceapi.DeviceRequestAllocationResult {
	var out []resourceapi.DeviceRequestAllocationResult
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver == d.Name {
			out = append(out, r)
		}
	}
	return out
}

// deviceID is how the kubelet names a device in allocatedResourcesStatus
// and how the specs name it in messages: <driver>/<pool>/<device>.
func deviceID(r resourceapi.DeviceRequestAllocationResult) string {
	return r.Driver + "/" + r.Pool + "/" + r.Device
}

// getPod returns the current version of pod.
func getPod(ctx context.Context, cs clientset.Interface, pod *v1.Pod) (*v1.Pod, error) {
	return cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
}

// prepareEvents returns the FailedPrepareDynamicResources events of a pod,
// oldest first.
func prepareEvents(ctx context.Context, cs clientset.Interface, pod *v1.Pod) ([]v1.Event, error) {
	list, err := cs.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Pod,involvedObject.name=" + pod.Name + ",reason=FailedPrepareDynamicResources",
	})
	if err != nil {
		return nil, err
	}
	items := list.Items
	sort.SliceStable(items, func(i, j int) bool { return eventTime(items[i]).Before(eventTime(items[j])) })
	return items, nil
}

func eventTime(e v1.Event) time.Time {
	if !e.FirstTimestamp.IsZero() {
		return e.FirstTimestamp.Time
	}
	return e.EventTime.Time
}
