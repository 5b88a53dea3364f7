package verdicts

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// ReadReportFile reads a report.json faultline wrote (an earlier run's, for
// --baseline), at most MaxReportBytes of it.
func ReadReportFile(path string) (*Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := readCapped(f, path, MaxReportBytes, "a faultline report")
	if err != nil {
		return nil, err
	}
	return parseReport(data, path)
}

// parseReport reads a report.json; name is the file, for messages. It
// refuses what faultline never writes, so that Compare can rely on one
// verdict per requirement and stack. A state it does not know (from a newer
// faultline) is kept: Compare shows it as changed.
func parseReport(data []byte, name string) (*Report, error) {
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: not a faultline report: %w", name, err)
	}
	if len(r.Stacks) == 0 && len(r.Verdicts) == 0 {
		return nil, fmt.Errorf("%s: not a faultline report (no stacks, no verdicts)", name)
	}
	seen := map[[2]string]bool{}
	for i, v := range r.Verdicts {
		key := [2]string{v.Requirement, v.Stack}
		switch {
		case v.Requirement == "" || v.Stack == "":
			return nil, fmt.Errorf("%s: not a faultline report: verdict %d names no requirement or no stack", name, i+1)
		case seen[key]:
			return nil, fmt.Errorf("%s: not a faultline report: %s on %s has two verdicts", name, v.Requirement, v.Stack)
		}
		seen[key] = true
	}
	return &r, nil
}

// Change is one verdict that differs from a baseline run's.
type Change struct {
	Requirement, Stack string
	// Kind is one of the Change* constants.
	Kind string
	// Before and After are the verdicts' states ("" when there was none).
	Before, After State
}

// The kinds of change, worst first.
const (
	ChangeNewFailure     = "new failure"
	ChangeStartedVarying = "started varying"
	ChangeNewPass        = "new pass"
	ChangeStoppedVarying = "stopped varying"
	ChangeOther          = "changed"
	ChangeNew            = "not in the baseline"
	ChangeGone           = "not in this run"
)

var changeOrder = map[string]int{ChangeNewFailure: 0, ChangeStartedVarying: 1, ChangeNewPass: 2, ChangeStoppedVarying: 3, ChangeOther: 4, ChangeNew: 5, ChangeGone: 6}

func failing(s State) bool { return s == Fail || s == KnownDiscrepancy }

// Compare lists what changed from base to cur, stack by stack (stacks are
// matched by key), worst changes first.
func Compare(base, cur *Report) []Change {
	var out []Change
	// An index rather than Report.Verdict: a baseline read from a file may
	// hold very many verdicts, and a scan per verdict would be quadratic.
	byKey := map[[2]string]*Verdict{}
	for i := range base.Verdicts {
		key := [2]string{base.Verdicts[i].Requirement, base.Verdicts[i].Stack}
		if byKey[key] == nil {
			byKey[key] = &base.Verdicts[i]
		}
	}
	seen := map[[2]string]bool{}
	for _, v := range cur.Verdicts {
		key := [2]string{v.Requirement, v.Stack}
		seen[key] = true
		b := byKey[key]
		if b == nil {
			kind := ChangeNew
			if failing(v.State) {
				kind = ChangeNewFailure
			}
			out = append(out, Change{v.Requirement, v.Stack, kind, "", v.State})
			continue
		}
		var kind string
		switch {
		case failing(v.State) && !failing(b.State):
			kind = ChangeNewFailure
		case v.Varies && !b.Varies:
			kind = ChangeStartedVarying
		case v.State == Pass && b.State != Pass:
			kind = ChangeNewPass
		case !v.Varies && b.Varies:
			kind = ChangeStoppedVarying
		case v.State != b.State:
			kind = ChangeOther
		default:
			continue
		}
		out = append(out, Change{v.Requirement, v.Stack, kind, b.State, v.State})
	}
	for _, b := range base.Verdicts {
		if !seen[[2]string{b.Requirement, b.Stack}] {
			out = append(out, Change{b.Requirement, b.Stack, ChangeGone, b.State, ""})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if changeOrder[out[i].Kind] != changeOrder[out[j].Kind] {
			return changeOrder[out[i].Kind] < changeOrder[out[j].Kind]
		}
		if out[i].Stack != out[j].Stack {
			return out[i].Stack < out[j].Stack
		}
		return out[i].Requirement < out[j].Requirement
	})
	return out
}

// WriteChanges prints the changes, one per line.
func WriteChanges(w io.Writer, changes []Change) {
	if len(changes) == 0 {
		fmt.Fprintln(w, "No verdict changed against the baseline.")
		return
	}
	for _, c := range changes {
		fmt.Fprintf(w, "%-20s %-14s %-40s %s -> %s\n", c.Kind, c.Stack, c.Requirement, orDash(string(c.Before)), orDash(string(c.After)))
	}
}

