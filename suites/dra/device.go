package dra

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/test/e2e/framework"
	e2epod "k8s.io/kubernetes/test/e2e/framework/pod"
	admissionapi "k8s.io/pod-security-admission/api"
	"k8s.io/utils/ptr"

	"github.com/faultline-k8s/faultline/fakes/dra/calls"
	"github.com/faultline-k8s/faultline/fakes/dra/driver"
	"github.com/faultline-k8s/faultline/fakes/dra/faultspec"
	"github.com/faultline-k8s/faultline/suites/harness"
	"github.com/faultline-k8s/faultline/vocab/kubelet"
	"github.com/faultline-k8s/faultline/vocab/needs"
)

// Device health gates of the kubelet (KEP-4680), both beta and on in 1.36.
const (
	gateResourceHealth        = "ResourceHealthStatus"
	gateResourceHealthMessage = "ResourceHealthStatusMessage"
)

var _ = describe("device failure while in use", framework.WithFeature(featureDRA), func() {
	f := framework.NewDefaultFramework("dra-device")
	f.NamespacePodSecurityLevel = admissionapi.LevelRestricted
	dumpOnFailure(f)

	// A device breaking while in use is node-wide state: its NoExecute
	// taint keeps it from every claim until repaired. Serial, and repaired
	// in DeferCleanup.
	framework.It("evicts the pod of a device that fails permanently while in use (NoExecute taint); the replacement pod runs on a healthy device and the failed device is not allocated again", harness.Checks("DRA-TAINTED-DEVICE-EVICTS"), harness.Informs(needs.GateDeviceTaints),
		framework.WithSerial(), framework.WithFeature(featureDeviceTaints), framework.WithLabel("ci"), func(ctx context.Context) {
			// The eviction controller acts at once: no toleration seconds.
			harness.Floor()
			cs := f.ClientSet
			ns := f.Namespace.Name
			template := &resourceapi.ResourceClaimTemplate{
				ObjectMeta: metav1.ObjectMeta{Name: "device"},
				Spec:       resourceapi.ResourceClaimTemplateSpec{Spec: claimSpec([]request{{name: "dev", driver: firstDriver}})},
			}
			_, err := cs.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, template, metav1.CreateOptions{})
			framework.ExpectNoError(err)
			labels := map[string]string{"app.kubernetes.io/name": "faultline-worker"}
			pod := withTeardown(harness.TestPod("worker", "faultline dra worker"))
			pod.Spec.RestartPolicy = v1.RestartPolicyAlways
			pod.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "dev", ResourceClaimTemplateName: ptr.To(template.Name)}}
			pod.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "dev"}}
			deployment := &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: "worker"},
				Spec: appsv1.DeploymentSpec{
					Replicas: ptr.To[int32](1),
					Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod.Spec},
				},
			}
			_, err = cs.AppsV1().Deployments(ns).Create(ctx, deployment, metav1.CreateOptions{})
			framework.ExpectNoError(err)

			var old *v1.Pod
			harness.Cause("not-running", func() { old = runningDeploymentPod(ctx, f, labels, "", scheduleTimeout+startSlack) })
			claimName := podClaimName(old, "dev")
			claim, devs := allocatedByName(ctx, f, claimName, firstDriver)
			gomega.Expect(devs).To(gomega.HaveLen(1))
			dev, node := devs[0], old.Spec.NodeName

			// The eviction deletes pod and claim within seconds: record
			// every version of both from now on.
			w, err := cs.ResourceV1().ResourceClaims(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + claimName, ResourceVersion: claim.ResourceVersion})
			framework.ExpectNoError(err)
			claimVersions := recordVersions[*resourceapi.ResourceClaim](w)
			w, err = cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + old.Name, ResourceVersion: old.ResourceVersion})
			framework.ExpectNoError(err)
			podVersions := recordVersions[*v1.Pod](w)

			message := "faultline: uncorrectable ECC error in namespace " + ns
			ginkgo.By(fmt.Sprintf("device %s breaks while pod %s uses it", deviceID(dev), old.Name))
			failedAt := time.Now()
			state, err := draClient().On(node, firstDriver).FailDevice(ctx, dev.Device, faultspec.TaintNoExecute, message)
			ginkgo.DeferCleanup(func(ctx context.Context) error { return repairDevice(ctx, cs, firstDriver, node, dev.Device) })
			harness.Ours(err)
			gomega.Expect(state.PreparedFor).To(gomega.ContainElement(gomega.HaveField("UID", string(claim.UID))),
				"the driver knows the device is prepared for the pod's claim")

			ginkgo.By("the device is tainted NoExecute in the ResourceSlice")
			expectTaintPublished(ctx, cs, dev)

			ginkgo.By("the claim in use gets the condition Ready=False, reason DeviceFailed, with the driver's message")
			gomega.Eventually(ctx, func() []string {
				var seen []string
				for _, c := range claimVersions() {
					if cond := deviceCondition(c.Status.Devices, dev); cond != nil {
						seen = append(seen, fmt.Sprintf("%s/%s: %s", cond.Status, cond.Reason, cond.Message))
					}
				}
				return seen
			}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(gomega.ContainElement(
				gomega.And(gomega.HavePrefix("False/DeviceFailed: "), gomega.ContainSubstring(message))))

			ginkgo.By("the pod is evicted")
			harness.Cause("not-evicted", func() {
				framework.ExpectNoError(e2epod.WaitForPodNotFoundInNamespace(ctx, cs, old.Name, ns, evictionTimeout), "the eviction controller must delete pod %s", old.Name)
			})
			report("eviction", "pod %s gone %s after the device failed", old.Name, time.Since(failedAt).Round(time.Second))
			var reasons, health []string
			for _, p := range podVersions() {
				for _, c := range p.Status.Conditions {
					if c.Type == v1.DisruptionTarget && !slices.Contains(reasons, c.Reason+": "+c.Message) {
						reasons = append(reasons, c.Reason+": "+c.Message)
					}
				}
				for _, st := range p.Status.ContainerStatuses {
					for _, rs := range st.AllocatedResourcesStatus {
						for _, r := range rs.Resources {
							if h := fmt.Sprintf("%s %s=%s", rs.Name, r.ResourceID, r.Health); !slices.Contains(health, h) {
								health = append(health, h)
							}
						}
					}
				}
			}
			report("evicted pod's DisruptionTarget", "%q", reasons)
			// Informational: whether the kubelet got to publish the
			// device's health before the pod was gone is a race; the
			// health spec checks it without eviction.
			report("evicted pod's device health", "%q", health)
			harness.Cause("not-evicted", func() {
				gomega.Expect(reasons).To(gomega.ContainElement(gomega.HavePrefix("DeletionByDeviceTaintManager")),
					"the pod was evicted by the device taint eviction controller")
			})

			ginkgo.By("the evicted pod's claim was unprepared")
			rep, err := draClient().On(node, firstDriver).Calls(ctx, string(claim.UID))
			harness.Ours(err)
			harness.Cause("not-unprepared", func() {
				gomega.Expect(rep.Summary).To(gomega.Equal(calls.Summary{PrepareCalls: 1, PrepareSucceeded: 1, UnprepareCalls: 1, UnprepareSucceeded: 1}),
					"the evicted pod's claim unprepared once")
			})

			ginkgo.By("the replacement pod runs on a healthy device")
			var repl *v1.Pod
			harness.Cause("not-running", func() {
				repl = runningDeploymentPod(ctx, f, labels, old.UID, evictionTimeout+scheduleTimeout+startSlack)
			})
			_, replDevs := allocatedByName(ctx, f, podClaimName(repl, "dev"), firstDriver)
			gomega.Expect(replDevs).To(gomega.HaveLen(1))
			harness.Cause("failed-device-reallocated", func() {
				gomega.Expect(deviceID(replDevs[0])).NotTo(gomega.Equal(deviceID(dev)), "the replacement must not get the failed device")
			})
			report("replacement", "pod %s runs on %s, %s after the device failed", repl.Name, deviceID(replDevs[0]), time.Since(failedAt).Round(time.Second))

			ginkgo.By("no claim in the cluster is allocated the failed device")
			all, err := cs.ResourceV1().ResourceClaims(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
			harness.Ours(err)
			harness.Cause("failed-device-reallocated", func() {
				for _, c := range all.Items {
					if c.Status.Allocation == nil {
						continue
					}
					for _, r := range c.Status.Allocation.Devices.Results {
						gomega.Expect(deviceID(r)).NotTo(gomega.Equal(deviceID(dev)), "claim %s/%s was allocated the failed device", c.Namespace, c.Name)
					}
				}
			})
			devices, err := draClient().On(node, firstDriver).Devices(ctx)
			framework.ExpectNoError(err)
			i := slices.IndexFunc(devices, func(d driver.DeviceState) bool { return d.Device == dev.Device })
			gomega.Expect(i).To(gomega.BeNumerically(">=", 0))
			gomega.Expect(devices[i].Healthy).To(gomega.BeFalse(), "the device stays failed until repaired")
		})

	// Not Serial: the failure has effect None (nothing is evicted or kept
	// off the device), hits a device that the spec's own claim holds
	// exclusively, and is repaired in DeferCleanup before the namespace,
	// and with it the claim, is deleted.
	framework.It("reports device health in the pod status: a device that fails while in use shows as Unhealthy in allocatedResourcesStatus with its ID <driver>/<pool>/<device> and the driver's message", harness.Checks("DRA-HEALTH-IN-POD-STATUS"), harness.Informs(needs.GateHealth),
		framework.WithFeature(featureResourceHealth), func(ctx context.Context) {
			harness.Floor()
			cs := f.ClientSet
			w := watchHealth(ctx, f, "health", firstDriver, "while it works")
			dev, node, id, name, health := w.dev, w.node, w.id, w.name, w.health

			message := "faultline: uncorrectable ECC error in namespace " + f.Namespace.Name
			ginkgo.By(fmt.Sprintf("%s breaks (taint effect None: the pod keeps running)", id))
			failedAt := time.Now()
			_, err := draClient().On(node, firstDriver).FailDevice(ctx, dev.Device, faultspec.TaintNone, message)
			ginkgo.DeferCleanup(func(ctx context.Context) error { return repairDevice(ctx, cs, firstDriver, node, dev.Device) })
			harness.Ours(err)
			var got v1.ResourceHealth
			harness.Cause("not-unhealthy", func() {
				gomega.Eventually(ctx, func(ctx context.Context) (v1.ResourceHealth, error) {
					var err error
					got, err = health(ctx)
					return got, err
				}).WithTimeout(healthTimeout).WithPolling(time.Second).Should(gomega.And(
					gomega.HaveField("Health", v1.ResourceHealthStatusUnhealthy),
					gomega.HaveField("Message", gomega.HaveValue(gomega.ContainSubstring(message))),
				), "pod status must show the failed device, its ID and the driver's message")
			})
			report("health in pod status", "%s after the failure: %s resourceID=%s health=%s message=%q",
				time.Since(failedAt).Round(time.Second), name, got.ResourceID, got.Health, ptr.Deref(got.Message, ""))

			ginkgo.By(fmt.Sprintf("%s is repaired and reported Healthy again", id))
			harness.Ours(repairDevice(ctx, cs, firstDriver, node, dev.Device))
			harness.Cause("not-healthy-again", func() {
				gomega.Eventually(ctx, health).WithTimeout(healthTimeout).WithPolling(time.Second).Should(gomega.HaveField("Health", v1.ResourceHealthStatusHealthy),
					"the repaired device must be reported Healthy again")
			})
		})
})

