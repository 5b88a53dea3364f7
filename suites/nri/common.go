package nri

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/kubernetes/test/e2e/framework"
	e2epod "k8s.io/kubernetes/test/e2e/framework/pod"

	"github.com/faultline-k8s/faultline/fakes/nri/faults"
	"github.com/faultline-k8s/faultline/fakes/nri/nriclient"
	"github.com/faultline-k8s/faultline/fakes/nri/record"
	"github.com/faultline-k8s/faultline/fakes/nri/runtimestate"
	"github.com/faultline-k8s/faultline/suites/harness"
)

// createVictim creates pod, registers the failure dump for it and waits
// until it is scheduled; it returns the pod and its node.
func createVictim(ctx context.Context, f *framework.Framework, pod *v1.Pod) (*v1.Pod, string) {
	ginkgo.GinkgoHelper()
	pod = e2epod.NewPodClient(f).Create(ctx, pod)
	DumpOnFailure(f.ClientSet, pod)
	framework.ExpectNoError(e2epod.WaitForPodScheduled(ctx, f.ClientSet, pod.Namespace, pod.Name))
	pod, err := f.ClientSet.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	framework.ExpectNoError(err)
	return pod, pod.Spec.NodeName
}

// getPod re-reads pod.
func getPod(ctx context.Context, f *framework.Framework, pod *v1.Pod) *v1.Pod {
	ginkgo.GinkgoHelper()
	p, err := f.ClientSet.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	framework.ExpectNoError(err)
	return p
}

// deleteNow deletes pod without grace period.
func deleteNow(ctx context.Context, f *framework.Framework, pod *v1.Pod) {
	ginkgo.GinkgoHelper()
	framework.ExpectNoError(f.ClientSet.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name,
		metav1.DeleteOptions{GracePeriodSeconds: new(int64)}))
}

// attemptID tells the attempts at one event apart: each attempt to create
// a sandbox or a container gets a new ID from the runtime.
func attemptID(e record.Event) string {
	if faults.IsContainerEvent(e.Event) {
		return e.ContainerID
	}
	return e.PodSandboxID
}

// findAttempt returns the record of event with the given attempt ID, or nil.
func findAttempt(events []record.Event, event, id string) *record.Event {
	for _, e := range nriclient.Only(events, event) {
		if attemptID(e) == id {
			return &e
		}
	}
	return nil
}

// eventsOf reads an instance's record of pod, failing the spec on error.
func eventsOf(ctx context.Context, f *framework.Framework, node string, inst Instance, pod *v1.Pod) []record.Event {
	ginkgo.GinkgoHelper()
	events, err := plugins().On(node, inst).Events(ctx, string(pod.UID))
	framework.ExpectNoError(err)
	return events
}

// eventuallyRecorded waits until the instance recorded event for pod with
// a finished result, and returns the records of that event.
func eventuallyRecorded(ctx context.Context, f *framework.Framework, node string, inst Instance, pod *v1.Pod, event string, want record.Result, timeout time.Duration) []record.Event {
	ginkgo.GinkgoHelper()
	var got []record.Event
	gomega.Eventually(ctx, func(ctx context.Context) ([]record.Result, error) {
		events, err := plugins().On(node, inst).Events(ctx, string(pod.UID))
		got = nriclient.Only(events, event)
		return nriclient.Results(events, event), err
	}).WithTimeout(timeout).Should(gomega.ContainElement(want),
		"%s must record %s of pod %s with result %s", inst, event, pod.Name, want)
	return got
}

// runtimeStateOf reads the runtime's state of pod, failing the spec on error.
func runtimeStateOf(ctx context.Context, f *framework.Framework, node string, pod *v1.Pod) *runtimestate.State {
	ginkgo.GinkgoHelper()
	s, err := plugins().RuntimeState(ctx, node, string(pod.UID))
	framework.ExpectNoError(err)
	return s
}

