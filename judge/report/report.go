// Package report renders a run's verdicts (package verdicts) for people and
// tools: a grid for the terminal, report.md to paste into an issue or a
// pull request, report.json for tools (and for --baseline), and a
// self-contained report.html. WriteAll writes the three files.
package report

import (
	"encoding/json"
	"fmt"
	"github.com/faultline-k8s/faultline/vocab/wire"
	"os"
	"path/filepath"
	"strings"

	"github.com/faultline-k8s/faultline/judge/expectations"
	"github.com/faultline-k8s/faultline/judge/verdicts"
)

// The files WriteAll writes into a run's artifacts directory.
const (
	MarkdownFile = "report.md"
	JSONFile     = "report.json"
	HTMLFile     = "report.html"
	// PNGFile is the screenshot of report.html a run takes when it can.
	PNGFile = "report.png"
)

// Files are what a report writes into an artifacts directory; a new run
// removes an earlier run's (and its run.json) first, so a run that gets
// nowhere leaves no older run's verdicts behind; only those a run recorded
// writing (internal/artifactdir), never a user's file of the same name.
var Files = []string{MarkdownFile, JSONFile, HTMLFile, PNGFile}

// Symbol is a state's one-character mark in the grids.
func Symbol(s verdicts.State) string {
	switch s {
	case verdicts.Pass:
		return "✓"
	case verdicts.Fail:
		return "✗"
	case verdicts.KnownDiscrepancy:
		return "≈"
	case verdicts.NotImplemented:
		return "∅"
	case verdicts.Inconclusive:
		return "?"
	case verdicts.Skipped:
		return "↷"
	case verdicts.Pending:
		return "…"
	}
	return "#" // a state this build does not know ("?" is inconclusive)
}

// UnexpectedMark follows the symbol of a verdict that makes the run fail.
const UnexpectedMark = "!"

// VariesMark precedes the symbols of a verdict that varied between runs.
const VariesMark = "~"

// Cell is a verdict's text in a grid: its symbol, or for a varying verdict
// every state with its count ("~✓2✗1"), then "!" if it is unexpected.
func Cell(v *verdicts.Verdict) string {
	if v == nil {
		return ""
	}
	var b strings.Builder
	if v.Varies {
		b.WriteString(VariesMark)
		counts := v.Counts()
		for _, s := range verdicts.States {
			if counts[s] > 0 {
				fmt.Fprintf(&b, "%s%d", Symbol(s), counts[s])
			}
		}
	} else {
		b.WriteString(Symbol(v.State))
	}
	if v.Unexpected != "" {
		b.WriteString(UnexpectedMark)
	}
	return b.String()
}

// CheckedLine says how many of the selected requirements the run checked:
// "46 of 46 requirements checked", per stack too when there are several,
// and how many pending ones are left out of the count.
func CheckedLine(r *verdicts.Report) string {
	c := r.Count()
	line := fmt.Sprintf("%d of %d requirements checked", c.Checked, c.Selected)
	if len(r.Stacks) > 1 {
		var per []string
		for _, s := range r.Stacks {
			sub := &verdicts.Report{Stacks: []wire.StackInfo{s}}
			for _, v := range r.Verdicts {
				if v.Stack == s.Key {
					sub.Verdicts = append(sub.Verdicts, v)
				}
			}
			sc := sub.Count()
			per = append(per, fmt.Sprintf("%s %d of %d", s.Key, sc.Checked, sc.Selected))
		}
		line += " (counted per stack: " + strings.Join(per, ", ") + ")"
	}
	if c.Pending > 0 {
		line += fmt.Sprintf("; %d pending, not counted", c.Pending)
	}
	return line
}

// Legend explains the symbols.
func Legend() string {
	var parts []string
	for _, s := range verdicts.States {
		parts = append(parts, Symbol(s)+" "+string(s))
	}
	return strings.Join(parts, "  ") + "  " + VariesMark + " varies between runs (count per state)  " + UnexpectedMark + " unexpected"
}

// WriteJSON writes the report for tools.
func WriteJSON(path string, r *verdicts.Report) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// ReadJSON reads a report WriteJSON wrote (an earlier run's, for --baseline:
// a report.json file or the directory that holds one).
func ReadJSON(path string) (*verdicts.Report, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, JSONFile)
	}
	return verdicts.ReadReportFile(path)
}

