package nri

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/test/e2e/framework"

	"github.com/faultline-k8s/faultline/fakes/nri/faults"
	"github.com/faultline-k8s/faultline/suites/harness"
)

// The suite's own fixtures open no door: no tenant can make the fake NRI
// plugin fail its pods (fixtures/nri's admission policy).
var _ = describe("fault annotations", func() {
	f := framework.NewDefaultFramework("nri-scope")
	harness.ItRefusesFaultsOutsideOwnNamespaces(f, harness.FaultRequest{
		What:     "a pod with an NRI fault annotation",
		Resource: harness.PodsResource,
		Build: func(string) runtime.Object {
			return VictimPod("fault", A.Fault("RunPodSandbox", faults.Fault{Mode: faults.Error, Times: 1}))
		},
	}, framework.WithLabel("ci"))
})
