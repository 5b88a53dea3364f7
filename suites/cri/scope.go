package cri

import (
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/test/e2e/framework"

	"github.com/faultline-k8s/faultline/fakes/runcslow/ociruntime"
	"github.com/faultline-k8s/faultline/suites/harness"
)

// Requirement 0 of the suite's own fixtures: no tenant can slow the node's
// runtime through them (fixtures/cri/slow-runtime-policy.yaml.tmpl).
var _ = describe("", "the slow runtime handler", func() {
	f := framework.NewDefaultFramework("cri-scope")
	harness.ItRefusesFaultsOutsideOwnNamespaces(f, harness.FaultRequest{
		What:     "a pod of the faultline-slow RuntimeClass asking for a delay",
		Resource: harness.PodsResource,
		Build: func(string) k8sruntime.Object {
			pod := harness.TestPod("slow", "faultline cri scope")
			pod.Spec.RuntimeClassName = new(string)
			*pod.Spec.RuntimeClassName = slowHandler
			pod.Annotations = map[string]string{ociruntime.SandboxDelayAnnotation: "1s"}
			return pod
		},
	}, framework.WithLabel("ci"))
})
