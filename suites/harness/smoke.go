package harness

import (
	"context"
	"fmt"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/test/e2e/framework"
	e2epod "k8s.io/kubernetes/test/e2e/framework/pod"
)

// TestPod returns a pod running faultline's test workload, which prints message
// and then waits. It satisfies the restricted Pod Security level.
func TestPod(name, message string) *v1.Pod {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PodSpec{
			RestartPolicy: v1.RestartPolicyNever,
			Containers: []v1.Container{{
				Name:            "testpod",
				Image:           Flags.FakesImage,
				ImagePullPolicy: v1.PullPolicy(Flags.PullPolicy),
				Command:         []string{"/usr/local/bin/testpod", "--message", message},
			}},
			TerminationGracePeriodSeconds: new(int64),
		},
	}
	return e2epod.MustMixinRestrictedPodSecurity(pod)
}

// DescribeSmoke registers the smoke spec every suite carries: it proves the
// cluster really runs pods before the suite's own specs blame the node for
// anything. It needs no fixture set. Select it with --label-filter smoke
// (with the suite's label: 'Suite:dra && smoke').
func DescribeSmoke(suite string) bool {
	ginkgo.GinkgoHelper()
	return Describe(suite, nil, "smoke", framework.WithLabel("smoke"), func() {
		f := framework.NewDefaultFramework("smoke-" + suite)

		framework.It("runs a pod and reads its log back", Checks("FAULTLINE-CLUSTER-RUNS-PODS"), func(ctx context.Context) {
			Floor()
			message := fmt.Sprintf("faultline %s smoke in %s", suite, f.Namespace.Name)
			var pod *v1.Pod
			Cause("not-running", func() {
				pod = e2epod.NewPodClient(f).CreateSync(ctx, TestPod("smoke", message))
				gomega.Expect(pod.Status.Phase).To(gomega.Equal(v1.PodRunning))
			})
			Cause("log-unreadable", func() {
				gomega.Eventually(ctx, func(ctx context.Context) (string, error) {
					return e2epod.GetPodLogs(ctx, f.ClientSet, pod.Namespace, pod.Name, "testpod")
				}).WithTimeout(framework.PodStartShortTimeout).Should(gomega.ContainSubstring(message),
					"the pod is Running, so its first log line must be readable")
			})
			ginkgo.By("the log line came back: " + strings.TrimSpace(message))
		})
	})
}
