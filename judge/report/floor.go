package report

// Each spec's run time beside its floor, the component timers its scenario
// waits out by design (wire.Floor), and the specs that took more than
// verdicts.FloorFactor times it.

import (
	"fmt"
	"io"
	"strings"

	"github.com/faultline-k8s/faultline/judge/verdicts"
	"github.com/faultline-k8s/faultline/vocab/wire"
)

// NoFloor stands for a floor or a ratio that is not known.
const NoFloor = "—"

// FloorText is a spec's floor: "1m35s", "0s" for a scenario that waits for
// no timer, NoFloor when the spec declared none.
func FloorText(f *wire.Floor) string {
	if f == nil {
		return NoFloor
	}
	return roundDuration(f.Total)
}

// FloorParts names the timers of a floor: "DRA call deadline 45s +
// kubelet resync (syncFrequency) 1m0s"; "no timer"; "" when unknown.
func FloorParts(f *wire.Floor) string {
	switch {
	case f == nil:
		return ""
	case len(f.Parts) == 0:
		return "no timer"
	}
	parts := make([]string, len(f.Parts))
	for i, p := range f.Parts {
		parts[i] = p.String()
	}
	return strings.Join(parts, " + ")
}

// RatioText is a spec's run time over its floor, "1.7×"; NoFloor when its
// floor is unknown or zero.
func RatioText(s verdicts.Spec) string {
	ratio, ok := s.FloorRatio()
	if !ok {
		return NoFloor
	}
	return fmt.Sprintf("%.1f×", ratio)
}

// floorCounts counts the specs of the report and those that declared a
// floor.
func floorCounts(r *verdicts.Report) (declared, all int) {
	for _, s := range r.Stacks {
		for _, spec := range r.StackSpecs(s.Key) {
			all++
			if spec.Floor != nil {
				declared++
			}
		}
	}
	return declared, all
}

// WriteOverFloor writes the specs that took more than
// verdicts.FloorFactor times their floor, stack by stack, the largest ratio
// first: the last lines of the text summary (WriteGrid). It writes nothing
// for a report in which no spec declared a floor (a run of a faultline
// before floors).
func WriteOverFloor(w io.Writer, r *verdicts.Report) {
	if !r.HasFloors() {
		return
	}
	declared, all := floorCounts(r)
	slow := r.OverFloor()
	if len(slow) == 0 {
		fmt.Fprintf(w, "Time against floor: no spec took over %.1f× its floor (%d of %d specs declare one).\n", verdicts.FloorFactor, declared, all)
		return
	}
	fmt.Fprintf(w, "Time against floor (the timers the stack makes a spec wait by design; %d of %d specs declare one): %d took over %.1f× it, the slowest first:\n",
		declared, all, len(slow), verdicts.FloorFactor)
	stack := ""
	for _, s := range slow {
		if s.Stack != stack {
			stack = s.Stack
			fmt.Fprintf(w, "%s:\n", stack)
		}
		fmt.Fprintf(w, "- %s  %s, floor %s (%s): %s%s\n", RatioText(s.Spec), roundDuration(s.Duration), FloorText(s.Floor), FloorParts(s.Floor), specTitle(s.Spec), specNote(r, s.Spec))
	}
}

// OverFloorText is what WriteOverFloor writes.
func OverFloorText(r *verdicts.Report) string {
	var b strings.Builder
	WriteOverFloor(&b, r)
	return b.String()
}

// specTitle names a spec by its requirements and its text.
func specTitle(s verdicts.Spec) string {
	if len(s.Requirements) == 0 {
		return s.Name
	}
	return strings.Join(s.Requirements, ", ") + ": " + s.Name
}

// specNote says which run a spec's line is of, when there were several,
// and its state when it did not pass.
func specNote(r *verdicts.Report, s verdicts.Spec) string {
	var notes []string
	if r.Header.Repeat > 1 {
		notes = append(notes, fmt.Sprintf("run %d", s.Run))
	}
	if s.State != verdicts.Pass {
		notes = append(notes, stateWithCause(s))
	}
	if len(notes) == 0 {
		return ""
	}
	return " [" + strings.Join(notes, ", ") + "]"
}

// floorIntro says what a floor is, for report.md and report.html.
const floorIntro = "A spec's floor is the time its scenario must wait out by design: the component timers it waits for " +
	"(the kubelet's deadlines, resyncs and back-offs, a runtime's cleanup loop, a plugin request timeout): " +
	"a retry at its base interval, without jitter; a window that must outlast a timer at the timer's longest; " +
	"a periodic loop (≤) at its whole period. faultline's own delays (a stall of a chosen length, " +
	"a quiet window, poll slack) are not in it: the time beyond the floor is faultline's overhead or the stack being slow."

// writeMarkdownFloors writes report.md's section on time against floor:
// the specs over verdicts.FloorFactor times their floor, then every spec's
// time and floor, folded.
func writeMarkdownFloors(w io.Writer, r *verdicts.Report) {
	fmt.Fprintln(w)
	fmt.Fprintln(w, "## Time against floor")
	fmt.Fprintln(w)
	if !r.HasFloors() {
		fmt.Fprintln(w, "No spec of this run declares its floor (a faultline before floors): how its time compares with the stack's timers is unknown.")
		return
	}
	fmt.Fprintln(w, floorIntro)
	fmt.Fprintln(w)
	slow := r.OverFloor()
	if len(slow) == 0 {
		fmt.Fprintf(w, "No spec took over %.1f× its floor.\n", verdicts.FloorFactor)
	} else {
		fmt.Fprintf(w, "Over %.1f× their floor, the slowest first:\n\n", verdicts.FloorFactor)
		fmt.Fprintln(w, "| stack | spec | run | state | took | floor | ratio | the floor's timers |")
		fmt.Fprintln(w, "|---|---|---:|---|---:|---:|---:|---|")
		for _, s := range slow {
			writeMarkdownFloorRow(w, s.Stack, s.Spec)
		}
	}
	declared, all := floorCounts(r)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "<details><summary>Every spec's time and floor (%d of %d specs declare one)</summary>\n\n", declared, all)
	fmt.Fprintln(w, "| stack | spec | run | state | took | floor | ratio | the floor's timers |")
	fmt.Fprintln(w, "|---|---|---:|---|---:|---:|---:|---|")
	for _, st := range r.Stacks {
		for _, s := range r.StackSpecs(st.Key) {
			writeMarkdownFloorRow(w, st.Key, s)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "</details>")
}

func writeMarkdownFloorRow(w io.Writer, stack string, s verdicts.Spec) {
	fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s | %s | %s |\n", stack, cellText(specTitle(s)), s.Run, cellText(stateWithCause(s)),
		roundDuration(s.Duration), FloorText(s.Floor), RatioText(s), cellText(FloorParts(s.Floor)))
}
