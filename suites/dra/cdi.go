package dra

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/test/e2e/framework"
	e2epod "k8s.io/kubernetes/test/e2e/framework/pod"
	admissionapi "k8s.io/pod-security-admission/api"
	"k8s.io/utils/ptr"

	"github.com/faultline-k8s/faultline/fakes/dra/calls"
	"github.com/faultline-k8s/faultline/fakes/dra/driver"
	"github.com/faultline-k8s/faultline/fakes/dra/faultspec"
	"github.com/faultline-k8s/faultline/fakes/dra/podresources"
	"github.com/faultline-k8s/faultline/suites/harness"
)

// A partly failed prepare, made deterministically, and the CDI devices the
// kubelet holds afterwards (kubernetes#140274).
//
// One driver, one pod with two claims of it, "answered" and "omitted". The
// kubelet sends both in one NodePrepareResources call; an Omit fault makes
// the driver leave "omitted" out of its first response (no result at all).
// The kubelet (pkg/kubelet/cm/dra/manager.go, prepareResources) adds the
// devices of every claim in the response to its claim cache (addDevice),
// then fails the attempt with "NodePrepareResources skipped 1
// ResourceClaims" without marking any claim prepared, and at the retry
// asks for both again. v1.36.3 appends "answered"'s devices a second time;
// v1.36.4 and v1.37 reset a driver's devices of a claim before adding its
// response (resetDevices). No map order is involved: the two drivers this
// spec used before depended on which driver the kubelet called first.
//
// The verdict comes from the kubelet itself: its PodResources API (Get,
// read by the fake driver on the node, GET /podresources) lists each
// claim's devices with their CDI IDs from that cache, the list the kubelet
// hands the runtime. The container's own report (fake-dra-driver
// cdi-witness: the CDI environment variables and one startContainer hook
// run per injection) is recorded beside it: containerd (2.4.2,
// internal/cri/opts/spec_linux.go WithCDI) drops duplicate CDI IDs before
// injecting, CRI-O (1.36.3, internal/factory/container/device_linux.go)
// injects every copy, so what the container sees depends on the runtime.
var _ = describe("CDI devices after a partly failed prepare", framework.WithFeature(featureDRA), func() {
	f := framework.NewDefaultFramework("dra-cdi")
	f.NamespacePodSecurityLevel = admissionapi.LevelRestricted
	dumpOnFailure(f)

	cdi := func(spec faultspec.FaultSpec) faultspec.FaultSpec {
		spec.CDI = &faultspec.CDI{Hook: true}
		return spec
	}
	answeredSpec := cdi(faults(nil, nil))
	omittedSpec := cdi(faults([]faultspec.Fault{{Type: faultspec.Omit, Count: ptr.To(1)}}, nil))

	framework.It("lists each claim's CDI device once in the kubelet after a prepare whose first response left one of two claims out, runs the pod, and prepares the answered claim once", harness.Checks("DRA-TWO-DRIVERS-CDI-ONCE"), func(ctx context.Context) {
		harness.Floor(floorResync())
		cs := f.ClientSet
		answered := createClaim(ctx, f, "answered", []request{{name: "dev", driver: firstDriver}}, config(firstDriver, answeredSpec))
		omitted := createClaim(ctx, f, "omitted", []request{{name: "dev", driver: firstDriver}}, config(firstDriver, omittedSpec))
		pod := scheduled(ctx, f, createPod(ctx, f, cdiWitnessPod("cdi", answered, omitted)))
		answered, answeredDevs := allocated(ctx, f, answered, firstDriver)
		omitted, omittedDevs := allocated(ctx, f, omitted, firstDriver)
		node := pod.Spec.NodeName
		drv := draClient().On(node, firstDriver)
		claims := []cdiClaim{{answered, answeredDevs}, {omitted, omittedDevs}}
		for _, c := range claims {
			gomega.Expect(c.devs).To(gomega.HaveLen(1), "claim %s: one device of %s", c.claim.Name, firstDriver.Name)
		}

		// The premise: a partly failed prepare happened. Where it did not
		// (the fault did not fire, the kubelet took the partial answer), the
		// spec is inconclusive: its verdict would say nothing.
		ginkgo.By("premise: the first call answers claim answered and leaves claim omitted out; the kubelet fails that attempt")
		var omittedCalls calls.Report
		gomega.Eventually(ctx, func(ctx context.Context) error {
			var err error
			if omittedCalls, err = drv.Calls(ctx, string(omitted.UID)); err != nil {
				return err
			}
			if len(omittedCalls.Calls) == 0 {
				return fmt.Errorf("%s has not been asked to prepare claim %s yet", firstDriver.Name, omitted.Name)
			}
			return nil
		}).WithTimeout(startSlack).WithPolling(time.Second).Should(gomega.Succeed())
		first := omittedCalls.Calls[0]
		harness.Premise("the driver's first call for claim omitted left it out (its Omit fault)",
			first.Method == calls.Prepare && first.Outcome == calls.Omitted, "claim omitted's calls: "+describeCalls(omittedCalls))
		a, err := drv.Calls(ctx, string(answered.UID))
		framework.ExpectNoError(err)
		harness.Premise("claim answered was answered (Prepared) in the call that left claim omitted out",
			len(a.Calls) > 0 && a.Calls[0].Request == first.Request && a.Calls[0].Outcome == calls.Prepared,
			fmt.Sprintf("that call was the driver's request %d; claim answered's calls: %s", first.Request, describeCalls(a)))
		var failure string
		var lastErr error
		_ = wait.PollUntilContextTimeout(ctx, poll, startSlack, true, func(ctx context.Context) (bool, error) {
			events, err := prepareEvents(ctx, cs, pod)
			if err != nil {
				lastErr = err
				return false, nil //nolint:nilerr // the API may blink; poll again
			}
			if len(events) > 0 {
				failure = events[0].Message
			}
			return failure != "", nil
		})
		framework.ExpectNoError(ctx.Err())
		evidence := fmt.Sprintf("one call (the driver's request %d) for both claims: %s %s, %s %s; the kubelet: %q",
			first.Request, answered.Name, a.Calls[0].Outcome, omitted.Name, first.Outcome, failure)
		if failure == "" {
			evidence += fmt.Sprintf(" (no FailedPrepareDynamicResources event for pod %s within %s; last error %v)", pod.Name, startSlack, lastErr)
		}
		harness.Premise("the kubelet failed the attempt whose response left a claim out", failure != "", evidence)

		ginkgo.By("premise: the retry prepares claim omitted (the pod stays Pending until then), and the pod runs")
		o := pendingUntilPrepared(ctx, f, pod, firstDriver, string(omitted.UID), prepareRetryMax()+startSlack)
		retry := o.Calls[len(o.Calls)-1]
		// A retry that never comes fails above: retrying is the kubelet's
		// part of the requirement.
		harness.Premise("the kubelet retried and the driver prepared claim omitted", true,
			fmt.Sprintf("the driver's request %d, %s after the first: %s", retry.Request, retry.Time.Sub(first.Time).Round(time.Second), describeCalls(o)))
		// The kubelet creates the container only after PrepareResources
		// returned, so from here on its claim cache is final.
		waitRunning(ctx, f, pod)

		ginkgo.By("the kubelet's PodResources API lists each claim's device and CDI ID once")
		pr, err := drv.PodResources(ctx, pod.Namespace, pod.Name)
		harness.Ours(err, "the kubelet's PodResources Get for pod %s, read by %s on node %s", pod.Name, firstDriver.Name, node)
		report("kubelet's PodResources", "%s", describePodResources(pr))
		duplicated, problems := checkPodResources(pr, pod.Spec.Containers[0].Name, claims)
		if len(duplicated) > 0 {
			harness.Cause("device-twice", func() {
				framework.Failf("the kubelet holds a CDI device of a claim more than once after a partly failed prepare: its PodResources API lists %s; "+
					"a kubelet without kubernetes#140274 keeps the devices of the claim its driver answered in the failed NodePrepareResources call "+
					"and appends them again on the retry (pkg/kubelet/cm/dra/manager.go, prepareResources: addDevice)", strings.Join(duplicated, "; "))
			})
		}
		harness.Cause("listed-wrong", func() {
			gomega.Expect(problems).To(gomega.BeEmpty(), "the kubelet's PodResources API must list the container's claims with their devices and CDI IDs")
		})

		ginkgo.By("the container got each CDI device (the runtime's record)")
		obs, log := cdiWitness(ctx, cs, pod)
		report("container's CDI report", "%s", strings.TrimSpace(log))
		var injections, missing []string
		for _, c := range claims {
			id := driver.CDIDeviceID(firstDriver.Name, string(c.claim.UID), c.devs[0].Device)
			injections = append(injections, fmt.Sprintf("claim %s: %d environment variables, %d hook runs", c.claim.Name, len(obs.Env[id]), obs.Hooks[id]))
			if len(obs.Env[id]) == 0 || obs.Hooks[id] == 0 {
				missing = append(missing, fmt.Sprintf("claim %s: CDI ID %s: %d environment variables, %d hook runs%s", c.claim.Name, id, len(obs.Env[id]), obs.Hooks[id], unreadable(obs)))
			}
		}
		// Not the verdict: containerd drops a duplicate CDI ID, CRI-O
		// injects it (two hook runs).
		report("runtime's injections", "%s", strings.Join(injections, "; "))
		harness.Cause("cdi-missing", func() {
			gomega.Expect(missing).To(gomega.BeEmpty(), "each claim's CDI device must reach the container")
		})

		ginkgo.By("the driver prepared claim answered once")
		a, err = drv.Calls(ctx, string(answered.UID))
		harness.Ours(err)
		report("claim answered's calls", "%+v: %s", a.Summary, describeCalls(a))
		harness.Cause("calls-wrong", func() {
			gomega.Expect(a.Summary).To(gomega.And(
				gomega.HaveField("PrepareSucceeded", 1), gomega.HaveField("PrepareFailed", 0), gomega.HaveField("PrepareOmitted", 0),
				gomega.HaveField("UnprepareCalls", 0)),
				"claim %s: prepared once, every later call a repeat, and not unprepared while the pod runs", answered.Name)
		})
	})
})

