package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/faultline-k8s/faultline/judge/requirements"
	"github.com/faultline-k8s/faultline/judge/verdicts"
	"github.com/faultline-k8s/faultline/vocab/wire"
)

// sameCellsArtifacts lays out a run's artifacts directory on one stack
// whose specs, one per requirement, ended in states.
func sameCellsArtifacts(t *testing.T, stackKey string, states map[string]types.SpecState) string {
	t.Helper()
	dir := t.TempDir()
	stack := wire.StackInfo{Key: stackKey, Runtime: strings.Split(stackKey, "-")[0]}
	specs := types.SpecReports{{LeafNodeType: types.NodeTypeSynchronizedBeforeSuite, State: types.SpecStatePassed,
		ReportEntries: types.ReportEntries{{Name: wire.StackEntry, Value: types.WrapEntryValue(stack)}}}}
	for id, s := range states {
		sr := types.SpecReport{LeafNodeType: types.NodeTypeIt, LeafNodeText: "checks " + id, State: s,
			LeafNodeLabels: []string{requirements.Label(id)}}
		if s == types.SpecStateFailed {
			sr.Failure.Message = "it failed"
		}
		specs = append(specs, sr)
	}
	data, err := json.Marshal([]types.Report{{SuiteDescription: "faultline", SpecReports: specs}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, wire.GinkgoReportFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := verdicts.WriteManifest(dir, verdicts.Manifest{Stacks: []verdicts.ManifestStack{{Runtime: stack.Runtime, Runs: []string{wire.GinkgoReportFile}}}}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runReport runs faultline report with args; it returns the exit code and
// what it printed.
func runReport(t *testing.T, args ...string) (int, string, error) {
	t.Helper()
	fs := flag.NewFlagSet("faultline report", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	run := commands["report"].setup(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	out, err := os.CreateTemp(t.TempDir(), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	stdout := os.Stdout
	os.Stdout = out
	runErr := run(context.Background(), nil)
	os.Stdout = stdout
	printed, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	return exitCode(runErr), string(printed), runErr
}

// TestReportSameCells: --same-cells fails a run whose cells differ from
// the baseline's (exit 1, each differing cell named on a line), also when
// the run itself is green; passes one whose common cells match; refuses
// runs with no cell in common (the command failed: 3); and is bad input
// without --baseline.
func TestReportSameCells(t *testing.T) {
	const a, b = "DRA-TRANSIENT-RETRIED", "DRA-UNCLASSIFIED-TRANSIENT"
	base := sameCellsArtifacts(t, "crio-1.37", map[string]types.SpecState{a: types.SpecStatePassed, b: types.SpecStateFailed})
	if code, _, _ := runReport(t, "--artifacts", base); code != 1 {
		t.Fatalf("the baseline's own report: exit %d, want 1 (an unexpected failure)", code)
	}
	green := sameCellsArtifacts(t, "crio-1.37", map[string]types.SpecState{a: types.SpecStatePassed, b: types.SpecStatePassed})
	if code, _, err := runReport(t, "--artifacts", green, "--baseline", base); code != 0 {
		t.Fatalf("without --same-cells: exit %d, want 0: %v", code, err)
	}
	code, out, err := runReport(t, "--artifacts", green, "--baseline", base, "--same-cells")
	if code != 1 || !errors.Is(err, verdicts.ErrCellsDiffer) {
		t.Errorf("a cell differs: exit %d, want 1: %v", code, err)
	}
	line := b + " on crio-1.37: fail -> pass"
	if !strings.Contains(out, "\nsame cells: 2 compared, 1 differ\n"+line+"\n") {
		t.Errorf("output lacks the summary and %q:\n%s", line, out)
	}
	if err == nil || !strings.Contains(err.Error(), "\n"+line) {
		t.Errorf("the error does not name %q on a line of its own: %v", line, err)
	}

	if code, out, err := runReport(t, "--artifacts", green, "--baseline", green, "--same-cells"); code != 0 || !strings.Contains(out, "same cells: 2 compared, 0 differ\n") {
		t.Errorf("the run against itself: exit %d, %v\n%s", code, err, out)
	}
	// A requirement only one run judged is not compared.
	fewer := sameCellsArtifacts(t, "crio-1.37", map[string]types.SpecState{a: types.SpecStatePassed})
	if code, out, err := runReport(t, "--artifacts", fewer, "--baseline", green, "--same-cells"); code != 0 ||
		!strings.Contains(out, "same cells: 1 compared, 0 differ\nnot compared, only in the baseline: "+b+" on crio-1.37\n") {
		t.Errorf("a cell in the baseline only: exit %d, %v\n%s", code, err, out)
	}
	other := sameCellsArtifacts(t, "containerd-1.37", map[string]types.SpecState{a: types.SpecStatePassed, b: types.SpecStatePassed})
	code, out, err = runReport(t, "--artifacts", other, "--baseline", green, "--same-cells")
	if code != 3 || err == nil || !strings.Contains(err.Error(), "no cell in common") || !strings.Contains(out, "same cells: 0 compared, 0 differ\n") {
		t.Errorf("no cell in common: exit %d, %v\n%s", code, err, out)
	}

	code, _, err = runReport(t, "--artifacts", green, "--same-cells")
	var usage usageError
	if code != 2 || !errors.As(err, &usage) || !strings.Contains(err.Error(), "--baseline") {
		t.Errorf("--same-cells without --baseline: exit %d, %v; want 2 naming --baseline", code, err)
	}
}

// TestSameCellsOutcome: differing cells exit 1 whatever else; no cell in
// common is the command failing (3), also beside an incomplete run.
func TestSameCellsOutcome(t *testing.T) {
	differ := fmt.Errorf("%w: 1 of 2 compared cells", verdicts.ErrCellsDiffer)
	none := errors.New("no cell in common: the runs judged different stacks or requirements")
	incomplete := fmt.Errorf("%w: 1 of 2 checked", verdicts.ErrIncomplete)
	for _, c := range []struct {
		cells, run error
		want       int
	}{
		{nil, nil, 0},
		{nil, incomplete, 4},
		{differ, nil, 1},
		{differ, incomplete, 1},
		{none, nil, 3},
		{none, incomplete, 3},
	} {
		err := sameCellsOutcome(c.cells, c.run)
		if got := exitCode(err); got != c.want {
			t.Errorf("cells %v, run %v: exit %d, want %d", c.cells, c.run, got, c.want)
		}
		if c.run != nil && !strings.Contains(err.Error(), c.run.Error()) {
			t.Errorf("%v does not say the run's %v", err, c.run)
		}
	}
}
