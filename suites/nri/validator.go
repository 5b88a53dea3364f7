package nri

// NRI-REQUIRED-PLUGIN-MISSING and NRI-REQUIRED-PLUGINS-PRESENT: a required plugin (the default validator's
// required_plugins, or the pod annotation required-plugins.noderesource.dev)
// that is absent makes container creation fail with a message naming it,
// where the runtime supports the validator (NRI >= v0.10: containerd >= 2.2
// with [plugins.'io.containerd.nri.v1.nri'.default_validator] enable = true).
// Select or exclude these specs with Feature:NRIDefaultValidator.

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/test/e2e/framework"
	e2epod "k8s.io/kubernetes/test/e2e/framework/pod"

	"github.com/faultline-k8s/faultline/fakes/nri/nriclient"
	"github.com/faultline-k8s/faultline/fakes/nri/record"
	"github.com/faultline-k8s/faultline/suites/harness"
	"github.com/faultline-k8s/faultline/vocab/needs"
)

// requiredPluginsAnnotation is the default validator's annotation (NRI
// pkg/plugin RequiredPluginsAnnotation); "/container.<name>" scopes it to
// one container, "/pod" to every container of the pod.
const requiredPluginsAnnotation = "required-plugins.noderesource.dev"

var _ = describe("NRI required plugins", framework.WithFeature(featureNRI), framework.WithFeature(featureValidator), func() {
	f := framework.NewDefaultFramework("nri-required")

	framework.It("a container whose required plugin is not registered is not created, with an error naming the missing plugin", harness.Checks("NRI-REQUIRED-PLUGIN-MISSING"), harness.Needs(needs.NRIValidator), func(ctx context.Context) {
		harness.Floor()
		const missing = "faultline-absent"
		pod, node := createVictim(ctx, f, VictimPod("required-plugin-absent", nriclient.Annotation{
			Key: requiredPluginsAnnotation + "/container." + TestContainer, Value: fmt.Sprintf("[%q]", missing)}))
		rt := harness.Cluster().RuntimeDescription()

		var state string
		harness.Cause("message-missing", func() {
			gomega.Eventually(ctx, func(ctx context.Context) (string, error) {
				p, err := f.ClientSet.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
				if err != nil {
					return "", err
				}
				st := containerStatus(p, TestContainer)
				switch {
				case st == nil:
					state = "no container status yet"
				case st.State.Waiting != nil:
					state = st.State.Waiting.Reason + ": " + st.State.Waiting.Message
				case st.State.Running != nil:
					harness.Cause("created-without-plugin", func() {
						framework.Failf("the runtime (%s) created and started the container although its required plugin %q is not registered: "+
							"the NRI default validator is disabled or not supported (containerd needs NRI >= v0.10, containerd >= 2.2, "+
							"and [plugins.'io.containerd.nri.v1.nri'.default_validator] enable = true)", rt, missing)
					})
				default:
					state = nriclient.ContainerState(st.State)
				}
				return state, nil
			}).WithTimeout(retryTimeout(1)).Should(gomega.And(gomega.HavePrefix("CreateContainerError: "), gomega.ContainSubstring(missing)),
				"container creation must fail with an error naming the missing plugin %q", missing)
		})
		ginkgo.By("the container waits with " + state)
		var ev *v1.Event
		harness.Cause("message-missing", func() { ev = EventuallyPodEvent(ctx, f.ClientSet, pod, "Failed", missing, eventDelivery) })
		ginkgo.By("the kubelet reports: " + ev.Message)

		// The plugins themselves passed CreateContainer: the validator
		// rejected the container after the chain, and the runtime held on
		// to nothing of it.
		for _, inst := range Instances {
			creates := nriclient.Only(eventsOf(ctx, f, node, inst, pod), "CreateContainer")
			gomega.Expect(creates).NotTo(gomega.BeEmpty(), "%s must have seen CreateContainer", inst)
			for _, c := range creates {
				gomega.Expect(c.Result).To(gomega.Equal(record.OK), nriclient.FormatEvents(creates))
			}
		}
		s := runtimeStateOf(ctx, f, node, pod)
		harness.Cause("leftover-container", func() {
			gomega.Expect(s.Containers).To(gomega.BeEmpty(), "a rejected container must leave nothing behind:\n%s", FormatState(s))
		})
		harness.Cause("leftover-sandbox", func() {
			gomega.Expect(s.Sandboxes).To(gomega.HaveLen(1), FormatState(s))
		})
	})

	framework.It("a container whose required plugins are all registered is created and runs", harness.Checks("NRI-REQUIRED-PLUGINS-PRESENT"), func(ctx context.Context) {
		harness.Floor()
		pod, node := createVictim(ctx, f, VictimPod("required-plugins-present", nriclient.Annotation{
			Key: requiredPluginsAnnotation + "/pod", Value: fmt.Sprintf("[%q, %q, %q]", A.Name, B.Name, C.Name)}))
		harness.Cause("not-running", func() {
			framework.ExpectNoError(e2epod.WaitTimeoutForPodRunningInNamespace(ctx, f.ClientSet, pod.Name, pod.Namespace, podStart),
				"with %s, %s and %s registered, the validator must let the container be created", A, B, C)
		})
		expectNoFailureEvents(ctx, f, pod)
		expectOnlyAttempt(ctx, f, node, pod, nil)
	})
})
