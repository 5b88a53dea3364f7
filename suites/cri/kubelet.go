package cri

// Through the kubelet: with the kubelet's own deadline (runtimeRequestTimeout;
// RunPodSandbox gets twice that), a pod whose sandbox and container creation
// outlast it must still end Running with exactly one sandbox and one
// container, and its events must say what happened.

import (
	"context"
	"fmt"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/kubernetes/test/e2e/framework"
	e2epod "k8s.io/kubernetes/test/e2e/framework/pod"
	admissionapi "k8s.io/pod-security-admission/api"

	"github.com/faultline-k8s/faultline/fakes/runcslow/ociruntime"
	"github.com/faultline-k8s/faultline/suites/harness"
	"github.com/faultline-k8s/faultline/vocab/needs"
)

// kubeletRetry bounds the kubelet's next sync of a pod after a failed one
// (backOffPeriod 10 s plus jitter); kubeletBackOff is that back-off
// without its jitter.
const (
	kubeletRetry   = kubeletBackOff * 3 / 2
	kubeletBackOff = 10 * time.Second
)

var _ = describe("", "kubelet with slow creation", framework.WithFeature(featureResourceCache), framework.WithLabel("ResourceCache"), framework.WithSlow(), func() {
	f := framework.NewDefaultFramework("cri-kubelet")
	f.NamespacePodSecurityLevel = admissionapi.LevelRestricted

	framework.It("a pod whose sandbox and container creation outlast the kubelet's deadline runs with one sandbox and one container", harness.Checks("CRI-KUBELET-SLOW-CREATION-RUNS"), harness.Needs(needs.RuntimeRequestTimeout), func(ctx context.Context) {
		n := connectNode(ctx, f)
		timeout := harness.Cluster().RuntimeRequestTimeout
		if timeout == 0 {
			framework.Failf("the kubelet's runtimeRequestTimeout is unknown (%s)", harness.Cluster().Sources["runtime-request-timeout"])
		}
		sandboxDelay := 2*timeout + 5*time.Second
		containerDelay := timeout + 5*time.Second
		token := specToken(f.Namespace)
		pod := harness.TestPod("slow", "slow pod "+token)
		pod.Spec.RuntimeClassName = new(string)
		*pod.Spec.RuntimeClassName = slowHandler
		// CRI-O runs an infra container (the OCI create runc-slow delays) only
		// for pods that share their PID namespace.
		pod.Spec.ShareProcessNamespace = new(bool)
		*pod.Spec.ShareProcessNamespace = true
		if !n.Runtime.CreateContainerRunsOCICreate {
			// containerd's CreateContainer runs no OCI create, and NRI cuts a
			// stalled plugin off at its request timeout, far below the
			// kubelet's: only the sandbox can be made slower than the kubelet.
			ginkgo.By(fmt.Sprintf("%s: only the sandbox creation is slowed (CreateContainer runs no OCI create)", n.Runtime))
			containerDelay = 0
		}
		// The kubelet's deadlines, and the retry of the timed-out sandbox
		// after the pod worker's back-off; a failed CreateContainer's first
		// retry comes at once (as the NRI suite's runs show, nri
		// floorRetries). The 5 s the creations outlast the deadlines are
		// faultline's.
		floor := []harness.Part{
			harness.Wait("kubelet's RunPodSandbox deadline (2 x runtimeRequestTimeout)", 2*timeout),
			harness.Wait("kubelet pod worker back-off before the retry", kubeletBackOff),
		}
		if containerDelay > 0 {
			floor = append(floor, harness.Wait("kubelet's CreateContainer deadline (runtimeRequestTimeout)", timeout))
		}
		harness.Floor(floor...)
		pod.Annotations = ociruntime.SlowCreate{Request: token, SandboxDelay: sandboxDelay, ContainerDelay: containerDelay}.Annotations()
		ginkgo.By(fmt.Sprintf("runtimeRequestTimeout %s: sandbox creation takes %s, container creation %s", timeout, sandboxDelay, containerDelay))
		// The witnesses (the runtime's lists, runc-slow's log) are the node's.
		e2epod.SetNodeSelection(&pod.Spec, e2epod.NodeSelection{Name: n.Name})
		pod = e2epod.NewPodClient(f).Create(ctx, pod)
		harness.OnFailure(func(ctx context.Context) {
			records, _ := n.ociRecords(ctx, token)
			framework.Logf("runc-slow records of %s:\n%s", token, describeRecords(records))
		})

		within := sandboxDelay + containerDelay + 4*kubeletRetry + time.Minute
		// Count before judging the phase: a pod that never runs is explained by
		// what the runtime created for it.
		runErr := e2epod.WaitTimeoutForPodRunningInNamespace(ctx, f.ClientSet, pod.Name, pod.Namespace, within)

		selector := map[string]string{"io.kubernetes.pod.uid": string(pod.UID)}
		sandboxes, err := n.CRI.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: selector}})
		framework.ExpectNoError(err)
		containers, err := n.CRI.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: selector}})
		framework.ExpectNoError(err)
		records, err := n.ociRecords(ctx, token)
		framework.ExpectNoError(err)
		created := map[string][]string{}
		for _, r := range records {
			if r.Command == "create" && r.Phase == "begin" {
				created[r.Kind] = append(created[r.Kind], r.ID)
			}
		}
		list, err := harness.PodEvents(ctx, f.ClientSet, pod)
		framework.ExpectNoError(err)
		events := harness.FormatPodEvents(list)
		ginkgo.AddReportEntry("pod events", events)
		detail := fmt.Sprintf("runtime %s; listed %d sandbox(es), %d container(s); OCI creates %v\nevents:\n%srunc-slow records:\n%s",
			n.Runtime, len(sandboxes.Items), len(containers.Containers), created, events, describeRecords(records))
		if len(created["sandbox"]) == 0 {
			// The pod's sandbox was asked for: runc-slow not seeing it is ours.
			harness.OursFailf("runc-slow recorded no OCI create of the pod's sandbox\n%s", detail)
		}
		harness.Cause("second-sandbox", func() {
			gomega.Expect(created["sandbox"]).To(gomega.HaveLen(1), "the runtime must create the sandbox once\n%s", detail)
		})
		why := ""
		if len(created["container"]) > 1 {
			why = "\nWhen the runtime lists no container for a pod's container, the kubelet takes the attempt number from the " +
				"highest <N>.log in the container's log directory (kuberuntime calcRestartCountByLogDir). A timed-out creation " +
				"has written its log file already, so each retry asks for the next attempt: a new container to the runtime, " +
				"never the one it holds for the timed-out request."
		}
		harness.Cause("second-container", func() {
			gomega.Expect(len(created["container"])).To(gomega.BeNumerically("<=", 1), "the runtime must create the container once%s\n%s", why, detail)
		})
		harness.Cause("not-running", func() {
			framework.ExpectNoError(runErr, "%s: the pod must run once the slow creations are done\n%s", n.Runtime, detail)
		})
		harness.Cause("listed-wrong", func() {
			gomega.Expect(sandboxes.Items).To(gomega.HaveLen(1), "exactly one sandbox listed for the pod\n%s", detail)
			gomega.Expect(containers.Containers).To(gomega.HaveLen(1), "exactly one container listed for the pod\n%s", detail)
		})
		gomega.Expect(events).To(gomega.ContainSubstring("FailedCreatePodSandBox"),
			"the pod's events must show that the kubelet's sandbox request timed out\n%s", detail)
	})
})
