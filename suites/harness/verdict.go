package harness

import (
	"fmt"

	"github.com/onsi/ginkgo/v2"

	"github.com/faultline-k8s/faultline/requirements"
	"github.com/faultline-k8s/faultline/verdicts"
)

// NotImplemented ends the spec with the verdict "not implemented": the stack
// lacks the feature the requirement is about (a KEP its kubelet does not
// have), which the spec has just seen it do. It is neither a failure of the
// stack's other parts nor a missing precondition. source names the design
// the requirement comes from; why says what the stack did instead.
func NotImplemented(source, why string) {
	ginkgo.GinkgoHelper()
	ginkgo.Skip(fmt.Sprintf("%s%s (%s)", verdicts.NotImplementedPrefix, why, source))
}

// Checks labels a spec with the requirements it checks
// (requirements/catalogue.yaml), "Req:<ID>" each; the report gives one verdict
// per requirement. suites' TestSpecRequirements keeps the two in step.
func Checks(ids ...string) ginkgo.Labels {
	labels := make(ginkgo.Labels, len(ids))
	for i, id := range ids {
		labels[i] = requirements.Label(id)
	}
	return labels
}