// healthWatch is a running pod with one device whose health its status
// reports.
type healthWatch struct {
	pod  *v1.Pod
	dev  resourceapi.DeviceRequestAllocationResult
	node string
	// id is the device's ID in the status (deviceID), name its claim's
	// resource name ("claim:<pod claim>").
	id     string
	name   v1.ResourceName
	health func(ctx context.Context) (v1.ResourceHealth, error)
}

// watchHealth runs a pod with a claim of one device of d, skips the spec
// where the kubelet does not report device health in pod status, and waits
// until the status shows the device Healthy (while says when, for the log).
func watchHealth(ctx context.Context, f *framework.Framework, prefix string, d driverRef, while string) healthWatch {
	ginkgo.GinkgoHelper()
	cs := f.ClientSet
	claim := createClaim(ctx, f, prefix, []request{{name: "dev", driver: d}})
	pod := scheduled(ctx, f, createPod(ctx, f, podWithClaims(prefix, claim)))
	_, devs := allocated(ctx, f, claim, d)
	gomega.Expect(devs).To(gomega.HaveLen(1))
	w := healthWatch{pod: pod, dev: devs[0], node: pod.Spec.NodeName, id: deviceID(devs[0]),
		name: v1.ResourceName("claim:" + pod.Spec.ResourceClaims[0].Name)}
	w.health = func(ctx context.Context) (v1.ResourceHealth, error) {
		return podDeviceHealth(ctx, cs, pod, w.name, w.id)
	}

	requireHealthGates(ctx, cs, w.node, gateResourceHealth, gateResourceHealthMessage)
	waitRunning(ctx, f, pod)
	ginkgo.By(fmt.Sprintf("%s is reported Healthy %s", w.id, while))
	harness.Cause("not-reported", func() {
		gomega.Eventually(ctx, w.health).WithTimeout(healthTimeout).WithPolling(poll).Should(gomega.HaveField("Health", v1.ResourceHealthStatusHealthy),
			"the pod status must report the working device Healthy")
	})
	return w
}

