package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/faultline-k8s/faultline/judge/controls"
	"github.com/faultline-k8s/faultline/judge/requirements"
)

func init() {
	register("requirements", "list the requirements faultline checks, each with its controls (no cluster needed)",
		func(fs *flag.FlagSet) func(context.Context, []string) error {
			format := fs.String("o", "text", "output: text, markdown or json")
			return func(ctx context.Context, args []string) error {
				return writeRequirements(os.Stdout, *format)
			}
		})
}

// requirementWithControls is a requirement as -o json prints it: the
// catalogue's entry and its controls (judge/controls).
type requirementWithControls struct {
	requirements.Requirement
	Controls []controls.Control `json:"controls"`
	// NoHonestControl says why no control can be both honest and precise.
	NoHonestControl string `json:"noHonestControl,omitempty"`
}

// writeRequirements prints the catalogue in format, each requirement with
// its controls: what shows its spec able to say fail (a recorded red run),
// or the control planned while none is recorded.
func writeRequirements(w io.Writer, format string) error {
	all := requirements.All()
	switch format {
	case "json":
		out := make([]requirementWithControls, 0, len(all))
		for _, r := range all {
			cs, _ := controls.For(r.ID)
			out = append(out, requirementWithControls{Requirement: r, Controls: cs, NoHonestControl: controls.NoHonestControl(r.ID)})
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	case "markdown":
		fmt.Fprintln(w, "| ID | area | requirement | source | controls |")
		fmt.Fprintln(w, "|---|---|---|---|---|")
		for _, r := range all {
			fmt.Fprintf(w, "| `%s` | %s | %s | [%s](%s) | %s |\n", r.ID, r.Area, cell(r.Title), r.Source, r.Link, cell(controls.Line(r.ID)))
		}
		return nil
	case "text":
		recorded, noHonest := 0, 0
		for _, r := range all {
			fmt.Fprintf(w, "%-38s %-9s %s\n%-48s source: %s <%s>\n", r.ID, r.Area, r.Title, "", r.Source, r.Link)
			cs, _ := controls.For(r.ID)
			if controls.HasRecorded(cs) {
				recorded++
			}
			for _, c := range cs {
				fmt.Fprintf(w, "%-48s control: %s\n", "", c.Summary())
			}
			if why := controls.NoHonestControl(r.ID); why != "" {
				noHonest++
				fmt.Fprintf(w, "%-48s no honest control: %s\n", "", why)
			}
		}
		fmt.Fprintf(w, "\n%d of %d requirements have a recorded red control (judge/controls/controls.yaml); %d without one: %d planned, not recorded yet, and %d with no honest control.\n",
			recorded, len(all), len(all)-recorded, len(all)-recorded-noHonest, noHonest)
		return nil
	}
	return usageError{fmt.Errorf("-o %q: want text, markdown or json", format)}
}

// cell keeps a value inside one Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}
