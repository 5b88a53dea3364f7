package verdicts

import (
	"encoding/json"
	"github.com/faultline-k8s/faultline/vocab/wire"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/faultline-k8s/faultline/judge/requirements"
)

// mark is the entry harness.Cause writes (harness.mark).
func mark(cause string, open bool) types.ReportEntry {
	return types.ReportEntry{Name: wire.CauseEntry, Value: types.WrapEntryValue(wire.CauseMark{Cause: cause, Open: open})}
}

// TestCauseOfFailure: a failure is the cause of the innermost check still
// open when it happened; outside every check, inside faultline's own step
// (harness), or a spec that did not fail an assertion, it is harness.
func TestCauseOfFailure(t *testing.T) {
	for name, c := range map[string]struct {
		state   types.SpecState
		entries []types.ReportEntry
		want    string
	}{
		"inside a check":          {types.SpecStateFailed, []types.ReportEntry{mark("abandoned", true)}, "abandoned"},
		"after checks":            {types.SpecStateFailed, []types.ReportEntry{mark("abandoned", true), mark("abandoned", false)}, requirements.HarnessCause},
		"no check":                {types.SpecStateFailed, nil, requirements.HarnessCause},
		"second check":            {types.SpecStateFailed, []types.ReportEntry{mark("abandoned", true), mark("abandoned", false), mark("second-object", true)}, "second-object"},
		"nested, inner open":      {types.SpecStateFailed, []types.ReportEntry{mark("not-prepared", true), mark("started-unprepared", true)}, "started-unprepared"},
		"nested, inner closed":    {types.SpecStateFailed, []types.ReportEntry{mark("not-prepared", true), mark("started-unprepared", true), mark("started-unprepared", false)}, "not-prepared"},
		"faultline's step inside": {types.SpecStateFailed, []types.ReportEntry{mark("listed-wrong", true), mark(requirements.HarnessCause, true)}, requirements.HarnessCause},
		"panicked inside a check": {types.SpecStatePanicked, []types.ReportEntry{mark("abandoned", true)}, requirements.HarnessCause},
		"timed out inside":        {types.SpecStateTimedout, []types.ReportEntry{mark("abandoned", true)}, requirements.HarnessCause},
		"interrupted inside":      {types.SpecStateInterrupted, []types.ReportEntry{mark("abandoned", true)}, requirements.HarnessCause},
		"not a mark":              {types.SpecStateFailed, []types.ReportEntry{{Name: wire.CauseEntry, Value: types.WrapEntryValue("abandoned")}}, requirements.HarnessCause},
	} {
		sr := types.SpecReport{LeafNodeType: types.NodeTypeIt, LeafNodeText: name, State: c.state, ReportEntries: c.entries,
			Failure: types.Failure{Message: "it failed"}}
		// Through JSON, as a run's report is read.
		data, err := json.Marshal([]types.Report{{SpecReports: types.SpecReports{sr}}})
		if err != nil {
			t.Fatal(err)
		}
		var reports []types.Report
		if err := json.Unmarshal(data, &reports); err != nil {
			t.Fatal(err)
		}
		run, err := FromGinkgo(reports, 1, "crio-1.37")
		if err != nil {
			t.Fatal(err)
		}
		if got := run.Specs[0].Cause; got != c.want {
			t.Errorf("%s: cause %q, want %q", name, got, c.want)
		}
	}
}

// TestRecordedFailuresHaveNoCause: the recorded runs predate causes, so
// read as they are every failure is faultline's own; only the test helper
// (verdictstest.WithRecordedCauses) gives them their causes.
func TestRecordedFailuresHaveNoCause(t *testing.T) {
	reports, err := ReadGinkgoReports("testdata/full-crio.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	run, err := FromGinkgo(reports, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, s := range run.Specs {
		if s.State == Fail {
			failed++
			if s.Cause != requirements.HarnessCause {
				t.Errorf("%s: cause %q without a mark", s.Name, s.Cause)
			}
		}
	}
	if failed == 0 {
		t.Fatal("no failure in full-crio")
	}
	x, err := LoadExpectationsPath("../expectations")
	if err != nil {
		t.Fatal(err)
	}
	if v := Build([]Run{run}, x, Header{}).Verdict("DRA-EVERY-FAILING-CLAIM-NAMED", "crio-1.36"); v == nil || v.State != Fail || v.Unexpected == "" {
		t.Errorf("a failure without a cause passed for the expected one: %+v", v)
	}
}