// requireHealthGates ends the spec as not implemented when the kubelet on
// node does not report device health in pod status: one of gates disabled
// or unknown to it (kubernetes_feature_enabled in its /metrics), as on 1.35,
// where ResourceHealthStatus is alpha and off by default. The stack does not
// do what the requirement asks, which a skip would hide.
func requireHealthGates(ctx context.Context, cs clientset.Interface, node string, gates ...string) {
	ginkgo.GinkgoHelper()
	have, err := kubelet.ReadFeatureGates(ctx, cs, node)
	framework.ExpectNoError(err)
	var missing []string
	for _, g := range gates {
		if enabled, known := have[g]; !enabled {
			missing = append(missing, fmt.Sprintf("%s (%s)", g, map[bool]string{true: "disabled", false: "unknown to the kubelet"}[known]))
		}
	}
	if len(missing) > 0 {
		harness.NotImplemented("KEP-4680 device health in pod status", fmt.Sprintf("the kubelet on node %s does not report device health in pod status: feature gate %s (kubernetes_feature_enabled in its /metrics)",
			node, strings.Join(missing, ", ")))
	}
}

// podDeviceHealth returns the health the pod's status reports for device
// id (deviceID) of the pod's claim resource name ("claim:<pod claim>").
func podDeviceHealth(ctx context.Context, cs clientset.Interface, pod *v1.Pod, name v1.ResourceName, id string) (v1.ResourceHealth, error) {
	p, err := getPod(ctx, cs, pod)
	if err != nil {
		return v1.ResourceHealth{}, err
	}
	var seen []string
	for _, st := range p.Status.ContainerStatuses {
		for _, rs := range st.AllocatedResourcesStatus {
			for _, r := range rs.Resources {
				if rs.Name == name && string(r.ResourceID) == id {
					return r, nil
				}
				seen = append(seen, fmt.Sprintf("%s %s=%s", rs.Name, r.ResourceID, r.Health))
			}
		}
	}
	return v1.ResourceHealth{}, fmt.Errorf("no %s %s in allocatedResourcesStatus (have %v)", name, id, seen)
}

