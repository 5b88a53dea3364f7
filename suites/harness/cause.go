package harness

// Why a spec failed, by cause rather than by message: each check a spec
// makes names the way the stack breaks the requirement when it fails (a
// cause the requirement declares in judge/requirements/catalogue.yaml), and a
// failure outside every check, or in faultline's own step inside one, is
// requirements.HarnessCause. verdicts reads the causes from the report
// entries; expectations name the causes they expect.

import (
	"fmt"
	"github.com/faultline-k8s/faultline/vocab/wire"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"k8s.io/kubernetes/test/e2e/framework"

	"github.com/faultline-k8s/faultline/judge/requirements"
)

// Cause runs body, one check of the running spec, and says what its failure
// means: cause, a way the stack breaks the spec's requirement, which the
// requirement declares. The report records where the check begins and,
// when body returns, where it ends (wire.CauseEntry), so a failure in
// body has that cause. Keep body to the stack's behaviour: faultline's own
// steps inside it (reading a witness, the API server) go through Ours. A
// cause the spec's requirements do not declare is a bug of the spec, and
// Cause panics; suites' TestCauseLiterals finds those before a run.
func Cause(cause string, body func()) {
	ginkgo.GinkgoHelper()
	if cause != requirements.HarnessCause {
		mustDeclare(cause)
	}
	mark(cause, true)
	// Closed only when body returns: a failure unwinds through here before
	// Ginkgo's report says the spec failed, so a deferred close could not
	// tell a failure from a skip and would take the cause off the failure.
	// A body must therefore not skip (Premise and NotImplemented belong
	// outside Cause), or its cause stays open for the rest of the spec.
	body()
	mark(cause, false)
}

// Ours fails the spec when err is not nil: an error of faultline's own
// machinery (the API server, a port-forward, the relay, a fake's or a
// witness's record), never the stack's behaviour, also inside a Cause.
// explain is as framework.ExpectNoError's.
func Ours(err error, explain ...any) {
	ginkgo.GinkgoHelper()
	if err == nil {
		return
	}
	mark(requirements.HarnessCause, true)
	framework.ExpectNoError(err, explain...)
}

// OursFailf fails the spec for a reason of faultline's own (a witness that
// contradicts itself, a fixture not ready), also inside a Cause.
func OursFailf(format string, args ...any) {
	ginkgo.GinkgoHelper()
	mark(requirements.HarnessCause, true)
	framework.Failf(format, args...)
}

func mark(cause string, open bool) {
	ginkgo.AddReportEntry(wire.CauseEntry, wire.CauseMark{Cause: cause, Open: open}, ginkgo.ReportEntryVisibilityNever)
}

// mustDeclare panics unless a requirement of the running spec declares
// cause: a spec must not name a cause its expectations could not.
func mustDeclare(cause string) {
	ids := requirements.FromLabels(ginkgo.CurrentSpecReport().Labels())
	var declared []string
	for _, id := range ids {
		r, ok := requirements.Lookup(id)
		if ok && r.Declares(cause) {
			return
		}
		declared = append(declared, fmt.Sprintf("%s: %s", id, strings.Join(r.CauseIDs(), ", ")))
	}
	panic(fmt.Sprintf("harness.Cause(%q): no requirement of this spec declares it (%s); declare it in judge/requirements/catalogue.yaml or name another",
		cause, strings.Join(declared, "; ")))
}
