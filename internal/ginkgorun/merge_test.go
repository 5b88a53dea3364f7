package ginkgorun

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"
)

func spec(text string, ran bool, state types.SpecState) types.SpecReport {
	s := types.SpecReport{LeafNodeType: types.NodeTypeIt, LeafNodeText: text, State: state,
		LeafNodeLocation: types.CodeLocation{FileName: "x.go", LineNumber: len(text)}}
	if ran {
		s.NumAttempts = 1
	}
	return s
}

// TestMerge: each spec as the share that ran it reports it, the suite nodes
// of both, the outcome of both, the span of both.
func TestMerge(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	setup := types.SpecReport{LeafNodeType: types.NodeTypeSynchronizedBeforeSuite, State: types.SpecStatePassed}
	rest := types.Report{SuiteDescription: "faultline", SuiteSucceeded: true, StartTime: t0, EndTime: t0.Add(5 * time.Minute),
		PreRunStats: types.PreRunStats{TotalSpecs: 3, SpecsThatWillRun: 2},
		SpecReports: types.SpecReports{setup, spec("a", true, types.SpecStatePassed), spec("b", true, types.SpecStatePassed), spec("serial", false, types.SpecStateSkipped)}}
	serial := types.Report{SuiteDescription: "faultline", SuiteSucceeded: false, StartTime: t0.Add(time.Second), EndTime: t0.Add(7 * time.Minute),
		PreRunStats: types.PreRunStats{TotalSpecs: 3, SpecsThatWillRun: 1},
		SpecReports: types.SpecReports{setup, spec("a", false, types.SpecStateSkipped), spec("b", false, types.SpecStateSkipped), spec("serial", true, types.SpecStateFailed)}}
	got, err := Merge([]types.Report{rest, serial})
	if err != nil {
		t.Fatal(err)
	}
	var its []string
	setups := 0
	for _, s := range got.SpecReports {
		if s.LeafNodeType == types.NodeTypeIt {
			its = append(its, s.LeafNodeText+"="+s.State.String())
		} else {
			setups++
		}
	}
	if strings.Join(its, " ") != "a=passed b=passed serial=failed" || setups != 2 {
		t.Errorf("specs %v, %d suite nodes", its, setups)
	}
	if got.SuiteSucceeded || got.RunTime != 7*time.Minute || got.PreRunStats.SpecsThatWillRun != 3 {
		t.Errorf("succeeded %v, run time %s, will run %d", got.SuiteSucceeded, got.RunTime, got.PreRunStats.SpecsThatWillRun)
	}

	dir := t.TempDir()
	if err := WriteReports(dir, got); err != nil {
		t.Fatal(err)
	}
	back, err := ReadReport(dir)
	if err != nil || len(back.SpecReports) != len(got.SpecReports) {
		t.Fatalf("read back: %v, %d specs", err, len(back.SpecReports))
	}
	if _, err := ReadReport(filepath.Join(dir, "none")); err == nil {
		t.Error("a missing report reads")
	}

	// A spec two shares both ran is a split gone wrong, not a report.
	twice := serial
	twice.SpecReports = types.SpecReports{spec("a", true, types.SpecStatePassed), spec("b", false, types.SpecStateSkipped), spec("serial", true, types.SpecStatePassed)}
	if _, err := Merge([]types.Report{rest, twice}); err == nil || !strings.Contains(err.Error(), "ran in two") {
		t.Errorf("a spec run twice: %v", err)
	}
	other := serial
	other.PreRunStats.TotalSpecs = 4
	if _, err := Merge([]types.Report{rest, other}); err == nil {
		t.Error("reports of two trees merged")
	}
}