// ErrCellsDiffer says a cell both runs judged has another state than in
// the baseline (faultline report --same-cells): exit code ExitUnexpected.
var ErrCellsDiffer = errors.New("cells differ from the baseline")

// Cell is one square of the grid: a requirement on a stack.
type Cell struct{ Requirement, Stack string }

func (c Cell) String() string { return c.Requirement + " on " + c.Stack }

// CellChange is a cell both runs judged whose state (CellState) differs.
type CellChange struct {
	Cell
	Before, After string
}

func (c CellChange) String() string { return c.Cell.String() + ": " + c.Before + " -> " + c.After }

// CellComparison is what SameCells found.
type CellComparison struct {
	// Compared counts the cells both runs judged.
	Compared int
	// Differ are those of them whose state differs, in this run's order.
	Differ []CellChange
	// OnlyBaseline and OnlyCurrent are the cells one run judged and the
	// other did not: not compared.
	OnlyBaseline, OnlyCurrent []Cell
	// Varying are cells both judged whose expectation lets them vary: not
	// compared either.
	Varying []Cell
}

// CellState is the state a verdict's cell shows: its state, and, when its
// runs disagreed, that it varies ("fail, varies"): a cell that starts or
// stops varying changes in the grid even where its worst state does not.
func CellState(v Verdict) string {
	if v.Varies {
		return string(v.State) + ", varies"
	}
	return string(v.State)
}

// SameCells compares the cells base and cur both judged, matched by
// requirement and stack key: the strict comparison a CI job makes of a
// run against a baseline, where Compare lists changes for people.
func SameCells(base, cur *Report) CellComparison {
	var c CellComparison
	byCell := map[Cell]*Verdict{}
	for i := range base.Verdicts {
		cell := Cell{base.Verdicts[i].Requirement, base.Verdicts[i].Stack}
		if byCell[cell] == nil {
			byCell[cell] = &base.Verdicts[i]
		}
	}
	seen := map[Cell]bool{}
	for _, v := range cur.Verdicts {
		cell := Cell{v.Requirement, v.Stack}
		if seen[cell] {
			continue
		}
		seen[cell] = true
		b := byCell[cell]
		if b == nil {
			c.OnlyCurrent = append(c.OnlyCurrent, cell)
			continue
		}
		if letsVary(b) || letsVary(&v) {
			// Its expectation says it may come out either way on this
			// stack (ExpectVaries): a difference says nothing of the load.
			c.Varying = append(c.Varying, cell)
			continue
		}
		c.Compared++
		if before, after := CellState(*b), CellState(v); before != after {
			c.Differ = append(c.Differ, CellChange{cell, before, after})
		}
	}
	for _, b := range base.Verdicts {
		cell := Cell{b.Requirement, b.Stack}
		if !seen[cell] {
			seen[cell] = true
			c.OnlyBaseline = append(c.OnlyBaseline, cell)
		}
	}
	return c
}

// letsVary says whether v's expectation lets its verdict come out more than
// one way (a documented "varies").
func letsVary(v *Verdict) bool {
	return v.Expectation != nil && v.Expectation.Verdict == ExpectVaries
}

// Summary is the comparison's one line: "same cells: N compared, M differ".
func (c CellComparison) Summary() string {
	return fmt.Sprintf("same cells: %d compared, %d differ", c.Compared, len(c.Differ))
}

// Write prints the summary, each differing cell, and the cells not
// compared, a line each.
func (c CellComparison) Write(w io.Writer) {
	fmt.Fprintln(w, c.Summary())
	for _, d := range c.Differ {
		fmt.Fprintln(w, d)
	}
	for _, cell := range c.Varying {
		fmt.Fprintf(w, "not compared, its expectation lets it vary: %s\n", cell)
	}
	for _, cell := range c.OnlyBaseline {
		fmt.Fprintf(w, "not compared, only in the baseline: %s\n", cell)
	}
	for _, cell := range c.OnlyCurrent {
		fmt.Fprintf(w, "not compared, only in this run: %s\n", cell)
	}
}

// Err is nil when every compared cell has the baseline's state;
// ErrCellsDiffer naming each differing cell, a line each, when one has
// not; and an error when the runs have no cell in common (different
// stacks, or requirements): nothing was compared, which no CI job means.
func (c CellComparison) Err() error {
	if c.Compared == 0 {
		return fmt.Errorf("no cell in common: the runs judged different stacks or requirements (%d cells only in the baseline, %d only in this run)",
			len(c.OnlyBaseline), len(c.OnlyCurrent))
	}
	if len(c.Differ) == 0 {
		return nil
	}
	lines := make([]string, len(c.Differ))
	for i, d := range c.Differ {
		lines[i] = d.String()
	}
	return fmt.Errorf("%w: %d of %d compared cells\n%s", ErrCellsDiffer, len(c.Differ), c.Compared, strings.Join(lines, "\n"))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