// WriteAll writes report.md, report.json and report.html into dir. A name
// that is there already and is not a plain file (a symbolic link a results
// tarball brought along, pointing at ~/.bashrc) is refused, not followed.
func WriteAll(dir string, r *verdicts.Report) error {
	for _, name := range []string{MarkdownFile, JSONFile, HTMLFile} {
		p := filepath.Join(dir, name)
		if st, err := os.Lstat(p); err == nil && !st.Mode().IsRegular() {
			return fmt.Errorf("%s is not a plain file (%s): not writing the report through it", p, st.Mode().Type())
		}
	}
	var md strings.Builder
	WriteMarkdown(&md, r)
	if err := os.WriteFile(filepath.Join(dir, MarkdownFile), []byte(md.String()), 0o644); err != nil {
		return err
	}
	if err := WriteJSON(filepath.Join(dir, JSONFile), r); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, HTMLFile))
	if err != nil {
		return err
	}
	if err := WriteHTML(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// FromArtifacts judges the runs a run's artifacts directory lists (its
// run.json) and writes report.md, report.json and report.html beside them.
// It judges by the expectations at expectationsPath, else by those the run
// used (run.json), else by the built-in ones.
func FromArtifacts(dir, expectationsPath string) (*verdicts.Report, error) {
	m, runs, err := verdicts.ReadArtifacts(dir)
	if err != nil {
		return nil, err
	}
	if expectationsPath == "" {
		expectationsPath = m.Header.Expectations
	}
	x, err := expectations.Load(expectationsPath)
	if err != nil {
		return nil, err
	}
	m.Header.Expectations = expectationsPath
	rep := verdicts.Build(runs, x, m.Header)
	return rep, WriteAll(dir, rep)
}

// Combine judges the runs of several artifacts directories together, a
// column per stack (runs of different variants, Kubernetes releases or
// suites), and writes report.md, report.json and report.html into out. A
// stack may come from one directory only. Dumps keep linking into their
// run's directory. The header is the first run's, its filters joined (a
// stack each), and its splits (Header.Split) too.
func Combine(dirs []string, out, expectationsPath string) (*verdicts.Report, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	absOut, err := filepath.Abs(out)
	if err != nil {
		return nil, err
	}
	var all []verdicts.Run
	var header verdicts.Header
	var filters []string
	// splits is each run's Split with the stacks it judged, in order.
	var splits []struct {
		split  string
		stacks []string
	}
	from := map[string]string{}
	for i, dir := range dirs {
		m, runs, err := verdicts.ReadArtifacts(dir)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		if i == 0 {
			header = m.Header
		}
		header.OwnClusters = header.OwnClusters && m.Header.OwnClusters
		absDir, err := filepath.Abs(dir)
		if err != nil {
			return nil, err
		}
		relink := func(specs []verdicts.Spec) {
			for j := range specs {
				if specs[j].Dump == "" {
					continue
				}
				if rel, err := filepath.Rel(absOut, filepath.Join(absDir, filepath.FromSlash(specs[j].Dump))); err == nil {
					specs[j].Dump = filepath.ToSlash(rel)
				}
			}
		}
		seen := map[string]bool{}
		var stacks []string
		for _, run := range runs {
			key := run.Stack.Key
			if other, ok := from[key]; ok && other != dir {
				return nil, fmt.Errorf("stack %s is in %s and in %s: combine runs of different stacks", key, other, dir)
			}
			from[key] = dir
			relink(run.Specs)
			relink(run.SetupFailures)
			if !seen[key] {
				seen[key] = true
				stacks = append(stacks, key)
				filter := run.LabelFilter
				if len(run.Focus) > 0 {
					filter = strings.TrimSpace(filter + " focus " + strings.Join(run.Focus, ","))
				}
				if filter == "" {
					filter = "all"
				}
				filters = append(filters, key+": "+filter)
			}
			run.LabelFilter, run.Focus = "", nil
			all = append(all, run)
		}
		splits = append(splits, struct {
			split  string
			stacks []string
		}{m.Header.Split, stacks})
	}
	header.LabelFilter, header.Focus = strings.Join(filters, "; "), nil
	// The runs' splits: one said once when every run split alike, else
	// each with the stacks it holds for.
	header.Split = ""
	same := true
	for _, s := range splits {
		same = same && s.split == splits[0].split
	}
	if same && len(splits) > 0 {
		header.Split = splits[0].split
	} else {
		var parts []string
		for _, s := range splits {
			if s.split != "" {
				parts = append(parts, strings.Join(s.stacks, ", ")+": "+s.split)
			}
		}
		header.Split = strings.Join(parts, "; ")
	}
	x, err := expectations.Load(expectationsPath)
	if err != nil {
		return nil, err
	}
	header.Expectations = expectationsPath
	rep := verdicts.Build(all, x, header)
	return rep, WriteAll(out, rep)
}
