package dra

import (
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/test/e2e/framework"

	"github.com/faultline-k8s/faultline/fakes/dra/faultspec"
	"github.com/faultline-k8s/faultline/suites/harness"
)

// The suite's own fixtures open no door: no tenant can claim the fake
// driver's devices or hand it a FaultSpec (fixtures/dra's admission policy).
var _ = describe("fault configuration", func() {
	f := framework.NewDefaultFramework("dra-scope")
	harness.ItRefusesFaultsOutsideOwnNamespaces(f, harness.FaultRequest{
		What:     "a ResourceClaim of the fake driver's class with a FaultSpec",
		Resource: resourceapi.SchemeGroupVersion.WithResource("resourceclaims"),
		Build: func(string) runtime.Object {
			spec := claimSpec([]request{{name: "dev", driver: firstDriver}},
				config(firstDriver, faults([]faultspec.Fault{{Type: faultspec.Permanent}}, nil)))
			return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "fault"}, Spec: spec}
		},
	}, framework.WithLabel("ci"))
})
