package ginkgorun

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/onsi/ginkgo/v2/reporters"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/faultline-k8s/faultline/vocab/wire"
)

// Merge joins the reports of runs that split one selection between them
// (each ran its share under its own label filter, on its own cluster of the
// same stack) into the report of one run: each spec as the run that ran it
// reports it, the suite nodes of every run, and the suite's outcome as all
// of them together. A spec no run ran (filtered out everywhere) is kept once,
// as Ginkgo keeps it. The suite config is the first part's, its label filter
// that part's share: the caller, which knows the run's filter, sets it.
func Merge(parts []types.Report) (types.Report, error) {
	if len(parts) == 0 {
		return types.Report{}, fmt.Errorf("no report to merge")
	}
	out := parts[0]
	out.SpecReports = nil
	out.SpecialSuiteFailureReasons = nil
	out.PreRunStats.SpecsThatWillRun = 0
	index := map[string]int{} // spec identity => position in out.SpecReports
	for _, p := range parts {
		if p.SuiteDescription != out.SuiteDescription || p.PreRunStats.TotalSpecs != out.PreRunStats.TotalSpecs {
			return types.Report{}, fmt.Errorf("the reports are not of one spec tree: %q with %d specs, %q with %d",
				out.SuiteDescription, out.PreRunStats.TotalSpecs, p.SuiteDescription, p.PreRunStats.TotalSpecs)
		}
		out.SuiteSucceeded = out.SuiteSucceeded && p.SuiteSucceeded
		out.SuiteHasProgrammaticFocus = out.SuiteHasProgrammaticFocus || p.SuiteHasProgrammaticFocus
		out.SpecialSuiteFailureReasons = append(out.SpecialSuiteFailureReasons, p.SpecialSuiteFailureReasons...)
		out.PreRunStats.SpecsThatWillRun += p.PreRunStats.SpecsThatWillRun
		if p.StartTime.Before(out.StartTime) {
			out.StartTime = p.StartTime
		}
		if p.EndTime.After(out.EndTime) {
			out.EndTime = p.EndTime
		}
		for _, s := range p.SpecReports {
			if s.LeafNodeType != types.NodeTypeIt {
				out.SpecReports = append(out.SpecReports, s)
				continue
			}
			id := specIdentity(s)
			at, seen := index[id]
			switch {
			case !seen:
				index[id] = len(out.SpecReports)
				out.SpecReports = append(out.SpecReports, s)
			case ran(s) && ran(out.SpecReports[at]):
				return types.Report{}, fmt.Errorf("spec %q ran in two of the merged runs", s.FullText())
			case ran(s):
				out.SpecReports[at] = s
			}
		}
	}
	out.RunTime = out.EndTime.Sub(out.StartTime)
	return out, nil
}

// ran says a run ran the spec; one its filters left out never started.
func ran(s types.SpecReport) bool { return s.NumAttempts > 0 }

func specIdentity(s types.SpecReport) string {
	return strings.Join(append(append([]string{}, s.ContainerHierarchyTexts...), s.LeafNodeText, s.LeafNodeLocation.String()), "\x00")
}

// ReadReport reads the one report of a run's Ginkgo JSON report file in dir.
func ReadReport(dir string) (types.Report, error) {
	path := filepath.Join(dir, wire.GinkgoReportFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		return types.Report{}, err
	}
	var reports []types.Report
	if err := json.Unmarshal(raw, &reports); err != nil {
		return types.Report{}, fmt.Errorf("%s: %w", path, err)
	}
	if len(reports) != 1 {
		return types.Report{}, fmt.Errorf("%s: %d suite reports, want 1", path, len(reports))
	}
	return reports[0], nil
}

// WriteReports writes a report where a run of the ginkgo CLI writes its
// own: the JSON report the verdicts read and the JUnit report conformance
// tooling collects, in dir.
func WriteReports(dir string, rep types.Report) error {
	raw, err := json.MarshalIndent([]types.Report{rep}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, wire.GinkgoReportFile), raw, 0o644); err != nil {
		return err
	}
	return reporters.GenerateJUnitReport(rep, filepath.Join(dir, JUnitFile))
}
