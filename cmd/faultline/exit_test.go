package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/faultline-k8s/faultline/vocab/wire"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/faultline-k8s/faultline/judge/requirements"
	"github.com/faultline-k8s/faultline/judge/verdicts"
)

// TestExitCodes: bad input 2, unexpected 1 (also when the run is
// incomplete too), incomplete 4, anything else 3.
func TestExitCodes(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{usageError{errors.New("bad flag")}, 2},
		{fmt.Errorf("%w: 2 verdicts", verdicts.ErrUnexpected), 1},
		{fmt.Errorf("%w: 3 of 4 checked", verdicts.ErrIncomplete), 4},
		{errors.Join(verdicts.ErrIncomplete, verdicts.ErrUnexpected), 1},
		{errors.New("kind create cluster failed"), 3},
	} {
		if got := exitCode(c.err); got != c.want {
			t.Errorf("exitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

// TestReportAllowIncomplete: faultline report on a run that skipped a
// requirement on a cluster it did not make exits 4, and 0 with
// --allow-incomplete; a run with an unexpected verdict exits 1 either way.
func TestReportAllowIncomplete(t *testing.T) {
	artifacts := func(states ...types.SpecState) string {
		dir := t.TempDir()
		stack := wire.StackInfo{Key: "crio-1.37", Runtime: "crio"}
		specs := types.SpecReports{{LeafNodeType: types.NodeTypeSynchronizedBeforeSuite, State: types.SpecStatePassed,
			ReportEntries: types.ReportEntries{{Name: wire.StackEntry, Value: types.WrapEntryValue(stack)}}}}
		for i, s := range states {
			id := []string{"DRA-TRANSIENT-RETRIED", "DRA-UNCLASSIFIED-TRANSIENT", "DRA-BAD-CONFIG-NAMED"}[i]
			sr := types.SpecReport{LeafNodeType: types.NodeTypeIt, LeafNodeText: "checks " + id, State: s,
				LeafNodeLabels: []string{requirements.Label(id)}}
			switch s {
			case types.SpecStateSkipped:
				sr.Failure.Message = "no faultline-slow handler"
			case types.SpecStateFailed:
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
		if err := verdicts.WriteManifest(dir, verdicts.Manifest{Stacks: []verdicts.ManifestStack{{Runtime: "crio", Runs: []string{wire.GinkgoReportFile}}}}); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	report := func(args ...string) int {
		fs := flag.NewFlagSet("faultline report", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		run := commands["report"].setup(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		stdout := os.Stdout
		os.Stdout, _ = os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		defer func() { os.Stdout = stdout }()
		return exitCode(run(context.Background(), nil))
	}
	skipped := artifacts(types.SpecStatePassed, types.SpecStateSkipped)
	if got := report("--artifacts", skipped); got != 4 {
		t.Errorf("a skipped requirement: exit %d, want 4", got)
	}
	if got := report("--artifacts", skipped, "--allow-incomplete"); got != 0 {
		t.Errorf("a skipped requirement, --allow-incomplete: exit %d, want 0", got)
	}
	failed := artifacts(types.SpecStatePassed, types.SpecStateSkipped, types.SpecStateFailed)
	for _, args := range [][]string{{"--artifacts", failed}, {"--artifacts", failed, "--allow-incomplete"}} {
		if got := report(args...); got != 1 {
			t.Errorf("%v: an unexpected failure and a skip: exit %d, want 1", args, got)
		}
	}
}
