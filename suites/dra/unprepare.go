package dra

import (
	"context"
	"fmt"
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
		const failures = 3
		// The first retry rides on the pod's own termination events.
		harness.Floor(floorUnprepareBackOff.Times(failures - 1))
		claim := createClaim(ctx, f, "teardown", []request{{name: "dev", driver: firstDriver}}, config(firstDriver, faults(nil, []faultspec.Fault{
			{Type: faultspec.Transient, Count: ptr.To(failures), Message: "faultline: transient unprepare failure"},
		})))
		pod := scheduled(ctx, f, createPod(ctx, f, podWithClaims("teardown", claim)))
		claim, _ = allocated(ctx, f, claim, firstDriver)
		node := pod.Spec.NodeName
		waitRunning(ctx, f, pod)

		ginkgo.By(fmt.Sprintf("deleting the pod: %d unprepare calls fail, the next succeeds", failures))
		harness.Ours(cs.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}))
		deleted := time.Now()
		rep := goneAfterUnprepared(ctx, f, pod, node, string(claim.UID), failures*unprepareRetryMax+startSlack)
		report("pod deletion", "completed %s after the delete request", time.Since(deleted).Round(time.Second))
		report("unprepare retry gaps", "%s", durations(gaps(rep, calls.Unprepare)))

		harness.Cause("calls-wrong", func() {
			gomega.Expect(rep.Summary).To(gomega.Equal(calls.Summary{
				PrepareCalls: 1, PrepareSucceeded: 1, UnprepareCalls: failures + 1, UnprepareFailed: failures, UnprepareSucceeded: 1,
			}), "unprepare retried until it succeeded, and no prepare for the deleted pod")
		})
		harness.Cause("retried-too-slowly", func() {
			for i, gap := range gaps(rep, calls.Unprepare) {
				gomega.Expect(gap).To(gomega.BeNumerically("<=", unprepareRetryMax+prepareRetryTolerance),
					"unprepare calls %d and %d are %s apart; the kubelet retries a failed teardown with its error backoff (%s)", i+1, i+2, gap, unprepareRetryMax)
			}
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