// cdiClaim is a claim of the spec and the devices of the fake driver it got.
type cdiClaim struct {
	claim *resourceapi.ResourceClaim
	devs  []resourceapi.DeviceRequestAllocationResult
}

// checkPodResources compares what the kubelet lists for container with the
// claims' allocations: duplicated names each claim whose device or CDI ID
// the kubelet lists more than once, problems anything else that differs
// (a claim, device or CDI ID missing, one of no claim of the container).
// The kubelet's lists are counted as they are: a v1.36.3 kubelet that holds
// a device twice lists it twice, the second time with the CDI ID twice
// (it collects a driver's CDI IDs in one list across the claim's devices).
func checkPodResources(pr *podresources.Pod, container string, claims []cdiClaim) (duplicated, problems []string) {
	var c *podresources.Container
	for i := range pr.Containers {
		if pr.Containers[i].Name == container {
			c = &pr.Containers[i]
		}
	}
	if c == nil {
		return nil, []string{fmt.Sprintf("container %s is not listed", container)}
	}
	known := map[string]bool{}
	for _, cl := range claims {
		known[cl.claim.Name] = true
		var entries []podresources.Claim
		for _, d := range c.DynamicResources {
			if d.Name == cl.claim.Name && d.Namespace == cl.claim.Namespace {
				entries = append(entries, d)
			}
		}
		if len(entries) != 1 {
			problems = append(problems, fmt.Sprintf("claim %s is listed %d times, want once", cl.claim.Name, len(entries)))
			if len(entries) == 0 {
				continue
			}
		}
		dev := cl.devs[0]
		id := driver.CDIDeviceID(dev.Driver, string(cl.claim.UID), dev.Device)
		devices, ids := 0, 0
		for _, e := range entries {
			for _, r := range e.Resources {
				if r.Driver == dev.Driver && r.Pool == dev.Pool && r.Device == dev.Device {
					devices++
				} else {
					problems = append(problems, fmt.Sprintf("claim %s: device %s/%s/%s is not its allocation (%s)", cl.claim.Name, r.Driver, r.Pool, r.Device, deviceID(dev)))
				}
				for _, got := range r.CDIDevices {
					if got == id {
						ids++
					} else {
						problems = append(problems, fmt.Sprintf("claim %s: CDI ID %s is none of its devices'", cl.claim.Name, got))
					}
				}
			}
		}
		switch {
		case devices > 1 || ids > 1:
			duplicated = append(duplicated, fmt.Sprintf("claim %s: device %s %d times, its CDI ID %s %d times, want once", cl.claim.Name, deviceID(dev), devices, id, ids))
		case devices == 0 || ids == 0:
			problems = append(problems, fmt.Sprintf("claim %s: device %s listed %d times, its CDI ID %s %d times, want once", cl.claim.Name, deviceID(dev), devices, id, ids))
		}
	}
	for _, d := range c.DynamicResources {
		if !known[d.Name] {
			problems = append(problems, fmt.Sprintf("claim %s/%s is none of the pod's", d.Namespace, d.Name))
		}
	}
	return duplicated, problems
}

