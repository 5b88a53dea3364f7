package dra

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/test/e2e/framework"
	admissionapi "k8s.io/pod-security-admission/api"
	"k8s.io/utils/ptr"

	"github.com/faultline-k8s/faultline/fakes/dra/calls"
	"github.com/faultline-k8s/faultline/fakes/dra/faultspec"
	"github.com/faultline-k8s/faultline/suites/harness"
)

var _ = describe("NodeUnprepareResources failure", framework.WithFeature(featureDRA), func() {
	f := framework.NewDefaultFramework("dra-unprepare")
	f.NamespacePodSecurityLevel = admissionapi.LevelRestricted
	dumpOnFailure(f)

	framework.It("retries a failing unprepare until it succeeds, and the pod's deletion completes only then", harness.Checks("DRA-UNPREPARE-RETRIED"), func(ctx context.Context) {
		cs := f.ClientSet
		// Three back-off retries after the first, which rides on the pod's
		// own termination events: the check reads the quickest of them.
		const failures = 4
		harness.Floor(floorUnprepareBackOff.Times(failures - 1))
		claim := createClaim(ctx, f, "teardown", []request{{name: "dev", driver: firstDriver}}, config(firstDriver, faults(nil, []faultspec.Fault{
			{Type: faultspec.Transient, Count: ptr.To(failures), Message: "faultline: transient unprepare failure"},
		})))
		pod := scheduled(ctx, f, createPod(ctx, f, podWithClaims("teardown", claim)))
		claim, _ = allocated(ctx, f, claim, firstDriver)
		node := pod.Spec.NodeName
		timers := harness.WatchKubeletTimers(ctx, cs, node)
		waitRunning(ctx, f, pod)

		ginkgo.By(fmt.Sprintf("deleting the pod: %d unprepare calls fail, the next succeeds", failures))
		harness.Ours(cs.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}))
		deleted := time.Now()
		rep := goneAfterUnprepared(ctx, f, pod, node, string(claim.UID), failures*unprepareRetryMax+startSlack)
		report("pod deletion", "completed %s after the delete request", time.Since(deleted).Round(time.Second))
		all := gaps(rep, calls.Unprepare)
		report("unprepare retry gaps", "%s", durations(all))

		harness.Cause("calls-wrong", func() {
			gomega.Expect(rep.Summary).To(gomega.Equal(calls.Summary{
				PrepareCalls: 1, PrepareSucceeded: 1, UnprepareCalls: failures + 1, UnprepareFailed: failures, UnprepareSucceeded: 1,
			}), "unprepare retried until it succeeded, and no prepare for the deleted pod")
		})
		// The regression this refuses retries no sooner than the resync
		// (the kubelet caps any back-off there); a healthy kubelet within
		// its jittered error back-off. A node whose timers fire later than
		// the room between the two cannot tell them apart.
		late := timers.Lateness()
		bound := unprepareRetryBound(late.Worst)
		harness.TooBusy("the unprepare retry's pace", late, kubeletResync()-unprepareRetryBound(0))
		harness.Cause("retried-too-slowly", func() {
			backOffGaps := all[1:]
			gomega.Expect(slices.Min(backOffGaps)).To(gomega.BeNumerically("<=", bound),
				"the quickest of the unprepare retries after the first (%s) came later than the kubelet's error back-off allows (%s, with %s): it retries a failed teardown no sooner than its resync (%s)",
				durations(backOffGaps), bound, late, kubeletResync())
		})
	})

	framework.It("retries a failing unprepare of one of two drivers until it succeeds; the healthy driver's claim is unprepared once, repeated calls for it are no-ops", harness.Checks("DRA-UNPREPARE-TWO-DRIVERS"), func(ctx context.Context) {
		const failures = 2
		// The first retry rides on the pod's own termination events.
		harness.Floor(floorUnprepareBackOff.Times(failures - 1))
		failing := createClaim(ctx, f, "failing", []request{{name: "dev", driver: firstDriver}}, config(firstDriver, faults(nil, []faultspec.Fault{
			{Type: faultspec.Transient, Count: ptr.To(failures), Message: "faultline: transient unprepare failure"},
		})))
		healthy := createClaim(ctx, f, "healthy", []request{{name: "dev", driver: secondDriver}})
		pod := scheduled(ctx, f, createPod(ctx, f, podWithClaims("teardown", failing, healthy)))
		failing, _ = allocated(ctx, f, failing, firstDriver)
		healthy, _ = allocated(ctx, f, healthy, secondDriver)
		node := pod.Spec.NodeName
		waitRunning(ctx, f, pod)

		ginkgo.By("deleting the pod")
		deleteAndWaitGone(ctx, f, pod, failures*unprepareRetryMax+startSlack)
		rep, err := draClient().On(node, firstDriver).Calls(ctx, string(failing.UID))
		harness.Ours(err)
		harness.Cause("calls-wrong", func() {
			gomega.Expect(rep.Summary).To(gomega.Equal(calls.Summary{
				PrepareCalls: 1, PrepareSucceeded: 1, UnprepareCalls: failures + 1, UnprepareFailed: failures, UnprepareSucceeded: 1,
			}), "the failing driver's unprepare retried until it succeeded")
		})
		// The kubelet unprepares driver by driver in map order, stops at
		// the first failure and forgets a claim only when all drivers
		// succeeded: the healthy driver may be asked again after it
		// unprepared its claim, and must answer with a no-op.
		h, err := draClient().On(node, secondDriver).Calls(ctx, string(healthy.UID))
		harness.Ours(err)
		report("healthy driver's unprepare calls", "%+v", h.Summary)
		harness.Cause("unprepared-twice", func() {
			gomega.Expect(h.Summary.UnprepareSucceeded).To(gomega.Equal(1), "unprepared exactly once")
			gomega.Expect(h.Summary.UnprepareCalls).To(gomega.Equal(h.Summary.UnprepareSucceeded+h.Summary.UnprepareNoop), "every later call a no-op")
		})
		harness.Cause("calls-wrong", func() {
			gomega.Expect(h.Summary.PrepareCalls).To(gomega.Equal(1))
			gomega.Expect(h.Summary.UnprepareFailed).To(gomega.BeZero())
			gomega.Expect(h.Summary.UnprepareCalls).To(gomega.BeNumerically("<=", failures+1))
		})
	})
})

