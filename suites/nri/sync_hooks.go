package nri

// NRI-SYNC-ERROR-FAILS-REQUEST: an error in a synchronous hook (RunPodSandbox,
// CreateContainer, UpdateContainer) fails that CRI request; the pod shows
// the plugin's message in its events or status; the request succeeds once
// the fault is cleared; nothing leaks.

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/test/e2e/framework"
	e2epod "k8s.io/kubernetes/test/e2e/framework/pod"

	"github.com/faultline-k8s/faultline/fakes/nri/faults"
	"github.com/faultline-k8s/faultline/fakes/nri/nriclient"
	"github.com/faultline-k8s/faultline/fakes/nri/record"
	"github.com/faultline-k8s/faultline/fakes/nri/runtimestate"
	"github.com/faultline-k8s/faultline/suites/harness"
)

var _ = describe("NRI synchronous hooks", framework.WithFeature(featureNRI), framework.WithLabel("ci"), func() {
	f := framework.NewDefaultFramework("nri-sync")

	// failures is how often each spec's fault fires before it clears:
	// twice, so a retry that fails again is seen too.
	const failures = 2

	// A creation a plugin fails: the same steps for the sandbox and the
	// container, each told by its own witnesses.
	for _, tc := range []struct {
		event, pod, what string
		// container the fault targets ("" for the sandbox).
		container string
		// reason of the kubelet's event that carries the plugin's message.
		reason string
		// statusShows, when set, checks the message where the pod's status
		// shows it before the event.
		statusShows func(ctx context.Context, pod *v1.Pod, want string)
		// idOf is the ID of the object an event is about.
		idOf func(record.Event) string
		// running is the ID of the object of its kind the runtime runs.
		running func(*runtimestate.State) string
		// object is what the runtime runs, in the failure message.
		object string
	}{
		{
			event: "RunPodSandbox", pod: "run-sandbox-error", reason: "FailedCreatePodSandBox",
			what:    "a plugin error in RunPodSandbox fails sandbox creation with the plugin's message, until the fault clears, and leaves no sandbox behind",
			idOf:    func(e record.Event) string { return e.PodSandboxID },
			running: func(s *runtimestate.State) string { return s.Sandboxes[0].ID },
			object:  "the pod must run in the sandbox whose RunPodSandbox passed",
		},
		{
			event: "CreateContainer", pod: "create-container-error", container: TestContainer, reason: "Failed",
			what:        "a plugin error in CreateContainer fails container creation with the plugin's message in the container status, until the fault clears, and leaves no container behind",
			statusShows: func(ctx context.Context, pod *v1.Pod, want string) { containerWaitsWith(ctx, f, pod, want) },
			idOf:        func(e record.Event) string { return e.ContainerID },
			running:     func(s *runtimestate.State) string { return s.Containers[0].ID },
			object:      "the running container must be the one whose CreateContainer passed",
		},
	} {
		framework.It(tc.what, harness.Checks("NRI-SYNC-ERROR-FAILS-REQUEST"), func(ctx context.Context) {
			harness.Floor(floorRetries(tc.event, failures)...)
			pod, node := createVictim(ctx, f, VictimPod(tc.pod,
				B.Fault(tc.event, faults.Fault{Mode: faults.Error, Times: failures, Container: tc.container})))
			want := B.ErrorText(tc.event, pod, tc.container)

			if tc.statusShows != nil {
				harness.Cause("message-missing", func() { tc.statusShows(ctx, pod, want) })
			}
			first := eventuallyRecorded(ctx, f, node, B, pod, tc.event, record.Error, retryTimeout(1))[0]
			expectAttemptGone(ctx, node, pod, tc.idOf(first))
			var ev *v1.Event
			harness.Cause("message-missing", func() { ev = EventuallyPodEvent(ctx, f.ClientSet, pod, tc.reason, want, retryTimeout(1)) })
			ginkgo.By("the kubelet reports: " + ev.Message)

			harness.Cause("not-running", func() {
				framework.ExpectNoError(e2epod.WaitTimeoutForPodRunningInNamespace(ctx, f.ClientSet, pod.Name, pod.Namespace, retryTimeout(failures)),
					"once the fault has fired %d times, %s must succeed and the pod run", failures, tc.event)
			})

			calls := nriclient.Only(eventsOf(ctx, f, node, B, pod), tc.event)
			harness.Cause("retries-wrong", func() {
				gomega.Expect(nriclient.Results(calls, tc.event)).To(gomega.Equal([]record.Result{record.Error, record.Error, record.OK}),
					"%s must have failed %s %d times, then let it pass:\n%s", B, tc.event, failures, nriclient.FormatEvents(calls))
			})
			var failed []string
			for _, c := range calls[:failures] {
				failed = append(failed, tc.idOf(c))
			}
			s := expectOnlyAttempt(ctx, f, node, pod, failed)
			harness.Cause("wrong-attempt-runs", func() {
				gomega.Expect(tc.running(s)).To(gomega.Equal(tc.idOf(calls[failures])), "%s:\n%s", tc.object, FormatState(s))
			})
		})
	}

	framework.It("a plugin error in UpdateContainer fails the in-place resize with the plugin's message, until the fault clears; the container keeps running", harness.Checks("NRI-SYNC-ERROR-FAILS-REQUEST"), func(ctx context.Context) {
		// No timer of the kubelet delays the resize's retry (3 s for the
		// whole spec in the recorded runs).
		harness.Floor()
		pod := VictimPod("update-container-error", B.Fault("UpdateContainer", faults.Fault{Mode: faults.Error, Times: 1}))
		pod.Spec.Containers[0].Resources = v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("10m"), v1.ResourceMemory: resource.MustParse("16Mi")},
			Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("64Mi")},
		}
		pod, node := createVictim(ctx, f, pod)
		harness.Cause("not-running", func() {
			framework.ExpectNoError(e2epod.WaitTimeoutForPodRunningInNamespace(ctx, f.ClientSet, pod.Name, pod.Namespace, podStart))
		})
		before := runtimeStateOf(ctx, f, node, pod)
		want := B.ErrorText("UpdateContainer", pod, TestContainer)

		ginkgo.By("resizing the container's CPU limit in place: the kubelet sends UpdateContainerResources")
		patch := fmt.Sprintf(`{"spec":{"containers":[{"name":%q,"resources":{"limits":{"cpu":"200m"}}}]}}`, TestContainer)
		_, err := f.ClientSet.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType,
			[]byte(patch), metav1.PatchOptions{}, "resize")
		harness.Ours(err, "resize the pod")

		var ev *v1.Event
		harness.Cause("message-missing", func() { ev = EventuallyPodEvent(ctx, f.ClientSet, pod, "ResizeError", want, retryTimeout(1)) })
		ginkgo.By("the kubelet reports: " + ev.Message)

		harness.Cause("not-resized", func() {
			gomega.Eventually(ctx, func(ctx context.Context) (string, error) {
				p, err := f.ClientSet.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
				if err != nil {
					return "", err
				}
				for _, c := range p.Status.Conditions {
					if c.Type == v1.PodResizeInProgress || c.Type == v1.PodResizePending {
						return fmt.Sprintf("condition %s: %s %s", c.Type, c.Reason, c.Message), nil
					}
				}
				st := containerStatus(p, TestContainer)
				if st == nil || st.Resources == nil {
					return "no resources in the container status", nil
				}
				return "cpu limit " + st.Resources.Limits.Cpu().String(), nil
			}).WithTimeout(retryTimeout(1)).Should(gomega.Equal("cpu limit 200m"),
				"once the fault has fired, UpdateContainer must succeed and the resize complete")
		})

		updates := nriclient.Only(eventsOf(ctx, f, node, B, pod), "UpdateContainer")
		results := nriclient.Results(updates, "UpdateContainer")
		harness.Cause("retries-wrong", func() {
			gomega.Expect(results).To(gomega.HaveLen(2), "one failed and one passed UpdateContainer:\n%s", nriclient.FormatEvents(updates))
			gomega.Expect(results).To(gomega.Equal([]record.Result{record.Error, record.OK}),
				"%s must have failed UpdateContainer once, then let it pass:\n%s", B, nriclient.FormatEvents(updates))
		})

		after := runtimeStateOf(ctx, f, node, pod)
		p := getPod(ctx, f, pod)
		harness.Cause("container-replaced", func() {
			gomega.Expect(containerIDs(after)).To(gomega.Equal(containerIDs(before)),
				"a failed update must not replace the container:\nbefore %s\nafter %s", FormatState(before), FormatState(after))
			gomega.Expect(sandboxIDs(after)).To(gomega.Equal(sandboxIDs(before)), "nor the sandbox")
			gomega.Expect(containerStatus(p, TestContainer).RestartCount).To(gomega.BeZero(), "the container keeps running")
		})
	})
})

// containerWaitsWith waits until the pod's container waits with want in its
// status (CreateContainerError: <the plugin's message>).
func containerWaitsWith(ctx context.Context, f *framework.Framework, pod *v1.Pod, want string) {
	var waiting string
	gomega.Eventually(ctx, func(ctx context.Context) (string, error) {
		p, err := f.ClientSet.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if st := containerStatus(p, TestContainer); st != nil && st.State.Waiting != nil {
			waiting = st.State.Waiting.Reason + ": " + st.State.Waiting.Message
		}
		return waiting, nil
	}).WithTimeout(retryTimeout(1)).Should(gomega.ContainSubstring(want),
		"the container status must carry the plugin's error while creation fails")
	ginkgo.By("the container waits with " + waiting)
	gomega.Expect(waiting).To(gomega.HavePrefix("CreateContainerError: "))
}
