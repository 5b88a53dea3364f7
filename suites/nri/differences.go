package nri

// NRI-START-ERROR-FAILS-REQUEST and NRI-STOP-SANDBOX-ERROR-FAILS-REQUEST:
// StartContainer and StopPodSandbox, where runtimes are known
// to differ. The NRI design: "If a plugin returns an error for a request,
// NRI does not call the remaining plugins. It returns the error to the
// runtime, and the runtime fails the pod or container operation." So a
// plugin error in StartContainer must fail the CRI StartContainer request,
// and one in StopPodSandbox the CRI StopPodSandbox request; the kubelet
// then retries. A runtime that only logs the error departs from the design:
// the spec fails with the discrepancy it saw (cause request-succeeded), and
// the stack's expectations (judge/expectations) say whether it is known.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/kubernetes/test/e2e/framework"
	e2epod "k8s.io/kubernetes/test/e2e/framework/pod"
	"k8s.io/utils/ptr"

	"github.com/faultline-k8s/faultline/fakes/nri/faults"
	"github.com/faultline-k8s/faultline/fakes/nri/nriclient"
	"github.com/faultline-k8s/faultline/fakes/nri/record"
	"github.com/faultline-k8s/faultline/suites/harness"
)

// eventDelivery bounds the kubelet's event recorder getting an event to the
// API server (it sends asynchronously, in the background).
const eventDelivery = 15 * time.Second

