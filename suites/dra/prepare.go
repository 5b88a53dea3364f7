package dra

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/test/e2e/framework"
	admissionapi "k8s.io/pod-security-admission/api"
	"k8s.io/utils/ptr"

	"github.com/faultline-k8s/faultline/fakes/dra/calls"
	"github.com/faultline-k8s/faultline/fakes/dra/driver"
	"github.com/faultline-k8s/faultline/fakes/dra/faultspec"
	"github.com/faultline-k8s/faultline/suites/harness"
	"github.com/faultline-k8s/faultline/vocab/kubelet"
	"github.com/faultline-k8s/faultline/vocab/needs"
)

// gatePermanentFailures is the kubelet feature gate of the KEP-5322 draft.
const gatePermanentFailures = "DRAHandlePermanentDriverFailures"

var _ = describe("NodePrepareResources failure", framework.WithFeature(featureDRA), func() {
	f := framework.NewDefaultFramework("dra-prepare")
	f.NamespacePodSecurityLevel = admissionapi.LevelRestricted
	dumpOnFailure(f)

	// retriedUntilSuccess runs a pod whose claim fails the first `failures`
	// prepare calls with fault, and checks the kubelet retries it: Pending
	// while failing, then Running, exactly failures+1 prepare calls, one
	// event per failure.
	retriedUntilSuccess := func(ctx context.Context, name string, fault faultspec.Fault, failures int) {
		harness.Floor(floorResync().Times(failures))
		claim := createClaim(ctx, f, name, []request{{name: "dev", driver: firstDriver}}, config(firstDriver, faults([]faultspec.Fault{fault}, nil)))
		pod := scheduled(ctx, f, createPod(ctx, f, podWithClaims(name, claim)))
		claim, devs := allocated(ctx, f, claim, firstDriver)
		gomega.Expect(devs).To(gomega.HaveLen(1))

		ginkgo.By(fmt.Sprintf("the pod stays Pending through %d failing prepare calls (one per kubelet resync, %s-%s apart)", failures, prepareRetryMin(), prepareRetryMax()))
		pendingUntilPrepared(ctx, f, pod, firstDriver, string(claim.UID), time.Duration(failures)*prepareRetryMax()+startSlack)
		ginkgo.By("then it runs")
		waitRunning(ctx, f, pod)

		rep, err := draClient().On(pod.Spec.NodeName, firstDriver).Calls(ctx, string(claim.UID))
		harness.Ours(err)
		harness.Cause("calls-wrong", func() {
			gomega.Expect(rep.Summary).To(gomega.Equal(calls.Summary{PrepareCalls: failures + 1, PrepareFailed: failures, PrepareSucceeded: 1}),
				"exactly %d failing prepare calls, then one that succeeds, and nothing else", failures)
		})
		report("prepare retry gaps", "%s", durations(gaps(rep, calls.Prepare)))

		ginkgo.By("every failure is a Warning event FailedPrepareDynamicResources naming driver, device and claim")
		checkPrepareEvents(ctx, f, pod, claim.Name, rep, firstDriver, devs[0].Device)

		ginkgo.By("after the pod is deleted the claim is unprepared once and never prepared again")
		deleteAndWaitGone(ctx, f, pod, unprepareRetryMax+startSlack)
		rep, err = draClient().On(pod.Spec.NodeName, firstDriver).Calls(ctx, string(claim.UID))
		harness.Ours(err)
		harness.Cause("calls-wrong", func() {
			gomega.Expect(rep.Summary).To(gomega.Equal(calls.Summary{
				PrepareCalls: failures + 1, PrepareFailed: failures, PrepareSucceeded: 1, UnprepareCalls: 1, UnprepareSucceeded: 1,
			}), "unprepared once after the pod is gone, and never prepared again")
		})
	}

	framework.It("retries a transient failure until it succeeds: the pod stays Pending meanwhile, then runs; the driver sees exactly N+1 prepare calls; each failure is a Warning event FailedPrepareDynamicResources naming driver, device and claim", harness.Checks("DRA-TRANSIENT-RETRIED"), framework.WithLabel("ci"), harness.Lasts(2*retryMaxOf(nominalResync)), func(ctx context.Context) {
		retriedUntilSuccess(ctx, "transient", faultspec.Fault{Type: faultspec.Transient, Count: ptr.To(2), Message: "faultline: transient failure"}, 2)
	})

	framework.It("treats an unclassified error as transient: retried until it succeeds, the pod never fails", harness.Checks("DRA-UNCLASSIFIED-TRANSIENT"), func(ctx context.Context) {
		retriedUntilSuccess(ctx, "unclassified", faultspec.Fault{Type: faultspec.Unclassified, Count: ptr.To(1), Message: "faultline: no classification"}, 1)
	})

	framework.It("fails the pod on a permanent failure: phase Failed, and no prepare call after the failure is reported", harness.Checks("DRA-PERMANENT-FAILS-POD"), harness.Informs(needs.GatePermanentFailures), framework.WithFeature(featurePermanentFailures), func(ctx context.Context) {
		cs := f.ClientSet
		claim := createClaim(ctx, f, "permanent", []request{{name: "dev", driver: firstDriver}}, config(firstDriver, faults([]faultspec.Fault{
			{Type: faultspec.Permanent, Reason: faultspec.BadConfiguration, Message: "faultline: mode X needs firmware 2"},
		}, nil)))
		pod := scheduled(ctx, f, createPod(ctx, f, podWithClaims("permanent", claim)))
		node := pod.Spec.NodeName
		claim, devs := allocated(ctx, f, claim, firstDriver)

		// The behaviour is judged, not the feature gate: a kubelet that
		// fails the pod meets the requirement whatever its gates say; one
		// that calls the driver again for the same permanent error does
		// not implement KEP-5322, which is its own verdict, not a skip and
		// not a failure of this stack's driver.
		ginkgo.By("the pod fails, or the kubelet retries the permanent error")
		var failedAt calls.Report
		var phase v1.PodPhase
		harness.Cause("no-outcome", func() {
			gomega.Eventually(ctx, func(ctx context.Context) (bool, error) {
				p, err := getPod(ctx, cs, pod)
				if err != nil {
					return false, err
				}
				if p.Status.Phase == v1.PodRunning {
					harness.Cause("pod-runs", func() { framework.Failf("the pod runs although its claim cannot be prepared") })
				}
				phase = p.Status.Phase
				failedAt, err = draClient().On(node, firstDriver).Calls(ctx, string(claim.UID))
				return phase == v1.PodFailed || failedAt.Summary.PrepareCalls >= 2, err
			}).WithTimeout(prepareRetryMax()+startSlack).WithPolling(poll).Should(gomega.BeTrue(),
				"a permanent NodePrepareResources error must fail the pod, or at least be retried")
		})
		if phase != v1.PodFailed {
			// The kubelet called again: at the pod's next resync.
			harness.Floor(floorResync())
			gates, err := kubelet.ReadFeatureGates(ctx, cs, node)
			gate := "unknown to the kubelet"
			enabled, known := gates[gatePermanentFailures]
			switch {
			case err != nil:
				gate = fmt.Sprintf("not readable: %v", err)
			case known && enabled:
				// The kubelet has the KEP and it is on: retrying a
				// permanent error is the regression, not a missing feature.
				harness.Cause("no-outcome", func() {
					framework.Failf("the kubelet on %s has %s enabled, yet it called NodePrepareResources %d times for a permanent error and left the pod %s instead of failing it",
						node, gatePermanentFailures, failedAt.Summary.PrepareCalls, phase)
				})
			case known:
				gate = "enabled=false"
			}
			harness.NotImplemented("KEP-5322", fmt.Sprintf("the kubelet on %s called NodePrepareResources %d times for a permanent error and left the pod %s instead of failing it (feature gate %s: %s)",
				node, failedAt.Summary.PrepareCalls, phase, gatePermanentFailures, gate))
		}
		gomega.Expect(failedAt.Summary.PrepareCalls).To(gomega.BeNumerically(">=", 1))
		gomega.Expect(failedAt.Summary.PrepareSucceeded).To(gomega.BeZero())

		harness.Floor(floorQuietResync())
		ginkgo.By(fmt.Sprintf("no prepare call follows the failure for a full kubelet resync (%s)", prepareRetryMax()))
		harness.Cause("prepared-again", func() {
			gomega.Consistently(ctx, func(ctx context.Context) int {
				rep, err := draClient().On(node, firstDriver).Calls(ctx, string(claim.UID))
				harness.Ours(err, "read the driver's call record")
				return rep.Summary.PrepareCalls
			}).WithTimeout(prepareRetryMax()+prepareRetryTolerance).WithPolling(5*time.Second).Should(gomega.Equal(failedAt.Summary.PrepareCalls),
				"a failed pod's claim must not be prepared again")
		})
		checkPrepareEvents(ctx, f, pod, claim.Name, failedAt, firstDriver, devs[0].Device)
	})

	framework.It("reports a bad configuration naming the offending field, and does not retry it faster than the kubelet's resync", harness.Checks("DRA-BAD-CONFIG-NAMED"), harness.Lasts(2*retryMaxOf(nominalResync)), func(ctx context.Context) {
		cs := f.ClientSet
		// Valid JSON, so the API server stores it; the driver's strict
		// parser rejects the duration.
		bad := faults([]faultspec.Fault{{Type: faultspec.Stall, Duration: "5x"}}, nil)
		const field = `prepare[0].duration: invalid duration "5x"`
		claim := createClaim(ctx, f, "badconfig", []request{{name: "dev", driver: firstDriver}}, config(firstDriver, bad))
		pod := scheduled(ctx, f, createPod(ctx, f, podWithClaims("badconfig", claim)))
		claim, devs := allocated(ctx, f, claim, firstDriver)
		node := pod.Spec.NodeName

		// Watch three prepare calls (two retries), or the pod failing on a
		// kubelet with KEP-5322. Calls closer together than the resync
		// (minus tolerance) mean the kubelet spins on a failure that
		// cannot go away.
		const want = 3
		ginkgo.By(fmt.Sprintf("observing %d prepare calls (up to %s)", want, (want-1)*prepareRetryMax()+startSlack))
		var rep calls.Report
		harness.Cause("not-retried", func() {
			gomega.Eventually(ctx, func(ctx context.Context) error {
				p, err := getPod(ctx, cs, pod)
				if err != nil {
					return err
				}
				if p.Status.Phase == v1.PodRunning {
					harness.Cause("pod-runs", func() { framework.Failf("the pod runs although its claim's configuration is invalid") })
				}
				rep, err = draClient().On(node, firstDriver).Calls(ctx, string(claim.UID))
				if err != nil {
					return err
				}
				if p.Status.Phase == v1.PodFailed || rep.Summary.PrepareCalls >= want {
					return nil
				}
				return fmt.Errorf("%d prepare calls so far", rep.Summary.PrepareCalls)
			}).WithTimeout((want-1)*prepareRetryMax() + startSlack).WithPolling(poll).Should(gomega.Succeed())
		})

		// Each prepare call after the first comes at a resync; a kubelet
		// with KEP-5322 fails the pod at the first.
		if n := rep.Summary.PrepareCalls; n > 1 {
			harness.Floor(floorResync().Times(n - 1))
		} else {
			harness.Floor()
		}
		g := gaps(rep, calls.Prepare)
		report("bad configuration retry gaps", "%s over %d calls", durations(g), rep.Summary.PrepareCalls)
		harness.Cause("retried-too-fast", func() {
			for i, gap := range g {
				gomega.Expect(gap).To(gomega.BeNumerically(">=", prepareRetryMin()-prepareRetryTolerance),
					"prepare calls %d and %d for a claim that can never be prepared are %s apart; the kubelet must not retry faster than its resync (%s)", i+1, i+2, gap, prepareRetryMin())
			}
		})

		ginkgo.By("the error the user sees names the offending field")
		checkPrepareEvents(ctx, f, pod, claim.Name, rep, firstDriver, devs[0].Device)
		events, err := prepareEvents(ctx, cs, pod)
		harness.Ours(err)
		harness.Cause("field-not-named", func() {
			for _, e := range events {
				gomega.Expect(e.Message).To(gomega.ContainSubstring(field))
				gomega.Expect(e.Message).To(gomega.ContainSubstring("[permanent/BadConfiguration]"))
			}
		})
		// The claim's device condition is the fake's own writing, not a
		// witness of the kubelet: the events above are.
	})

	framework.It("retries a prepare that stalls past the kubelet's 45 s deadline, and after success the driver sees no duplicate preparation", harness.Checks("DRA-DEADLINE-RETRIED"), framework.WithSlow(), harness.Lasts(draCallTimeout+nominalResync+retryMaxOf(nominalResync)), func(ctx context.Context) {
		harness.Floor(floorCallDeadline, floorResync(), floorQuietResync())
		cs := f.ClientSet
		// Longer than the kubelet's deadline, first call only.
		stall := 2 * draCallTimeout
		claim := createClaim(ctx, f, "stall", []request{{name: "dev", driver: firstDriver}}, config(firstDriver, faults([]faultspec.Fault{
			{Type: faultspec.Stall, Duration: stall.String(), Count: ptr.To(1)},
		}, nil)))
		pod := scheduled(ctx, f, createPod(ctx, f, podWithClaims("stall", claim)))
		claim, _ = allocated(ctx, f, claim, firstDriver)
		node := pod.Spec.NodeName

		ginkgo.By(fmt.Sprintf("the pod stays Pending while the first call stalls (the kubelet gives up after %s) and until the retry succeeds", draCallTimeout))
		pendingUntilPrepared(ctx, f, pod, firstDriver, string(claim.UID), draCallTimeout+prepareRetryMax()+startSlack)
		waitRunning(ctx, f, pod)

		rep, err := draClient().On(node, firstDriver).Calls(ctx, string(claim.UID))
		harness.Ours(err)
		harness.Cause("calls-wrong", func() {
			gomega.Expect(rep.Calls).To(gomega.HaveLen(2), "the stalled call and its retry: %s", describeCalls(rep))
		})
		first := rep.Calls[0]
		harness.Cause("deadline-wrong", func() {
			// The fake records a call whose caller gave up as a failed stall.
			gomega.Expect(first.Outcome).To(gomega.Equal(calls.Failed))
			gomega.Expect(first.Error).To(gomega.ContainSubstring("transient/stalled"))
		})
		stalled, err := time.ParseDuration(first.Stalled)
		harness.Ours(err, "stalled %q", first.Stalled)
		report("kubelet NodePrepareResources deadline", "the first call was cut off after %s", stalled)
		harness.Cause("deadline-wrong", func() {
			gomega.Expect(stalled).To(gomega.BeNumerically("~", draCallTimeout, 5*time.Second),
				"the kubelet gives up on a DRA call after %s", draCallTimeout)
		})
		report("retry after deadline", "%s", durations(gaps(rep, calls.Prepare)))

		ginkgo.By(fmt.Sprintf("no second preparation after success, also not at the next kubelet resync (%s)", prepareRetryMax()))
		harness.Cause("calls-wrong", func() {
			gomega.Expect(rep.Summary).To(gomega.Equal(calls.Summary{PrepareCalls: 2, PrepareFailed: 1, PrepareSucceeded: 1}))
		})
		expectNotPreparedAgain(ctx, node, claim, rep.Summary)

		events, err := prepareEvents(ctx, cs, pod)
		harness.Ours(err)
		for i, e := range events {
			report(fmt.Sprintf("event %d", i+1), "%s %s: %s", e.Type, e.Reason, e.Message)
		}
		harness.Cause("event-missing", func() {
			gomega.Expect(events).To(gomega.HaveLen(1), "one event for the one failed call")
		})
	})

	// The README's requirement "every error names driver, device and
	// claim" also holds when the driver does not answer in time; then the
	// kubelet has nothing but its own error to show.
	framework.It("names the driver and the claim in the error the user sees when a prepare call runs into the kubelet's deadline", harness.Checks("DRA-DEADLINE-ERROR-NAMED"), func(ctx context.Context) {
		harness.Floor(floorCallDeadline)
		cs := f.ClientSet
		claim := createClaim(ctx, f, "deadline", []request{{name: "dev", driver: firstDriver}}, config(firstDriver, faults([]faultspec.Fault{
			{Type: faultspec.Stall, Duration: (2 * draCallTimeout).String(), Count: ptr.To(1)},
		}, nil)))
		pod := scheduled(ctx, f, createPod(ctx, f, podWithClaims("deadline", claim)))
		claim, devs := allocated(ctx, f, claim, firstDriver)

		ginkgo.By(fmt.Sprintf("waiting for the event of the call the kubelet gives up on after %s", draCallTimeout))
		var events []v1.Event
		harness.Cause("event-missing", func() {
			gomega.Eventually(ctx, func(ctx context.Context) ([]v1.Event, error) {
				var err error
				events, err = prepareEvents(ctx, cs, pod)
				return events, err
			}).WithTimeout(draCallTimeout+startSlack).WithPolling(poll).ShouldNot(gomega.BeEmpty(),
				"the kubelet must tell the pod about the prepare call it gave up on")
		})
		gomega.Eventually(ctx, func(ctx context.Context) ([]calls.Call, error) {
			rep, err := draClient().On(pod.Spec.NodeName, firstDriver).Calls(ctx, string(claim.UID))
			return rep.Calls, err
		}).WithTimeout(30*time.Second).WithPolling(time.Second).Should(gomega.ContainElement(gomega.HaveField("Stalled", gomega.Not(gomega.BeEmpty()))),
			"the driver recorded the stalled call the kubelet gave up on")
		e := events[0]
		report("event 1", "%s %s: %s", e.Type, e.Reason, e.Message)
		var missing []string
		for _, s := range []string{firstDriver.Name, claim.Name} {
			if !strings.Contains(e.Message, s) {
				missing = append(missing, s)
			}
		}
		why := fmt.Sprintf("event %q must name driver %s and claim %s (device %s); the kubelet (pkg/kubelet/cm/dra/manager.go) wraps a failed NodePrepareResources gRPC call "+
			"as \"NodePrepareResources: <gRPC error>\" without the driver or the claims of the batch, and the driver's own error never reaches it: a kubelet limitation",
			e.Message, firstDriver.Name, claim.Name, deviceID(devs[0]))
		// The driver first: one cause per failure, and without the driver
		// the event names neither, as a rule.
		harness.Cause("driver-not-named", func() {
			gomega.Expect(missing).NotTo(gomega.ContainElement(firstDriver.Name), why)
		})
		harness.Cause("claim-not-named", func() {
			gomega.Expect(missing).To(gomega.BeEmpty(), why)
		})
	})
})

// deviceCondition returns the Ready condition the driver keeps for one
// allocated device in a claim's status.devices.
func deviceCondition(devices []resourceapi.AllocatedDeviceStatus, r resourceapi.DeviceRequestAllocationResult) *metav1.Condition {
	for _, d := range devices {
		if d.Driver == r.Driver && d.Pool == r.Pool && d.Device == r.Device {
			return apimeta.FindStatusCondition(d.Conditions, driver.ConditionReady)
		}
	}
	return nil
}
