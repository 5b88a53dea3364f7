package verdicts

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
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

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