// goneAfterUnprepared waits (up to timeout) until the deleted pod is gone,
// and fails at once if it is ever seen gone before the driver unprepared
// its claim: the kubelet unprepares before it reports the pod terminated.
// It returns the driver's record of the claim at that moment.
func goneAfterUnprepared(ctx context.Context, f *framework.Framework, pod *v1.Pod, node, claimUID string, timeout time.Duration) calls.Report {
	ginkgo.GinkgoHelper()
	var rep calls.Report
	harness.Cause("not-deleted", func() {
		gomega.Eventually(ctx, func(ctx context.Context) error {
			_, getErr := getPod(ctx, f.ClientSet, pod)
			var err error
			rep, err = draClient().On(node, firstDriver).Calls(ctx, claimUID)
			if err != nil {
				return err
			}
			switch {
			case apierrors.IsNotFound(getErr) && rep.Summary.UnprepareSucceeded == 0:
				harness.Cause("gone-before-unprepared", func() {
					framework.Failf("pod is gone but its claim was not unprepared: %s", describeCalls(rep))
				})
			case apierrors.IsNotFound(getErr):
				return nil
			case getErr != nil:
				return getErr
			}
			return fmt.Errorf("pod still there: %s", describeCalls(rep))
		}).WithTimeout(timeout).WithPolling(time.Second).Should(gomega.Succeed(), "the deleted pod must be gone once its claim is unprepared")
	})
	return rep
}
