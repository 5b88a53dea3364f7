package dra

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/test/e2e/framework"
	e2epod "k8s.io/kubernetes/test/e2e/framework/pod"
	admissionapi "k8s.io/pod-security-admission/api"
	"k8s.io/utils/ptr"

	"github.com/faultline-k8s/faultline/drivers/fake/dra/calls"
	"github.com/faultline-k8s/faultline/drivers/fake/dra/driver"
	"github.com/faultline-k8s/faultline/drivers/fake/dra/faultspec"
	"github.com/faultline-k8s/faultline/suites/harness"
)

// The CDI devices a container gets, counted where the kubelet and the
// driver cannot fake it: in the container. The claims ask the fake driver
// for CDI devices (FaultSpec cdi, drivers/fake/dra/driver/cdi.go); the
// runtime then sets each device's environment variable and runs its OCI
// startContainer hook once per injection of the device, and the container
// (fake-dra-driver cdi-witness) prints both. A device injected twice shows
// as two hook runs; its environment variable cannot show it (the second
// copy replaces the first).
//
// Where duplicates come from: the kubelet calls a pod's drivers one after
// the other, in Go map order, and stops at the first failure. When the
// healthy driver came first, a kubelet without kubernetes#140274 keeps the
// devices of its response although the claim was not marked prepared, and
// appends them again on the retry: the container's CDI devices list its
// CDI ID twice. containerd (2.4.2, internal/cri/opts/spec_linux.go WithCDI)
// drops duplicate CDI names before injecting; CRI-O (1.36.3,
// internal/factory/container/device_linux.go) injects every copy.
var _ = describe("CDI devices after a retried prepare", framework.WithFeature(featureDRA), func() {
	f := framework.NewDefaultFramework("dra-cdi")
	f.NamespacePodSecurityLevel = admissionapi.LevelRestricted
	dumpOnFailure(f)

	withCDI := func(spec faultspec.FaultSpec) faultspec.FaultSpec {
		spec.CDI = &faultspec.CDI{Hook: true}
		return spec
	}
	failingSpec := withCDI(faults([]faultspec.Fault{{Type: faultspec.Transient, Count: ptr.To(1), Message: "faultline: transient failure"}}, nil))
	healthySpec := withCDI(faults(nil, nil))

	framework.It("gives the container each driver's CDI device exactly once after a prepare that failed for one of two drivers was retried, and the healthy driver's claim is prepared once", harness.Checks("DRA-TWO-DRIVERS-CDI-ONCE"), func(ctx context.Context) {
		cs := f.ClientSet
		var (
			pod                      *v1.Pod
			failing, healthy         *resourceapi.ResourceClaim
			failingDevs, healthyDevs []resourceapi.DeviceRequestAllocationResult
			exercised                bool
			round                    int
		)
		// Each round is a new pod whose first prepare attempt fails; the
		// first attempt comes right after scheduling, so a round costs
		// seconds. The retry (a kubelet resync later) is awaited only in
		// the round in which the healthy driver was called first.
		for round = 1; ; round++ {
			failing = createClaim(ctx, f, fmt.Sprintf("failing-%d", round), []request{{name: "dev", driver: firstDriver}}, config(firstDriver, failingSpec))
			healthy = createClaim(ctx, f, fmt.Sprintf("healthy-%d", round), []request{{name: "dev", driver: secondDriver}}, config(secondDriver, healthySpec))
			pod = scheduled(ctx, f, createPod(ctx, f, cdiWitnessPod(fmt.Sprintf("cdi-%d", round), failing, healthy)))
			failing, failingDevs = allocated(ctx, f, failing, firstDriver)
			healthy, healthyDevs = allocated(ctx, f, healthy, secondDriver)
			node := pod.Spec.NodeName

			ginkgo.By(fmt.Sprintf("round %d: the first prepare attempt fails for %s", round, firstDriver.Name))
			var failed calls.Call
			gomega.Eventually(ctx, func(ctx context.Context) error {
				rep, err := draClient().On(node, firstDriver).Calls(ctx, string(failing.UID))
				if err != nil {
					return err
				}
				if len(rep.Calls) == 0 {
					return fmt.Errorf("%s has not been asked to prepare claim %s yet", firstDriver.Name, failing.Name)
				}
				if failed = rep.Calls[0]; failed.Method != calls.Prepare || failed.Outcome != calls.Failed {
					return gomega.StopTrying(fmt.Sprintf("the first call for claim %s did not fail as its FaultSpec says: %+v", failing.Name, failed))
				}
				return nil
			}).WithTimeout(startSlack).WithPolling(time.Second).Should(gomega.Succeed())
			// The kubelet calls the drivers one after the other and
			// stops at the failure: a call for the healthy claim before
			// the failed one (the retry is a resync later) was part of
			// the failed attempt.
			h, err := draClient().On(node, secondDriver).Calls(ctx, string(healthy.UID))
			framework.ExpectNoError(err)
			exercised = slices.ContainsFunc(h.Calls, func(c calls.Call) bool {
				return c.Method == calls.Prepare && !c.Time.After(failed.Time.Add(prepareRetryTolerance))
			})
			report(fmt.Sprintf("round %d", round), "healthy driver called in the failed attempt: %v (%d calls for its claim)", exercised, len(h.Calls))
			if exercised || round == cdiRounds {
				break
			}
			ginkgo.By("the kubelet called the failing driver first, so the healthy driver's claim was not prepared in the failed attempt: a new round")
			deleteAndWaitGone(ctx, f, pod, unprepareRetryMax+startSlack)
			for _, c := range []*resourceapi.ResourceClaim{failing, healthy} {
				if err := cs.ResourceV1().ResourceClaims(c.Namespace).Delete(ctx, c.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					framework.ExpectNoError(err, "delete claim %s", c.Name)
				}
			}
		}
		if !exercised {
			report("not exercised", "in each of %d rounds the kubelet called %s first (1/2 each): the healthy driver was never prepared in a failed attempt, "+
				"so the retry that duplicates its CDI device did not happen; the spec checks the plain retry only", cdiRounds, firstDriver.Name)
		}
		node := pod.Spec.NodeName

		ginkgo.By("the retry prepares the failing driver's claim, and the pod runs")
		pendingUntilPrepared(ctx, f, pod, firstDriver, string(failing.UID), prepareRetryMax+startSlack)
		waitRunning(ctx, f, pod)

		ginkgo.By("the container reports the CDI devices the runtime injected")
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
		report("container's CDI report", "%s", strings.TrimSpace(log))

		want := map[string]string{} // CDI ID -> what it is
		for _, c := range []struct {
			d     driverRef
			claim *resourceapi.ResourceClaim
			devs  []resourceapi.DeviceRequestAllocationResult
		}{{firstDriver, failing, failingDevs}, {secondDriver, healthy, healthyDevs}} {
			gomega.Expect(c.devs).To(gomega.HaveLen(1), "claim %s", c.claim.Name)
			for _, r := range c.devs {
				want[driver.CDIDeviceID(c.d.Name, string(c.claim.UID), r.Device)] = fmt.Sprintf("device %s of claim %s", deviceID(r), c.claim.Name)
			}
		}
		var duplicated, problems []string
		for _, id := range slices.Sorted(maps.Keys(want)) {
			what := want[id]
			if n := len(obs.Env[id]); n != 1 {
				problems = append(problems, fmt.Sprintf("%s: %d environment variables name its CDI ID %s, want 1", what, n, id))
			}
			switch n := obs.Hooks[id]; {
			case n == 0:
				unreadable := ""
				if obs.HooksUnreadable != "" {
					unreadable = " (no hook record: " + obs.HooksUnreadable + ")"
				}
				problems = append(problems, fmt.Sprintf("%s: its startContainer hook did not run%s", what, unreadable))
			case n > 1:
				duplicated = append(duplicated, fmt.Sprintf("%s (CDI ID %s): injected %d times", what, id, n))
			}
		}
		for _, id := range obs.IDs() {
			if _, ok := want[id]; !ok {
				problems = append(problems, "a CDI device of no claim of the pod: "+id)
			}
		}
		gomega.Expect(duplicated).To(gomega.BeEmpty(),
			"the runtime injected a CDI device more than once (its startContainer hook ran once per injection), so the container's CDI devices named it more than once: "+
				"a kubelet without kubernetes#140274 keeps the devices a driver returned in a NodePrepareResources attempt that failed for another driver "+
				"and appends them again on the retry (pkg/kubelet/cm/dra/manager.go, prepareResources: addDevice); containerd drops duplicate CDI IDs, CRI-O injects each copy")
		gomega.Expect(problems).To(gomega.BeEmpty(), "each CDI device of the pod's claims must reach the container once")

		ginkgo.By("the kubelet asked each driver once per attempt, and the healthy driver prepared its claim once")
		f1, err := draClient().On(node, firstDriver).Calls(ctx, string(failing.UID))
		framework.ExpectNoError(err)
		gomega.Expect(f1.Summary).To(gomega.Equal(calls.Summary{PrepareCalls: 2, PrepareFailed: 1, PrepareSucceeded: 1}), "the failing driver: one failed attempt, one retry")
		h, err := draClient().On(node, secondDriver).Calls(ctx, string(healthy.UID))
		framework.ExpectNoError(err)
		report("healthy driver's calls", "%+v", h.Summary)
		attempts := 1
		if exercised {
			attempts = 2
		}
		// The kubelet calls the healthy driver in every attempt that
		// reaches it: the failed one when it came first, and the retry.
		// That the driver really prepared once is its own doing (it
		// answers a repeat from its cache); asserted to show the record
		// is what the kubelet asked.
		gomega.Expect(h.Summary).To(gomega.Equal(calls.Summary{PrepareCalls: attempts, PrepareSucceeded: 1, PrepareRepeated: attempts - 1}),
			"the kubelet asks the healthy driver to prepare its claim once per attempt that reaches it (%d), and never unprepares it while the pod runs", attempts)
	})
})

// cdiWitnessPod is a test pod using claims whose container reports the CDI
// devices the runtime injected (fake-dra-driver cdi-witness, in the same
// image as the test workload) and then waits to be stopped.
func cdiWitnessPod(name string, claims ...*resourceapi.ResourceClaim) *v1.Pod {
	pod := podWithClaims(name, claims...)
	pod.Spec.Containers[0].Command = []string{driver.DefaultCDIHookPath, driver.CDIWitnessCommand}
	return pod
}
