package verdicts

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/faultline-k8s/faultline/requirements"
)

// Run is what one run of the test binary against one cluster showed: its
// stack and every selected spec's result.
type Run struct {
	Stack StackInfo
	// Specs are the selected specs (a spec a filter left out is not here).
	Specs []Spec
	// SetupFailures are suite-level nodes that failed ([SynchronizedBeforeSuite]
	// ...): every one makes the run fail.
	SetupFailures []Spec
	// LabelFilter and Focus are the run's Ginkgo filters.
	LabelFilter string
	Focus       []string
}

// ReadGinkgoFile reads a JSON report Ginkgo wrote (--json-report), gzipped
// if its name ends in .gz (recorded runs), as run number run. stackKey names
// the stack when the report does not (the suite setup failed before it read
// the cluster).
func ReadGinkgoFile(path string, run int, stackKey string) (Run, error) {
	reports, err := ReadGinkgoReports(path)
	if err != nil {
		return Run{}, err
	}
	return FromGinkgo(reports, run, stackKey)
}

// ReadGinkgoReports reads Ginkgo's own report types from a JSON report,
// gzipped if its name ends in .gz.
func ReadGinkgoReports(path string) ([]types.Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		z, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		r = z
	}
	var reports []types.Report
	if err := json.NewDecoder(r).Decode(&reports); err != nil {
		return nil, fmt.Errorf("%s: not a Ginkgo JSON report: %w", path, err)
	}
	if len(reports) == 0 {
		return nil, fmt.Errorf("%s: holds no suite", path)
	}
	return reports, nil
}

// FromGinkgo reads Ginkgo's reports of one run.
func FromGinkgo(reports []types.Report, run int, stackKey string) (Run, error) {
	r := Run{Stack: StackInfo{Key: stackKey}}
	stackFound := false
	for _, rep := range reports {
		r.LabelFilter = rep.SuiteConfig.LabelFilter
		r.Focus = rep.SuiteConfig.FocusStrings
		selected, err := selection(rep)
		if err != nil {
			return Run{}, err
		}
		// The suite as a whole failed (its timeout, an interrupt, an abort,
		// no spec selected with --fail-on-empty): the specs it did not get
		// to are reported as skipped like filtered ones, so this alone
		// says the run is incomplete.
		for _, reason := range rep.SpecialSuiteFailureReasons {
			r.SetupFailures = append(r.SetupFailures, Spec{Name: "[suite]", State: Fail, Message: reason, Run: run})
		}
		for _, sr := range rep.SpecReports {
			for _, e := range sr.ReportEntries {
				if e.Name == StackEntry && !stackFound {
					var s StackInfo
					if err := json.Unmarshal([]byte(e.Value.AsJSON), &s); err != nil {
						return Run{}, fmt.Errorf("report entry %s: %w", StackEntry, err)
					}
					r.Stack, stackFound = s, true
				}
			}
			spec := specOf(sr, run)
			if sr.LeafNodeType != types.NodeTypeIt {
				if sr.State.Is(types.SpecStateFailureStates) {
					r.SetupFailures = append(r.SetupFailures, spec)
				}
				continue
			}
			if sr.State == types.SpecStateSkipped && sr.Failure.Message == "" {
				continue // left out by a filter: not a result
			}
			if sr.State == types.SpecStatePending && !selected(sr) {
				continue // Ginkgo reports pending specs whatever the filters
			}
			r.Specs = append(r.Specs, spec)
		}
	}
	if r.Stack.Key == "" {
		return Run{}, fmt.Errorf("the report names no stack (no %s entry) and none was given", StackEntry)
	}
	return r, nil
}

// selection tells whether the run's filters chose a spec, as Ginkgo decides
// it (internal/focus.go): the label filter on the suite's and the spec's
// labels, the file filters on its code locations, and the focus and skip
// expressions on the suite's description and the spec's text. Ginkgo reports
// pending specs whatever the filters; only the chosen ones are results.
func selection(rep types.Report) (func(types.SpecReport) bool, error) {
	c := rep.SuiteConfig
	var checks []func(types.SpecReport) bool
	if c.LabelFilter != "" {
		f, err := types.ParseLabelFilter(c.LabelFilter)
		if err != nil {
			return nil, fmt.Errorf("the report's label filter %q: %w", c.LabelFilter, err)
		}
		checks = append(checks, func(sr types.SpecReport) bool {
			return f(append(append([]string(nil), rep.SuiteLabels...), sr.Labels()...))
		})
	}
	locations := func(sr types.SpecReport) []types.CodeLocation {
		return append(append([]types.CodeLocation(nil), sr.ContainerHierarchyLocations...), sr.LeafNodeLocation)
	}
	if len(c.FocusFiles) > 0 {
		f, err := types.ParseFileFilters(c.FocusFiles)
		if err != nil {
			return nil, err
		}
		checks = append(checks, func(sr types.SpecReport) bool { return f.Matches(locations(sr)) })
	}
	if len(c.SkipFiles) > 0 {
		f, err := types.ParseFileFilters(c.SkipFiles)
		if err != nil {
			return nil, err
		}
		checks = append(checks, func(sr types.SpecReport) bool { return !f.Matches(locations(sr)) })
	}
	text := func(sr types.SpecReport) string { return rep.SuiteDescription + " " + sr.FullText() }
	if len(c.FocusStrings) > 0 {
		re, err := regexp.Compile(strings.Join(c.FocusStrings, "|"))
		if err != nil {
			return nil, fmt.Errorf("the report's focus: %w", err)
		}
		checks = append(checks, func(sr types.SpecReport) bool { return re.MatchString(text(sr)) })
	}
	if len(c.SkipStrings) > 0 {
		re, err := regexp.Compile(strings.Join(c.SkipStrings, "|"))
		if err != nil {
			return nil, fmt.Errorf("the report's skip: %w", err)
		}
		checks = append(checks, func(sr types.SpecReport) bool { return !re.MatchString(text(sr)) })
	}
	return func(sr types.SpecReport) bool {
		for _, ok := range checks {
			if !ok(sr) {
				return false
			}
		}
		return true
	}, nil
}

func specOf(sr types.SpecReport, run int) Spec {
	name := sr.FullText()
	if sr.LeafNodeType != types.NodeTypeIt {
		name = "[" + sr.LeafNodeType.String() + "]"
	}
	s := Spec{
		Name:         name,
		Location:     sr.LeafNodeLocation.String(),
		Requirements: requirements.FromLabels(sr.Labels()),
		Duration:     sr.RunTime,
		Run:          run,
		Message:      strings.TrimSpace(sr.Failure.Message),
	}
	switch sr.State {
	case types.SpecStatePassed:
		s.State = Pass
	case types.SpecStatePending:
		s.State = Pending
	case types.SpecStateSkipped:
		if why, ok := strings.CutPrefix(s.Message, NotImplementedPrefix); ok {
			s.State, s.Message = NotImplemented, why
		} else {
			s.State = Skipped
		}
	default: // failed, panicked, timed out, interrupted, aborted
		s.State = Fail
		if s.Message == "" {
			s.Message = sr.State.String()
		}
	}
	for _, e := range sr.ReportEntries {
		var dir string
		// Only a path inside the results directory: a report from
		// elsewhere must not make the report link outside it.
		if e.Name == DumpEntry && json.Unmarshal([]byte(e.Value.AsJSON), &dir) == nil && filepath.IsLocal(dir) {
			s.Dump = filepath.ToSlash(dir)
		}
	}
	return s
}
