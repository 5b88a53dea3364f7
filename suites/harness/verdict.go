package harness

import (
	"fmt"
	"github.com/faultline-k8s/faultline/vocab/wire"

	"github.com/onsi/ginkgo/v2"

	"github.com/faultline-k8s/faultline/judge/requirements"
)

// NotImplemented ends the spec with the verdict "not implemented": the stack
// lacks the feature the requirement is about (a KEP its kubelet does not
// have), which the spec has just seen it do. It is neither a failure of the
// stack's other parts nor a missing precondition. source names the design
// the requirement comes from; why says what the stack did instead.
func NotImplemented(source, why string) {
	ginkgo.GinkgoHelper()
	ginkgo.Skip(fmt.Sprintf("%s%s (%s)", wire.NotImplementedPrefix, why, source))
}

// Premise records what a spec's verdict rests on (the fault fired, the
// caller's deadline passed, the runtime kept the object) as a report entry
// (wire.PremiseEntry), whether or not it happened, with the evidence.
// When it did not happen the spec ends as "inconclusive": it says nothing
// about the requirement, whatever kept the premise from happening (the
// stack, timing, or faultline's own fixtures), and must never pass. On a
// cluster faultline made that verdict is unexpected; elsewhere it makes the
// run incomplete. name says what had to happen, evidence what the spec saw.
func Premise(name string, happened bool, evidence string) {
	ginkgo.GinkgoHelper()
	ginkgo.AddReportEntry(wire.PremiseEntry, wire.Premise{Name: name, Happened: happened, Evidence: evidence})
	if !happened {
		ginkgo.Skip(premiseSkip(name, evidence))
	}
}

// premiseSkip is the skip message of a premise that did not happen, which
// verdicts reads as "inconclusive".
func premiseSkip(name, evidence string) string {
	return fmt.Sprintf("%s%s did not happen: %s", wire.InconclusivePrefix, name, evidence)
}

// Checks labels a spec with the requirements it checks
// (judge/requirements/catalogue.yaml), "Req:<ID>" each; the report gives one verdict
// per requirement. suites' TestSpecRequirements keeps the two in step.
func Checks(ids ...string) ginkgo.Labels {
	labels := make(ginkgo.Labels, len(ids))
	for i, id := range ids {
		labels[i] = requirements.Label(id)
	}
	return labels
}