// runningDeploymentPod waits for a Running pod with labels other than
// notUID and returns it.
func runningDeploymentPod(ctx context.Context, f *framework.Framework, labels map[string]string, notUID types.UID, timeout time.Duration) *v1.Pod {
	var pod *v1.Pod
	selector := metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: labels})
	gomega.Eventually(ctx, func(ctx context.Context) error {
		list, err := f.ClientSet.CoreV1().Pods(f.Namespace.Name).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return err
		}
		var seen []string
		for i := range list.Items {
			p := &list.Items[i]
			seen = append(seen, fmt.Sprintf("%s %s", p.Name, p.Status.Phase))
			if p.UID != notUID && p.DeletionTimestamp == nil && p.Status.Phase == v1.PodRunning {
				pod = p
				return nil
			}
		}
		return fmt.Errorf("no new running pod %s: %v", selector, seen)
	}).WithTimeout(timeout).WithPolling(poll).Should(gomega.Succeed())
	return pod
}

// recordVersions records every object the watch delivers until the spec
// ends, for assertions on states that pass too quickly to poll (an evicted
// pod and its claim are gone within seconds). The returned function returns
// what was seen so far.
func recordVersions[T any](w watch.Interface) func() []T {
	var mu sync.Mutex
	var seen []T
	go func() {
		defer ginkgo.GinkgoRecover()
		for ev := range w.ResultChan() {
			if obj, ok := ev.Object.(T); ok {
				mu.Lock()
				seen = append(seen, obj)
				mu.Unlock()
			}
		}
	}()
	ginkgo.DeferCleanup(w.Stop)
	return func() []T {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// podClaimName returns the name of the claim generated for the pod's claim
// entry podClaim.
func podClaimName(pod *v1.Pod, podClaim string) string {
	for _, s := range pod.Status.ResourceClaimStatuses {
		if s.Name == podClaim && s.ResourceClaimName != nil {
			return *s.ResourceClaimName
		}
	}
	framework.Failf("pod %s has no generated claim for %s: %+v", pod.Name, podClaim, pod.Status.ResourceClaimStatuses)
	return ""
}

// taintPublishWithin bounds the driver's ResourceSlice update reaching the
// API: it publishes at once.
const taintPublishWithin = 30 * time.Second

// expectTaintPublished waits until the API server holds the driver's
// NoExecute taint on the device. An API server that keeps no taint at all
// on the device the driver tainted does not serve device taints (feature
// gate DRADeviceTaints: alpha and off by default before 1.36, which drops
// the field): the stack does not implement the requirement.
func expectTaintPublished(ctx context.Context, cs clientset.Interface, dev resourceapi.DeviceRequestAllocationResult) {
	ginkgo.GinkgoHelper()
	var taints []resourceapi.DeviceTaint
	ours := func() bool {
		for _, t := range taints {
			if t.Key == driver.TaintKey && t.Effect == resourceapi.DeviceTaintEffectNoExecute {
				return true
			}
		}
		return false
	}
	err := wait.PollUntilContextTimeout(ctx, time.Second, taintPublishWithin, true, func(ctx context.Context) (bool, error) {
		devices, err := publishedDevices(ctx, cs, firstDriver.Name, dev.Pool)
		if err != nil {
			return false, nil //nolint:nilerr // read again; the last read decides
		}
		taints = devices[dev.Device].Taints
		return ours(), nil
	})
	if err == nil {
		return
	}
	if len(taints) == 0 {
		harness.NotImplemented("KEP-5055 device taints", fmt.Sprintf("the driver tainted device %s, but the API server keeps no taint on it in the ResourceSlice (%s later): it does not serve device taints (feature gate DRADeviceTaints, alpha and off by default before 1.36)",
			deviceID(dev), taintPublishWithin))
	}
	framework.Failf("device %s: the ResourceSlice has taints %v, not the driver's NoExecute %s", deviceID(dev), taints, driver.TaintKey)
}
