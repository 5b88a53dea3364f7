package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/faultline-k8s/faultline/vocab/wire"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/faultline-k8s/faultline/judge/requirements"
)

// TestRunIncomplete: a run that skipped a requirement (a cluster without
// faultline's node setup) says so in the pod's log and its report, and
// ends as before: no error, so the Job, sonobuoy and hydrophone see it pass.
func TestRunIncomplete(t *testing.T) {
	stack := wire.StackInfo{Key: "containerd-1.37", Runtime: "containerd"}
	specs := types.SpecReports{{LeafNodeType: types.NodeTypeSynchronizedBeforeSuite, State: types.SpecStatePassed,
		ReportEntries: types.ReportEntries{{Name: wire.StackEntry, Value: types.WrapEntryValue(stack)}}}}
	for id, skip := range map[string]string{"FAULTLINE-CLUSTER-RUNS-PODS": "", "CRI-SANDBOX-RETRY-GETS-FIRST": "no faultline-slow handler"} {
		sr := types.SpecReport{LeafNodeType: types.NodeTypeIt, LeafNodeText: "checks " + id, State: types.SpecStatePassed, LeafNodeLabels: []string{requirements.Label(id)}}
		if skip != "" {
			sr.State, sr.Failure.Message = types.SpecStateSkipped, skip
		}
		specs = append(specs, sr)
	}
	data, err := json.Marshal([]types.Report{{SuiteDescription: "faultline", SpecReports: specs}})
	if err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(t.TempDir(), "ginkgo.json")
	if err := os.WriteFile(report, data, 0o644); err != nil {
		t.Fatal(err)
	}
	results := t.TempDir()
	c := Config{ResultsDir: results, Procs: 1, FakesImage: "f", Kubeconfig: "/dev/null", Ginkgo: fakeGinkgo(t, report, 0), TestBinary: "/bin/true"}
	var out bytes.Buffer
	if err := Run(context.Background(), c, &out); err != nil {
		t.Fatalf("an incomplete run: %v, want no error\n%s", err, out.String())
	}
	for _, want := range []string{"faultline: Nothing unexpected: ", "Incomplete: 1 of 2 requirements checked", "CRI-SANDBOX-RETRY-GETS-FIRST on containerd-1.37: skipped"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the pod's log lacks %q:\n%s", want, out.String())
		}
	}
	md, err := os.ReadFile(filepath.Join(results, "report.md"))
	if err != nil || !strings.Contains(string(md), "**Incomplete: 1 of 2 requirements checked**") {
		t.Errorf("report.md does not say the run is incomplete (%v):\n%s", err, md)
	}
}
