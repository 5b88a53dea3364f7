package nri

// NRI-ASYNC-ERROR-IGNORED: errors in asynchronous or post hooks (PostCreateContainer,
// PostStartContainer, StopContainer, RemoveContainer, RemovePodSandbox) do
// not fail the pod's lifecycle: the pod starts, and deletes completely.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"k8s.io/kubernetes/test/e2e/framework"
	e2epod "k8s.io/kubernetes/test/e2e/framework/pod"

	"github.com/faultline-k8s/faultline/fakes/nri/faults"
	"github.com/faultline-k8s/faultline/fakes/nri/nriclient"
	"github.com/faultline-k8s/faultline/fakes/nri/record"
	"github.com/faultline-k8s/faultline/suites/harness"
)

var _ = describe("NRI asynchronous and post hooks", framework.WithFeature(featureNRI), func() {
	f := framework.NewDefaultFramework("nri-async")

	for _, event := range []string{"PostCreateContainer", "PostStartContainer", "StopContainer", "RemoveContainer", "RemovePodSandbox"} {
		framework.It(fmt.Sprintf("a plugin error in %s does not fail the pod's lifecycle: the pod starts, and deletes completely from the runtime", event), harness.Checks("NRI-ASYNC-ERROR-IGNORED"), func(ctx context.Context) {
			harness.Floor(floorContainerGC)
			pod, node := createVictim(ctx, f, VictimPod(strings.ToLower("async-"+event), B.Fault(event, faults.Fault{Mode: faults.Error})))
			container := ""
			if faults.IsContainerEvent(event) {
				container = TestContainer
			}
			want := B.ErrorText(event, pod, container)

			harness.Cause("not-running", func() {
				framework.ExpectNoError(e2epod.WaitTimeoutForPodRunningInNamespace(ctx, f.ClientSet, pod.Name, pod.Namespace, podStart),
					"the pod must start although %s fails %s", B, event)
			})
			started := runtimeStateOf(ctx, f, node, pod)
			harness.Cause("not-running", func() {
				gomega.Expect(started.Sandboxes).To(gomega.HaveLen(1), FormatState(started))
				gomega.Expect(started.Containers).To(gomega.HaveLen(1), FormatState(started))
			})

			ginkgo.By("deleting the pod")
			deleteNow(ctx, f, pod)
			harness.Cause("not-deleted", func() {
				framework.ExpectNoError(e2epod.WaitForPodNotFoundInNamespace(ctx, f.ClientSet, pod.Name, pod.Namespace, podDeletion),
					"the pod must be deleted although %s fails %s", B, event)
			})
			harness.Cause("not-removed", func() {
				gomega.Eventually(ctx, func(ctx context.Context) (string, error) {
					s, err := plugins().RuntimeState(ctx, node, string(pod.UID))
					if err != nil {
						return "", err
					}
					return FormatState(s), nil
				}).WithTimeout(deletionTimeout()).WithPolling(2*time.Second).Should(gomega.HaveSuffix("0 sandbox(es), 0 container(s)\n"),
					"the runtime must remove every sandbox and container of the deleted pod (the kubelet's garbage collection runs every %s)", containerGCPeriod)
			})

			fired := eventuallyRecorded(ctx, f, node, B, pod, event, record.Error, podDeletion)
			ginkgo.By(fmt.Sprintf("%s failed %s %d time(s): %s", B, event, len(nriclient.Only(fired, event)), want))

			events, err := harness.PodEvents(ctx, f.ClientSet, pod)
			harness.Ours(err)
			harness.Cause("failure-event", func() {
				for _, e := range events {
					gomega.Expect(e.Message).NotTo(gomega.ContainSubstring(want),
						"an error in %s must not surface as a failure of the pod's lifecycle: %s event %s", event, e.Type, e.Reason)
				}
			})
			expectNoFailureEvents(ctx, f, pod)
		})
	}
})
