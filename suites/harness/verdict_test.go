package harness

import (
	"github.com/faultline-k8s/faultline/vocab/wire"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/faultline-k8s/faultline/judge/requirements"
	"github.com/faultline-k8s/faultline/judge/verdicts"
)

// TestPremiseIsInconclusive: the skip a premise that did not happen ends
// its spec with reads as "inconclusive", with what had to happen and the
// evidence; a plain skip stays a skip, NotImplemented's prefix stays not
// implemented.
func TestPremiseIsInconclusive(t *testing.T) {
	skipped := func(msg string) types.SpecReport {
		return types.SpecReport{
			LeafNodeType: types.NodeTypeIt, LeafNodeText: "a spec", State: types.SpecStateSkipped,
			LeafNodeLabels: []string{requirements.Label("CRI-SANDBOX-RETRY-IN-PROGRESS")},
			Failure:        types.Failure{Message: msg},
		}
	}
	run, err := verdicts.FromGinkgo([]types.Report{{SpecReports: types.SpecReports{
		skipped(premiseSkip("the caller's deadline ended the request", "it returned within 500ms")),
		skipped("no faultline-slow handler"),
		skipped(wire.NotImplementedPrefix + "no cache"),
	}}}, 1, "containerd-1.37")
	if err != nil {
		t.Fatal(err)
	}
	want := []verdicts.State{verdicts.Inconclusive, verdicts.Skipped, verdicts.NotImplemented}
	if len(run.Specs) != len(want) {
		t.Fatalf("%d specs, want %d", len(run.Specs), len(want))
	}
	for i, s := range run.Specs {
		if s.State != want[i] {
			t.Errorf("spec %d: %s (%q), want %s", i, s.State, s.Message, want[i])
		}
	}
	if m := run.Specs[0].Message; m != "the caller's deadline ended the request did not happen: it returned within 500ms" || strings.HasPrefix(m, wire.InconclusivePrefix) {
		t.Errorf("message %q: want what had to happen and the evidence, without the prefix", m)
	}
}
