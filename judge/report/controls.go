package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/faultline-k8s/faultline/judge/controls"
	"github.com/faultline-k8s/faultline/judge/verdicts"
)

// controlsIntro says what the reports' list of controls is.
const controlsIntro = "What shows each requirement's spec able to say fail (judge/controls/controls.yaml): a recorded run of a stack where its verdict is red, or, where none is recorded yet, the control planned."

// writeMarkdownControls lists each requirement of the report with its
// controls, and how many have one recorded.
func writeMarkdownControls(w io.Writer, r *verdicts.Report) {
	var lines []string
	recorded := 0
	for _, req := range r.Requirements {
		text := controls.Line(req.ID)
		if text == "" {
			continue
		}
		if cs, _ := controls.For(req.ID); controls.HasRecorded(cs) {
			recorded++
		} else {
			text = "**" + controls.NoneRecorded + "**" + strings.TrimPrefix(text, controls.NoneRecorded)
		}
		lines = append(lines, fmt.Sprintf("- `%s`: %s", req.ID, cellText(text)))
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "## Controls")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%s %d of %d requirements have a recorded red control.\n\n", controlsIntro, recorded, len(lines))
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}

// htmlControls are a requirement's controls as the page shows them in its
// row's heading.
type htmlControls struct {
	// Recorded counts the controls with a recorded red run.
	Recorded int
	Items    []htmlControl
}

type htmlControl struct {
	Recorded               bool
	Summary, Breaks, Needs string
}

// htmlControlsOf is nil for a requirement without an entry.
func htmlControlsOf(id string) *htmlControls {
	cs, ok := controls.For(id)
	if !ok {
		return nil
	}
	h := &htmlControls{}
	for _, c := range cs {
		if c.IsRecorded() {
			h.Recorded++
		}
		h.Items = append(h.Items, htmlControl{Recorded: c.IsRecorded(), Summary: c.Summary(), Breaks: c.Breaks, Needs: c.Needs})
	}
	return h
}
