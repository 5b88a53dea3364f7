package verdicts

import (
	"errors"
	"strings"
	"testing"
)

// TestSameCells: the cells both runs judged are compared by state (a
// known discrepancy is not a failure, a varying cell is not a steady
// one); cells one run alone judged are listed, not compared, and do not
// make the runs differ.
func TestSameCells(t *testing.T) {
	x := mustExpect(t, testExpectations)
	containerd := stackRun("containerd-1.36", spec(Pass, 1, "DRA-TRANSIENT-RETRIED"), spec(Fail, 1, "DRA-EVERY-FAILING-CLAIM-NAMED"),
		spec(Pass, 1, "NRI-ERROR-STOPS-CHAIN"), spec(Fail, 1, "DRA-UNPREPARE-RETRIED"), spec(Skipped, 1, "NRI-ASYNC-ERROR-IGNORED"))
	base := Build([]Run{containerd, stackRun("crio-1.36", spec(Pass, 1, "DRA-TRANSIENT-RETRIED"))}, x, Header{})
	cur := Build([]Run{
		stackRun("containerd-1.36", spec(Fail, 1, "DRA-TRANSIENT-RETRIED"), spec(Fail, 1, "DRA-EVERY-FAILING-CLAIM-NAMED"),
			spec(Pass, 1, "NRI-ERROR-STOPS-CHAIN"), spec(Fail, 1, "DRA-UNPREPARE-RETRIED"), spec(Inconclusive, 1, "NRI-ASYNC-ERROR-IGNORED"),
			spec(Pass, 1, "NRI-CRASHED-PLUGIN-DROPPED")),
		stackRun("containerd-1.36", spec(Fail, 2, "DRA-TRANSIENT-RETRIED"), spec(Fail, 2, "DRA-EVERY-FAILING-CLAIM-NAMED"),
			spec(Pass, 2, "NRI-ERROR-STOPS-CHAIN"), spec(Pass, 2, "DRA-UNPREPARE-RETRIED"), spec(Inconclusive, 2, "NRI-ASYNC-ERROR-IGNORED"),
			spec(Pass, 2, "NRI-CRASHED-PLUGIN-DROPPED")),
		stackRun("crio-1.37", spec(Pass, 1, "DRA-TRANSIENT-RETRIED")),
	}, x, Header{})
	c := SameCells(base, cur)
	if c.Compared != 5 {
		t.Errorf("compared %d cells, want 5", c.Compared)
	}
	var differ []string
	for _, d := range c.Differ {
		differ = append(differ, d.String())
	}
	want := []string{
		"DRA-TRANSIENT-RETRIED on containerd-1.36: pass -> fail",
		"DRA-UNPREPARE-RETRIED on containerd-1.36: fail -> fail, varies",
		"NRI-ASYNC-ERROR-IGNORED on containerd-1.36: skipped -> inconclusive",
	}
	if strings.Join(differ, "\n") != strings.Join(want, "\n") {
		t.Errorf("differ:\n%s\nwant:\n%s", strings.Join(differ, "\n"), strings.Join(want, "\n"))
	}
	if got := cellList(c.OnlyBaseline); got != "DRA-TRANSIENT-RETRIED on crio-1.36" {
		t.Errorf("only in the baseline: %s", got)
	}
	if got := cellList(c.OnlyCurrent); got != "NRI-CRASHED-PLUGIN-DROPPED on containerd-1.36, DRA-TRANSIENT-RETRIED on crio-1.37" {
		t.Errorf("only in this run: %s", got)
	}
	if got := c.Summary(); got != "same cells: 5 compared, 3 differ" {
		t.Errorf("summary %q", got)
	}
	var out strings.Builder
	c.Write(&out)
	for _, line := range append([]string{"same cells: 5 compared, 3 differ",
		"not compared, only in the baseline: DRA-TRANSIENT-RETRIED on crio-1.36",
		"not compared, only in this run: DRA-TRANSIENT-RETRIED on crio-1.37"}, want...) {
		if !strings.Contains("\n"+out.String(), "\n"+line+"\n") {
			t.Errorf("output lacks the line %q:\n%s", line, out.String())
		}
	}
	err := c.Err()
	if !errors.Is(err, ErrCellsDiffer) {
		t.Fatalf("err = %v, want ErrCellsDiffer", err)
	}
	for _, line := range want {
		if !strings.Contains(err.Error(), "\n"+line) {
			t.Errorf("the error does not name %q on a line of its own:\n%v", line, err)
		}
	}

	// The same run: every cell compared, none differs; cells of a stack
	// the baseline lacks do not count.
	same := SameCells(base, base)
	if same.Compared != len(base.Verdicts) || len(same.Differ) != 0 || same.Err() != nil {
		t.Errorf("a run against itself: %+v, %v", same, same.Err())
	}
	wider := Build([]Run{containerd, stackRun("crio-1.37", spec(Fail, 1, "DRA-TRANSIENT-RETRIED"))}, x, Header{})
	if c := SameCells(base, wider); len(c.Differ) != 0 || c.Err() != nil || len(c.OnlyCurrent) != 1 {
		t.Errorf("a new stack beside the baseline's: %+v, %v", c, c.Err())
	}

	// No cell in common: an error, not a pass.
	other := Build([]Run{stackRun("crio-1.37", spec(Pass, 1, "DRA-TRANSIENT-RETRIED"))}, x, Header{})
	none := SameCells(base, other)
	if err := none.Err(); err == nil || errors.Is(err, ErrCellsDiffer) || !strings.Contains(err.Error(), "no cell in common") {
		t.Errorf("no cell in common: err = %v", err)
	}
	if got := none.Summary(); got != "same cells: 0 compared, 0 differ" {
		t.Errorf("summary %q", got)
	}
}

func cellList(cells []Cell) string {
	var s []string
	for _, c := range cells {
		s = append(s, c.String())
	}
	return strings.Join(s, ", ")
}

// A cell whose expectation lets it vary is not compared: either outcome
// is the stack's, idle or busy.
func TestSameCellsLeaveVaryingCellsOut(t *testing.T) {
	varies := &Expectation{Requirement: "NRI-SYNC-ERROR-FAILS-REQUEST", Verdict: ExpectVaries}
	base := &Report{Verdicts: []Verdict{
		{Requirement: "NRI-SYNC-ERROR-FAILS-REQUEST", Stack: "containerd-1.37", State: Pass, Expectation: varies},
		{Requirement: "NRI-ERROR-STOPS-CHAIN", Stack: "containerd-1.37", State: Pass},
	}}
	cur := &Report{Verdicts: []Verdict{
		{Requirement: "NRI-SYNC-ERROR-FAILS-REQUEST", Stack: "containerd-1.37", State: KnownDiscrepancy, Expectation: varies},
		{Requirement: "NRI-ERROR-STOPS-CHAIN", Stack: "containerd-1.37", State: Pass},
	}}
	c := SameCells(base, cur)
	if c.Compared != 1 || len(c.Differ) != 0 || cellList(c.Varying) != "NRI-SYNC-ERROR-FAILS-REQUEST on containerd-1.37" {
		t.Fatalf("%+v, want one cell compared, none differing, the varying one left out", c)
	}
	if err := c.Err(); err != nil {
		t.Errorf("err = %v", err)
	}
	var out strings.Builder
	c.Write(&out)
	if !strings.Contains(out.String(), "not compared, its expectation lets it vary: NRI-SYNC-ERROR-FAILS-REQUEST on containerd-1.37") {
		t.Errorf("output:\n%s", out.String())
	}
}
