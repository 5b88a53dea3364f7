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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/test/e2e/framework"
	e2epod "k8s.io/kubernetes/test/e2e/framework/pod"

	"github.com/faultline-k8s/faultline/fakes/dra/calls"
	"github.com/faultline-k8s/faultline/suites/harness"
)

// prepared reports whether the record shows a successful preparation.
func prepared(rep calls.Report) bool {
	return rep.Summary.PrepareSucceeded+rep.Summary.PrepareRepeated > 0
}

// pendingUntilPrepared waits until driver d prepared the claim, and checks
// on every poll that the pod stays Pending as long as it has not: a pod
// must not start (or fail) while its claim is not prepared. It returns the
// call record at that point.
func pendingUntilPrepared(ctx context.Context, f *framework.Framework, pod *v1.Pod, d driverRef, claimUID string, timeout time.Duration) calls.Report {
	ginkgo.GinkgoHelper()
	var rep calls.Report
	harness.Cause("not-prepared", func() {
		gomega.Eventually(ctx, func(ctx context.Context) error {
			// The pod first: if it left Pending, the record read after it
			// must already show the success that let it.
			p, err := getPod(ctx, f.ClientSet, pod)
			if err != nil {
				return err
			}
			rep, err = draClient().On(pod.Spec.NodeName, d).Calls(ctx, claimUID)
			if err != nil {
				return err
			}
			if p.Status.Phase != v1.PodPending && !prepared(rep) {
				harness.Cause("started-unprepared", func() {
					framework.Failf("pod %s is %s although %s has not prepared claim %s (%d prepare calls, %d failed)",
						pod.Name, p.Status.Phase, d.Name, claimUID, rep.Summary.PrepareCalls, rep.Summary.PrepareFailed)
				})
			}
			if !prepared(rep) {
				return fmt.Errorf("%s has not prepared claim %s yet: %d prepare calls, %d failed; pod %s",
					d.Name, claimUID, rep.Summary.PrepareCalls, rep.Summary.PrepareFailed, p.Status.Phase)
			}
			return nil
		}).WithTimeout(timeout).WithPolling(poll).Should(gomega.Succeed())
	})
	return rep
}

// waitRunning waits for the pod to run, after its claims were prepared.
func waitRunning(ctx context.Context, f *framework.Framework, pod *v1.Pod) {
	ginkgo.GinkgoHelper()
	harness.Cause("not-running", func() {
		framework.ExpectNoError(e2epod.WaitTimeoutForPodRunningInNamespace(ctx, f.ClientSet, pod.Name, pod.Namespace, startSlack),
			"pod %s must run once its claims are prepared", pod.Name)
	})
}

// deleteAndWaitGone deletes the pod and waits until it is gone.
func deleteAndWaitGone(ctx context.Context, f *framework.Framework, pod *v1.Pod, timeout time.Duration) {
	ginkgo.GinkgoHelper()
	err := f.ClientSet.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{})
	if !apierrors.IsNotFound(err) {
		harness.Ours(err, "delete pod %s", pod.Name)
	}
	harness.Cause("not-deleted", func() {
		framework.ExpectNoError(e2epod.WaitForPodNotFoundInNamespace(ctx, f.ClientSet, pod.Name, pod.Namespace, timeout),
			"pod %s must be gone", pod.Name)
	})
}

// gaps returns the time between consecutive calls of method m.
func gaps(rep calls.Report, m calls.Method) []time.Duration {
	var out []time.Duration
	var last time.Time
	for _, c := range rep.Calls {
		if c.Method != m {
			continue
		}
		if !last.IsZero() {
			out = append(out, c.Time.Sub(last))
		}
		last = c.Time
	}
	return out
}

func durations(ds []time.Duration) string {
	s := make([]string, 0, len(ds))
	for _, d := range ds {
		s = append(s, d.Round(100*time.Millisecond).String())
	}
	return "[" + strings.Join(s, " ") + "]"
}

// report records a measured value or an observed text in the spec's
// report (JUnit, e2e.log), where the run's summary can quote it.
func report(name, format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	framework.Logf("%s: %s", name, text)
	ginkgo.AddReportEntry(name, text)
}

// checkPrepareEvents checks that every failed prepare call of the record
// produced a Warning event FailedPrepareDynamicResources whose message is
// the kubelet's wrapping of exactly the driver's error for that call, and
// that each names the driver, the claim and the given devices.
func checkPrepareEvents(ctx context.Context, f *framework.Framework, pod *v1.Pod, claimName string, rep calls.Report, d driverRef, devices ...string) []v1.Event {
	var want []string
	for _, c := range rep.Calls {
		if c.Method == calls.Prepare && c.Outcome == calls.Failed {
			want = append(want, "Failed to prepare dynamic resources: prepare dynamic resources: NodePrepareResources failed for ResourceClaim "+claimName+": "+c.Error)
		}
	}
	var events []v1.Event
	harness.Cause("event-missing", func() {
		gomega.Eventually(ctx, func(ctx context.Context) ([]string, error) {
			var err error
			events, err = prepareEvents(ctx, f.ClientSet, pod)
			var got []string
			for _, e := range events {
				got = append(got, e.Message)
			}
			return got, err
		}).WithTimeout(time.Minute).WithPolling(poll).Should(gomega.ConsistOf(want),
			"one FailedPrepareDynamicResources event per failed prepare call, carrying the driver's error")
		for i, e := range events {
			gomega.Expect(e.Type).To(gomega.Equal(v1.EventTypeWarning), "event %d", i)
			gomega.Expect(e.Source.Component).To(gomega.Equal("kubelet"), "event %d", i)
		}
	})
	harness.Cause("event-unnamed", func() {
		for i, e := range events {
			mustName := []string{"driver " + d.Name, "claim " + pod.Namespace + "/" + claimName, "ResourceClaim " + claimName}
			for _, dev := range devices {
				mustName = append(mustName, "device="+dev)
			}
			for _, s := range mustName {
				gomega.Expect(e.Message).To(gomega.ContainSubstring(s), "event %d must name %q", i, s)
			}
			report(fmt.Sprintf("event %d", i+1), "%s %s: %s", e.Type, e.Reason, e.Message)
		}
	})
	return events
}

// expectNotPreparedAgain: the driver's record of a prepared claim stays
// as it is (prepared) for a full kubelet resync and its tolerance, the
// time in which a kubelet that lost track of the preparation would call
// again.
func expectNotPreparedAgain(ctx context.Context, node string, claim *resourceapi.ResourceClaim, prepared calls.Summary) {
	ginkgo.GinkgoHelper()
	harness.Cause("prepared-again", func() {
		gomega.Consistently(ctx, func(ctx context.Context) calls.Summary {
			rep, err := draClient().On(node, firstDriver).Calls(ctx, string(claim.UID))
			harness.Ours(err, "read the driver's call record")
			return rep.Summary
		}).WithTimeout(prepareRetryMax()+prepareRetryTolerance).WithPolling(5*time.Second).Should(gomega.Equal(prepared),
			"a prepared claim of a running pod must not be prepared again")
	})
}
