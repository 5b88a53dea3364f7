package report

import (
	"github.com/faultline-k8s/faultline/vocab/wire"
	"strings"
	"testing"

	"github.com/faultline-k8s/faultline/judge/verdicts"
)

// TestInconclusiveSymbol: inconclusive has its own symbol, which the legend
// explains; no two states share one.
func TestInconclusiveSymbol(t *testing.T) {
	if got := Symbol(verdicts.Inconclusive); got != "?" {
		t.Errorf("Symbol(inconclusive) = %q, want ?", got)
	}
	seen := map[string]verdicts.State{}
	for _, s := range verdicts.States {
		if other, dup := seen[Symbol(s)]; dup {
			t.Errorf("%s and %s share the symbol %s", s, other, Symbol(s))
		}
		seen[Symbol(s)] = s
		if _, ok := htmlStates[s]; !ok {
			t.Errorf("the HTML legend lacks %s", s)
		}
	}
	if !strings.Contains(Legend(), "? inconclusive") {
		t.Errorf("legend %q lacks inconclusive", Legend())
	}
}

// coverageReport: on another cluster, one requirement passes, one is
// skipped, one inconclusive, one pending.
func coverageReport() *verdicts.Report {
	run := verdicts.Run{Stack: wire.StackInfo{Key: "crio-1.37", Runtime: "crio"}}
	for id, s := range map[string]verdicts.State{
		"DRA-TRANSIENT-RETRIED": verdicts.Pass, "DRA-UNCLASSIFIED-TRANSIENT": verdicts.Skipped,
		"DRA-BAD-CONFIG-NAMED": verdicts.Inconclusive, "DRA-DEADLINE-RETRIED": verdicts.Pending,
	} {
		run.Specs = append(run.Specs, verdicts.Spec{Name: "checks " + id, Requirements: []string{id}, State: s, Message: "because " + string(s), Run: 1})
	}
	return verdicts.Build([]verdicts.Run{run}, nil, verdicts.Header{})
}

// TestIncompleteSaysSo: a run that checked less says "N of M requirements
// checked" in the terminal grid, report.md and report.html, and lists what
// it did not check with why; nothing unexpected still reads so.
func TestIncompleteSaysSo(t *testing.T) {
	r := coverageReport()
	var grid, md, page strings.Builder
	WriteGrid(&grid, r)
	WriteMarkdown(&md, r)
	if err := WriteHTML(&page, r); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		out  string
		want []string
	}{
		"grid":     {grid.String(), []string{"1 of 3 requirements checked; 1 pending, not counted.", "Nothing unexpected: ", "Incomplete: 1 of 3 requirements checked", "- DRA-UNCLASSIFIED-TRANSIENT on crio-1.37: skipped: run 1: because skipped", "- DRA-BAD-CONFIG-NAMED on crio-1.37: inconclusive: run 1: because inconclusive", "?"}},
		"markdown": {md.String(), []string{"**Incomplete: 1 of 3 requirements checked; 1 pending, not counted**", "? inconclusive"}},
		"html":     {page.String(), []string{`class="summary incomplete"`, "INCOMPLETE: nothing unexpected, 1 of 3 requirements checked", "DRA-BAD-CONFIG-NAMED on crio-1.37</a>: inconclusive", "state-inconclusive"}},
	} {
		for _, want := range c.want {
			if !strings.Contains(c.out, want) {
				t.Errorf("%s lacks %q:\n%s", name, want, c.out)
			}
		}
	}
	var outcome strings.Builder
	WriteOutcome(&outcome, r)
	if out := outcome.String(); !strings.Contains(out, "\nNothing unexpected: ") || strings.Index(out, "Nothing unexpected") > strings.Index(out, "Incomplete") {
		t.Errorf("the outcome must still say nothing is unexpected first (the runners' tests look for it): %q", out)
	}
}

// TestCompleteSaysSo: a run that checked everything it selected says N of
// N, per stack when there are several, and nothing about incompleteness.
func TestCompleteSaysSo(t *testing.T) {
	var runs []verdicts.Run
	for _, key := range []string{"containerd-1.37", "crio-1.37"} {
		runs = append(runs, verdicts.Run{Stack: wire.StackInfo{Key: key}, Specs: []verdicts.Spec{
			{Name: "a", Requirements: []string{"DRA-TRANSIENT-RETRIED"}, State: verdicts.Pass, Run: 1},
		}})
	}
	r := verdicts.Build(runs, nil, verdicts.Header{})
	var grid, page strings.Builder
	WriteGrid(&grid, r)
	if err := WriteHTML(&page, r); err != nil {
		t.Fatal(err)
	}
	want := "2 of 2 requirements checked (counted per stack: containerd-1.37 1 of 1, crio-1.37 1 of 1)"
	if !strings.Contains(grid.String(), want+".") || strings.Contains(grid.String(), "Incomplete") {
		t.Errorf("grid:\n%s\nwant %q and no Incomplete", grid.String(), want)
	}
	if !strings.Contains(page.String(), `class="summary ok"`) || !strings.Contains(page.String(), want) {
		t.Errorf("report.html: want an OK summary and %q", want)
	}
}