// describePodResources is the kubelet's list in one line per claim.
func describePodResources(pr *podresources.Pod) string {
	var lines []string
	for _, c := range pr.Containers {
		for _, d := range c.DynamicResources {
			var res []string
			for _, r := range d.Resources {
				res = append(res, fmt.Sprintf("%s/%s/%s cdi %v", r.Driver, r.Pool, r.Device, r.CDIDevices))
			}
			lines = append(lines, fmt.Sprintf("container %s claim %s: [%s]", c.Name, d.Name, strings.Join(res, ", ")))
		}
	}
	if len(lines) == 0 {
		return "no dynamic resources"
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// cdiWitness waits for the container's complete CDI report and returns it
// parsed and as logged.
func cdiWitness(ctx context.Context, cs clientset.Interface, pod *v1.Pod) (driver.CDIObservation, string) {
	var obs driver.CDIObservation
	var log string
	gomega.Eventually(ctx, func(ctx context.Context) error {
		var err error
		log, err = e2epod.GetPodLogs(ctx, cs, pod.Namespace, pod.Name, pod.Spec.Containers[0].Name)
		if err != nil {
			return err
		}
		if obs, err = driver.ParseCDIWitness(log); err != nil {
			return gomega.StopTrying(err.Error())
		}
		if !obs.Done {
			return fmt.Errorf("the container's report is not complete yet: %q", log)
		}
		return nil
	}).WithTimeout(startSlack).WithPolling(poll).Should(gomega.Succeed())
	return obs, log
}

func unreadable(obs driver.CDIObservation) string {
	if obs.HooksUnreadable == "" {
		return ""
	}
	return " (no hook record: " + obs.HooksUnreadable + ")"
}

// cdiWitnessPod is a test pod using claims whose container reports the CDI
// devices the runtime injected (fake-dra-driver cdi-witness, in the same
// image as the test workload) and then waits to be stopped.
func cdiWitnessPod(name string, claims ...*resourceapi.ResourceClaim) *v1.Pod {
	pod := podWithClaims(name, claims...)
	pod.Spec.Containers[0].Command = []string{driver.DefaultCDIHookPath, driver.CDIWitnessCommand}
	return pod
}
