package report

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/faultline-k8s/faultline/judge/verdicts"
)

// WriteGrid prints the verdicts for a terminal: requirements as rows, stacks
// as columns, one symbol per cell; then what was unexpected, with why; then
// the specs that took well over their floor (WriteOverFloor).
func WriteGrid(w io.Writer, r *verdicts.Report) {
	idWidth := len("requirement")
	for _, req := range r.Requirements {
		idWidth = max(idWidth, len(req.ID))
	}
	widths := make([]int, len(r.Stacks))
	for i, s := range r.Stacks {
		widths[i] = max(utf8.RuneCountInString(s.Heading()), 2)
		for _, req := range r.Requirements {
			widths[i] = max(widths[i], utf8.RuneCountInString(Cell(r.Verdict(req.ID, s.Key))))
		}
	}
	pad := func(s string, n int) string { return s + strings.Repeat(" ", max(0, n-utf8.RuneCountInString(s))) }
	row := func(first string, cells []string) {
		line := pad(first, idWidth)
		for i, c := range cells {
			line += "  " + pad(c, widths[i])
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	heads := make([]string, len(r.Stacks))
	for i, s := range r.Stacks {
		heads[i] = s.Heading()
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, CheckedLine(r)+".")
	row("requirement", heads)
	area := ""
	for _, req := range r.Requirements {
		if req.Area != area {
			area = req.Area
			fmt.Fprintf(w, "-- %s\n", area)
		}
		cells := make([]string, len(r.Stacks))
		for i, s := range r.Stacks {
			cells[i] = Cell(r.Verdict(req.ID, s.Key))
		}
		row(req.ID, cells)
	}
	fmt.Fprintln(w, Legend())
	for _, s := range r.Stacks {
		fmt.Fprintf(w, "%s: %s\n", s.Key, s.Column())
	}
	writeOutcome(w, r)
	WriteOverFloor(w, r)
}

// WriteOutcome says whether the run is good, and if not, every unexpected
// verdict and setup failure with its reason: the grid's last lines.
func WriteOutcome(w io.Writer, r *verdicts.Report) { writeOutcome(w, r) }

func writeOutcome(w io.Writer, r *verdicts.Report) {
	for _, s := range r.Stacks {
		if r.Expectations[s.Key] == "" {
			fmt.Fprintf(w, "No expectations for %s: every failure there counts as unexpected.\n", s.Key)
		}
	}
	unexpected := r.Unexpected()
	if r.OK() {
		fmt.Fprintf(w, "Nothing unexpected: %s.\n", countStates(r))
		writeChecked(w, r)
		return
	}
	fmt.Fprintf(w, "%d unexpected verdict(s), %d setup failure(s): %s.\n", len(unexpected), len(r.SetupFailures), countStates(r))
	defer writeChecked(w, r)
	for _, v := range unexpected {
		fmt.Fprintf(w, "- %s on %s: %s\n", v.Requirement, v.Stack, v.Unexpected)
		for _, s := range v.Specs {
			if s.State != verdicts.Pass && s.State != verdicts.Pending {
				fmt.Fprintf(w, "    run %d, %s: %s: %s\n", s.Run, stateWithCause(s), s.Name, FirstLine(s.Message))
			}
		}
	}
	for _, f := range r.SetupFailures {
		fmt.Fprintf(w, "- setup failed on %s (run %d, %s): %s\n", f.Stack, f.Run, f.Name, FirstLine(f.Message))
	}
}

// writeChecked says how many requirements the run checked and, when it
// did not check them all, which it did not and why (those listed as
// unexpected above only by name).
func writeChecked(w io.Writer, r *verdicts.Report) {
	if r.Complete() {
		fmt.Fprintf(w, "%s.\n", CheckedLine(r))
		return
	}
	fmt.Fprintf(w, "Incomplete: %s; not checked:\n", CheckedLine(r))
	for _, v := range r.NotChecked() {
		if v.Unexpected != "" {
			fmt.Fprintf(w, "- %s on %s: %s (unexpected, above)\n", v.Requirement, v.Stack, v.State)
			continue
		}
		why := ""
		for _, s := range v.Specs {
			if s.State == v.State {
				why = fmt.Sprintf(": run %d: %s", s.Run, FirstLine(s.Message))
				break
			}
		}
		fmt.Fprintf(w, "- %s on %s: %s%s\n", v.Requirement, v.Stack, v.State, why)
	}
}

// countStates sums the verdicts per state: "52 verdicts: 40 pass, 2 fail, ...".
func countStates(r *verdicts.Report) string {
	counts := map[verdicts.State]int{}
	varies := 0
	for _, v := range r.Verdicts {
		counts[v.State]++
		if v.Varies {
			varies++
		}
	}
	parts := []string{fmt.Sprintf("%d verdicts", len(r.Verdicts))}
	for _, s := range verdicts.States {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	if varies > 0 {
		parts = append(parts, fmt.Sprintf("%d varying", varies))
	}
	return strings.Join(parts, ", ")
}

// FirstLine is a message for one line of a list: whitespace collapsed, at
// most 300 characters (a Gomega failure's first line alone is often just
// "Expected").
func FirstLine(s string) string { return verdicts.OneLine(s, 300) }

// stateWithCause is a spec's state, with the cause it failed with (the
// short name its requirement declares, judge/requirements/catalogue.yaml).
func stateWithCause(s verdicts.Spec) string {
	if s.State == verdicts.Fail && s.Cause != "" {
		return fmt.Sprintf("%s (cause %s)", s.State, s.Cause)
	}
	return string(s.State)
}
