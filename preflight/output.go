package preflight

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Formats are the output formats Write knows.
var Formats = []string{"text", "markdown", "json"}

// Write writes the report in format (text, markdown or json).
func Write(w io.Writer, r Report, format string) error {
	switch format {
	case "text":
		return WriteText(w, r)
	case "markdown":
		return WriteMarkdown(w, r)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return fmt.Errorf("unknown format %q (want %s)", format, strings.Join(Formats, ", "))
}

// WriteText writes the conditions, then one line per requirement.
func WriteText(w io.Writer, r Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "CONDITION\tSTATE\tREASON\n")
	for _, c := range r.Conditions {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, c.State, c.Reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "REQUIREMENT\tVERDICT\tNOTES\n")
	for _, v := range r.Requirements {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", v.ID, v.Line(), strings.Join(v.Notes, "; "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%s\n", summary(r))
	return err
}

// WriteMarkdown writes the same as two tables, for a note or an issue.
func WriteMarkdown(w io.Writer, r Report) error {
	fmt.Fprintf(w, "### faultline preflight (%s)\n\n| condition | state | reason |\n|---|---|---|\n", r.Server)
	for _, c := range r.Conditions {
		fmt.Fprintf(w, "| `%s` | %s | %s |\n", c.Name, c.State, cell(c.Reason))
	}
	fmt.Fprintf(w, "\n| requirement | verdict | notes |\n|---|---|---|\n")
	for _, v := range r.Requirements {
		fmt.Fprintf(w, "| `%s` | %s | %s |\n", v.ID, cell(v.Line()), cell(strings.Join(v.Notes, "; ")))
	}
	_, err := fmt.Fprintf(w, "\n%s\n", summary(r))
	return err
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// summary counts the verdicts.
func summary(r Report) string {
	counts := map[string]int{}
	for _, v := range r.Requirements {
		counts[v.Verdict]++
	}
	var parts []string
	for _, k := range []string{CanCheck, CannotCheck, Undecided, Pending} {
		if counts[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
		}
	}
	return fmt.Sprintf("%d requirements: %s.", len(r.Requirements), strings.Join(parts, ", "))
}
