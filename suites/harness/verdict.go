package harness

import (
	"fmt"

	"github.com/onsi/ginkgo/v2"

	"github.com/faultline-k8s/faultline/judge/requirements"
	"github.com/faultline-k8s/faultline/vocab/needs"
	"github.com/faultline-k8s/faultline/vocab/wire"
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

// Needs labels a spec (or a container) with what it needs from the cluster
// beyond its suite's basics (vocab/needs): preflight reads the labels to say
// whether a cluster can check the spec's requirement.
func Needs(conditions ...string) ginkgo.Labels { return ginkgo.Label(needs.Labels(conditions...)...) }

// NeedsFixtures labels a container whose specs require the fixture sets
// (Require): they need those sets applied, and what each set needs.
func NeedsFixtures(sets ...string) ginkgo.Labels {
	conditions := make([]string, len(sets))
	for i, set := range sets {
		conditions[i] = needs.Fixtures(set)
	}
	return Needs(conditions...)
}

// Informs labels a spec with conditions that change only what it expects
// (a missing gate makes its verdict "not implemented"), not whether it can
// run.
func Informs(conditions ...string) ginkgo.Labels {
	return ginkgo.Label(needs.InformsLabels(conditions...)...)
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