var _ = describe("NRI hooks where runtimes differ", framework.WithFeature(featureNRI), func() {
	f := framework.NewDefaultFramework("nri-differ")

	framework.It("a plugin error in StartContainer fails the CRI StartContainer request with the plugin's message, and the container starts on the kubelet's retry once the fault clears", harness.Checks("NRI-START-ERROR-FAILS-REQUEST"), func(ctx context.Context) {
		// The kubelet restarts a container the first time without back-off.
		harness.Floor()
		pod := VictimPod("start-container-error", B.Fault("StartContainer", faults.Fault{Mode: faults.Error, Times: 1}))
		pod.Spec.RestartPolicy = v1.RestartPolicyAlways
		pod, node := createVictim(ctx, f, pod)
		rt := harness.Cluster()
		want := B.ErrorText("StartContainer", pod, TestContainer)

		starts := eventuallyRecorded(ctx, f, node, B, pod, "StartContainer", record.Error, podStart)
		failedID := starts[0].ContainerID
		// The pod phase is Running also while the container waits to be
		// restarted: wait for the container itself.
		harness.Cause("not-running", func() {
			framework.ExpectNoError(e2epod.WaitForContainerRunning(ctx, f.ClientSet, pod.Namespace, pod.Name, TestContainer, crashLoopBackOff+podStart),
				"the container must run, on the first attempt or on the kubelet's retry")
		})

		st := containerStatus(getPod(ctx, f, pod), TestContainer)
		if containerIDOf(st.ContainerID) == failedID {
			// Known to the expectations or not, the cause is the same.
			harness.Cause("request-succeeded", func() {
				framework.Failf("%s", Discrepancy(rt, "StartContainer", fmt.Sprintf(
					"%s failed StartContainer of container %.12s, yet that container runs: the CRI StartContainer request succeeded", B, failedID)))
			})
		}
		var ev *v1.Event
		harness.Cause("message-missing", func() { ev = EventuallyPodEvent(ctx, f.ClientSet, pod, "Failed", want, eventDelivery) })
		ginkgo.By("the kubelet reports: " + ev.Message)
		harness.Cause("retries-wrong", func() {
			gomega.Expect(st.RestartCount).To(gomega.BeNumerically(">=", 1), "the failed start counts as a container restart")
		})
		if t := st.LastTerminationState.Terminated; t != nil {
			ginkgo.By(fmt.Sprintf("the failed container's last state: %s, exit code %d: %s", t.Reason, t.ExitCode, t.Message))
		}

		starts = nriclient.Only(eventsOf(ctx, f, node, B, pod), "StartContainer")
		harness.Cause("retries-wrong", func() {
			gomega.Expect(nriclient.Results(starts, "StartContainer")).To(gomega.Equal([]record.Result{record.Error, record.OK}),
				"%s must fail the first StartContainer and pass the retry:\n%s", B, nriclient.FormatEvents(starts))
		})
		laterSaw := findAttempt(eventsOf(ctx, f, node, C, pod), "StartContainer", failedID)
		harness.Cause("later-plugin-called", func() {
			gomega.Expect(laterSaw).To(gomega.BeNil(), "the error stops the chain: %s must not see the failed StartContainer", C)
		})
		s := runtimeStateOf(ctx, f, node, pod)
		harness.Cause("wrong-attempt-runs", func() {
			running := 0
			for _, c := range s.Containers {
				if c.State == "CONTAINER_RUNNING" {
					running++
					gomega.Expect(c.ID).NotTo(gomega.Equal(failedID), "the running container is the retry:\n%s", FormatState(s))
				}
			}
			gomega.Expect(running).To(gomega.Equal(1), "exactly one running container:\n%s", FormatState(s))
		})
	})

	framework.It("a plugin error in StopPodSandbox fails the CRI StopPodSandbox request with the plugin's message, and the pod is deleted on the kubelet's retry once the fault clears", harness.Checks("NRI-STOP-SANDBOX-ERROR-FAILS-REQUEST"), func(ctx context.Context) {
		// The grace period is faultline's; no timer of the kubelet delays
		// the retried stop (it came within seconds: CRI-O, 6 s for the
		// whole spec).
		harness.Floor()
		pod, node := createVictim(ctx, f, VictimPod("stop-sandbox-error", B.Fault("StopPodSandbox", faults.Fault{Mode: faults.Error, Times: 1})))
		rt := harness.Cluster()
		want := B.ErrorText("StopPodSandbox", pod, "")
		harness.Cause("not-running", func() {
			framework.ExpectNoError(e2epod.WaitTimeoutForPodRunningInNamespace(ctx, f.ClientSet, pod.Name, pod.Namespace, podStart))
		})

		// A graceful deletion: the pod object stays until the kubelet has
		// stopped everything (grace 0 would remove it from the API at once,
		// and its disappearance would prove nothing about the kubelet).
		ginkgo.By("deleting the pod gracefully: the kubelet stops its sandbox")
		harness.Ours(f.ClientSet.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name,
			metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](1)}))
		eventuallyRecorded(ctx, f, node, B, pod, "StopPodSandbox", record.Error, podDeletion)
		harness.Cause("not-deleted", func() {
			framework.ExpectNoError(e2epod.WaitForPodNotFoundInNamespace(ctx, f.ClientSet, pod.Name, pod.Namespace, kubeletRetry+podDeletion),
				"the kubelet must finish the pod's deletion once the fault has fired")
		})

		// Not gomega.Eventually: a timeout must fail with the discrepancy
		// as the first line, which is what the report shows.
		var found *v1.Event
		var all []v1.Event
		// Faultline's failure only when no read succeeded: the last read
		// fails whenever the poll's own deadline cuts it short (seen:
		// "client rate limiter Wait returned an error: context deadline
		// exceeded"), which says nothing about the events.
		var readErr error
		read := false
		pollErr := wait.PollUntilContextTimeout(ctx, time.Second, eventDelivery, true, func(ctx context.Context) (bool, error) {
			events, err := harness.PodEvents(ctx, f.ClientSet, pod)
			if err != nil {
				readErr = err
				return false, nil //nolint:nilerr // the API server may blink; poll again
			}
			all, read = events, true
			found = FindEvent(all, "FailedKillPod", want)
			return found != nil, nil
		})
		if found == nil && !read {
			harness.Ours(readErr, "read the pod's events (%v)", pollErr)
		}
		if found == nil {
			// Known to the expectations or not, the cause is the same.
			harness.Cause("request-succeeded", func() {
				framework.Failf("%s\n(waited %s for the event: %v)\nevents of the pod:\n%s", Discrepancy(rt, "StopPodSandbox", fmt.Sprintf(
					"%s failed StopPodSandbox, yet the kubelet got no error: no FailedKillPod event with the plugin's message, the pod was deleted on the first attempt", B)),
					eventDelivery, pollErr, harness.FormatPodEvents(all))
			})
		}
		ginkgo.By("the kubelet reports: " + found.Message)
		ginkgo.By("and its retry stopped the sandbox: the plugin saw a second StopPodSandbox, which succeeded")
		var stops []record.Event
		harness.Cause("not-retried", func() { stops = eventuallyRecorded(ctx, f, node, B, pod, "StopPodSandbox", record.OK, podDeletion) })
		harness.Cause("retries-wrong", func() {
			gomega.Expect(stops[0].Result).To(gomega.Equal(record.Error), "the first StopPodSandbox is the one that failed:\n%s", nriclient.FormatEvents(stops))
		})
	})
})

// containerIDOf strips the runtime prefix of a status container ID
// ("containerd://abc" -> "abc").
func containerIDOf(statusID string) string {
	if _, id, ok := strings.Cut(statusID, "://"); ok {
		return id
	}
	return statusID
}
