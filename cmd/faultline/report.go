package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/faultline-k8s/faultline/internal/artifactdir"
	"github.com/faultline-k8s/faultline/internal/version"
	"github.com/faultline-k8s/faultline/judge/expectations"
	"github.com/faultline-k8s/faultline/judge/report"
	"github.com/faultline-k8s/faultline/judge/verdicts"
)

func init() {
	register("report", "judge a run's results again: the grid, report.md/.json/.html; --baseline compares with an earlier run (--same-cells: strictly)",
		func(fs *flag.FlagSet) func(context.Context, []string) error {
			var dirs listFlag
			fs.Var(&dirs, "artifacts", "the run's artifacts directory (its run.json lists the results; default _artifacts); repeatable or comma-separated: several runs judged together, a column per stack, written to --out")
			out := fs.String("out", "", "with several --artifacts: the directory the combined report goes to")
			expect := fs.String("expectations", "", "judge by these expectations (a file or a directory of <stack>.yaml); default: those the run judged by")
			baseline := fs.String("baseline", "", "an earlier run's artifacts directory (or its report.json): print what changed")
			sameCells := fs.Bool("same-cells", false, "with --baseline: exit 1 when a cell (requirement on stack) both runs judged has another state than in the baseline; cells in one run only are listed, not compared")
			allowIncomplete := fs.Bool("allow-incomplete", false, "exit 0, not 4, when a selected requirement was not checked (skipped or inconclusive) and nothing is unexpected")
			readme := fs.String("update-readme", "", "replace the verdict grid in this Markdown file (between the lines "+report.ReadmeBegin+" and "+report.ReadmeEnd+") with this run's")
			return func(ctx context.Context, args []string) error {
				if len(args) > 0 {
					return usageError{fmt.Errorf("unexpected arguments %q", args)}
				}
				if *sameCells && *baseline == "" {
					return usageError{fmt.Errorf("--same-cells compares with a baseline: name it with --baseline")}
				}
				if *expect != "" {
					if _, err := expectations.Load(*expect); err != nil {
						return usageError{err}
					}
				}
				list := splitList(dirs)
				if len(list) == 0 {
					list = []string{"_artifacts"}
				}
				for _, dir := range list {
					if _, err := os.Stat(filepath.Join(dir, verdicts.ManifestFile)); err != nil {
						return usageError{fmt.Errorf("--artifacts %s is not the artifacts directory of a faultline run (no %s)", dir, verdicts.ManifestFile)}
					}
				}
				if len(list) > 1 && *out == "" {
					return usageError{fmt.Errorf("several --artifacts are judged together into --out DIR: name it")}
				}
				if len(list) == 1 && *out != "" {
					return usageError{fmt.Errorf("--out is for several --artifacts; one run's report goes beside its results")}
				}
				var rep *verdicts.Report
				var err, cellsErr error
				if len(list) > 1 {
					if err := claimOut(*out); err != nil {
						return err
					}
					rep, err = report.Combine(list, *out, *expect)
				} else {
					rep, err = report.FromArtifacts(list[0], *expect)
				}
				if err != nil {
					return err
				}
				report.WriteGrid(os.Stdout, rep)
				if *baseline != "" {
					base, err := report.ReadJSON(*baseline)
					if err != nil {
						return usageError{fmt.Errorf("--baseline: %w", err)}
					}
					fmt.Printf("\nAgainst the baseline %s:\n", *baseline)
					verdicts.WriteChanges(os.Stdout, verdicts.Compare(base, rep))
					if *sameCells {
						c := verdicts.SameCells(base, rep)
						fmt.Println()
						c.Write(os.Stdout)
						cellsErr = c.Err()
					}
				}
				if *readme != "" {
					if err := report.UpdateReadme(*readme, rep); err != nil {
						return err
					}
				}
				return sameCellsOutcome(cellsErr, rep.Err(*allowIncomplete))
			}
		})
}

// sameCellsOutcome is the error of faultline report with --same-cells
// (cells: SameCells' Err) and the run's own (verdicts: Report.Err). Cells
// that differ exit 1 as unexpected verdicts do, the run's error beside
// them; runs with no cell in common could not be compared: the command
// failed (exit 3), whatever the verdicts, which the message still names.
func sameCellsOutcome(cells, run error) error {
	switch {
	case cells == nil:
		return run
	case run == nil:
		return cells
	case errors.Is(cells, verdicts.ErrCellsDiffer):
		return errors.Join(cells, run)
	}
	return fmt.Errorf("%w\n(and the run: %v)", cells, run)
}

// claimOut lets a combined report into --out only where faultline made the
// directory (or it is empty), and never over a file a user put there: --out
// may name any directory.
func claimOut(dir string) error {
	d, err := artifactdir.Claim(dir, "--out", "faultline report "+version.String())
	if err == nil {
		err = d.Reserve(report.MarkdownFile, report.JSONFile, report.HTMLFile)
	}
	if errors.Is(err, artifactdir.ErrNotOurs) {
		return usageError{err}
	}
	return err
}