// expectOnlyAttempt checks that the runtime holds exactly one sandbox and
// one container per container name for pod, that they are the ready ones,
// and that none of the failed attempts' IDs is left.
func expectOnlyAttempt(ctx context.Context, f *framework.Framework, node string, pod *v1.Pod, failedIDs []string) *runtimestate.State {
	ginkgo.GinkgoHelper()
	s := runtimeStateOf(ctx, f, node, pod)
	desc := FormatState(s)
	if len(s.Sandboxes) == 0 {
		harness.Cause("not-running", func() { framework.Failf("the runtime holds no sandbox of the running pod:\n%s", desc) })
	}
	harness.Cause("leftover-sandbox", func() {
		gomega.Expect(s.Sandboxes).To(gomega.HaveLen(1), "the runtime must hold exactly the pod's one sandbox, no leftovers of failed attempts:\n%s", desc)
		for _, id := range failedIDs {
			gomega.Expect(slices.Contains(sandboxIDs(s), id)).To(gomega.BeFalseBecause(
				"the failed attempt %.12s must leave nothing behind in the runtime:\n%s", id, desc))
		}
	})
	harness.Cause("leftover-container", func() {
		gomega.Expect(len(s.Containers)).To(gomega.BeNumerically("<=", len(pod.Spec.Containers)),
			"the runtime must hold exactly one container per container of the pod, no leftovers of failed attempts:\n%s", desc)
		for _, id := range failedIDs {
			gomega.Expect(slices.Contains(containerIDs(s), id)).To(gomega.BeFalseBecause(
				"the failed attempt %.12s must leave nothing behind in the runtime:\n%s", id, desc))
		}
	})
	harness.Cause("not-running", func() {
		gomega.Expect(s.Sandboxes[0].State).To(gomega.Equal("SANDBOX_READY"), desc)
		gomega.Expect(s.Containers).To(gomega.HaveLen(len(pod.Spec.Containers)),
			"the runtime must hold one running container per container of the pod:\n%s", desc)
		for _, c := range s.Containers {
			gomega.Expect(c.State).To(gomega.Equal("CONTAINER_RUNNING"), desc)
			gomega.Expect(c.PodSandboxID).To(gomega.Equal(s.Sandboxes[0].ID), desc)
		}
	})
	return s
}

// heldIDs are the IDs of every sandbox and container the runtime holds.
func heldIDs(s *runtimestate.State) []string {
	return append(sandboxIDs(s), containerIDs(s)...)
}

// leakCheck bounds how soon after a failed attempt the runtime must hold
// nothing of it. The runtime removes what a failing request made in that
// request; the kubelet's garbage collection, which would remove a listed
// leftover too, runs only once a minute, so a later look could credit the
// runtime with the kubelet's cleanup.
const leakCheck = 5 * time.Second

// expectAttemptGone checks, right after an attempt failed, that the runtime
// holds no sandbox or container with its ID.
func expectAttemptGone(ctx context.Context, node string, pod *v1.Pod, id string) {
	ginkgo.GinkgoHelper()
	// Not gomega.Eventually: what the runtime last held says which leftover
	// it is, and a state never read is faultline's failure.
	var s *runtimestate.State
	var readErr error
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, leakCheck, true, func(ctx context.Context) (bool, error) {
		st, err := plugins().RuntimeState(ctx, node, string(pod.UID))
		if err != nil {
			readErr = err
			return false, nil //nolint:nilerr // the relay may blink; poll again
		}
		s, readErr = st, nil
		return !slices.Contains(heldIDs(st), id), nil
	})
	if err == nil {
		return
	}
	if s == nil {
		harness.Ours(readErr, "read the runtime's state of pod %s", pod.Name)
	}
	msg := fmt.Sprintf("the failed attempt %.12s must leave nothing behind in the runtime, already within %s of its failure:\n%s", id, leakCheck, FormatState(s))
	if slices.Contains(sandboxIDs(s), id) {
		harness.Cause("leftover-sandbox", func() { framework.Failf("%s", msg) })
	}
	harness.Cause("leftover-container", func() { framework.Failf("%s", msg) })
}

// expectNoFailureEvents checks that the kubelet reported no failed CRI
// request for pod.
func expectNoFailureEvents(ctx context.Context, f *framework.Framework, pod *v1.Pod) {
	ginkgo.GinkgoHelper()
	events, err := harness.PodEvents(ctx, f.ClientSet, pod)
	harness.Ours(err)
	for _, e := range events {
		if e.Type == v1.EventTypeWarning {
			switch e.Reason {
			case "FailedCreatePodSandBox", "Failed", "FailedKillPod", "BackOff", "FailedSync":
				harness.Cause("failure-event", func() {
					framework.Failf("the kubelet reported a failed request for pod %s: %s %s: %s\nall events:\n%s",
						pod.Name, e.Reason, e.Type, e.Message, harness.FormatPodEvents(events))
				})
			}
		}
	}
}
