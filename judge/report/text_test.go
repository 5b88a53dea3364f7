package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-k8s/faultline/judge/expectations"
	"github.com/faultline-k8s/faultline/judge/requirements"
	"github.com/faultline-k8s/faultline/judge/verdicts"
)

func TestGrid(t *testing.T) {
	r, ids := htmlTestReport(t)
	var b strings.Builder
	WriteGrid(&b, r)
	out := b.String()
	for _, id := range ids {
		if !strings.Contains(out, "\n"+id+" ") {
			t.Errorf("no row for %s:\n%s", id, out)
		}
	}
	for _, want := range []string{
		htmlTestStackA, htmlTestStackB, // columns
		"~✓2✗1!", // varying, unexpected there
		"≈",      // expected failure
		"No expectations for crio-1.35",
		"unexpected verdict(s), 1 setup failure(s)",
		"- setup failed on crio-1.35",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("grid lacks %q:\n%s", want, out)
		}
	}
}

func TestMarkdown(t *testing.T) {
	r, ids := htmlTestReport(t)
	var b strings.Builder
	WriteMarkdown(&b, r)
	out := b.String()
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "| `") {
			rows++
		}
	}
	if rows != len(ids) {
		t.Errorf("%d grid rows, want %d:\n%s", rows, len(ids), out)
	}
	for _, want := range []string{
		"| stack | runtime | Kubernetes | NRI |",
		"containerd retries forever. ([reference](https://github.com/containerd/containerd/issues/1))",
		"([dump](<containerd-1.36/run-2/dumps/varying spec/>))",
		"**unexpected**",
		"label filter `Area:dra || Area:cri`",
		"every spec run 3 times",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report.md lacks %q:\n%s", want, out)
		}
	}
}

// TestHeaderSplit: a run that split each stack's selection between
// clusters keeps its one label filter in the header and says the split
// apart; a run that did not says nothing of it.
func TestHeaderSplit(t *testing.T) {
	r, _ := htmlTestReport(t)
	var md, page strings.Builder
	WriteMarkdown(&md, r)
	if err := WriteHTML(&page, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(md.String(), "second cluster") || strings.Contains(page.String(), "<dt>clusters</dt>") {
		t.Error("a run that did not split says it did")
	}
	r.Header.Split = "Serial specs on a second cluster per stack"
	md.Reset()
	page.Reset()
	WriteMarkdown(&md, r)
	if err := WriteHTML(&page, r); err != nil {
		t.Fatal(err)
	}
	if want := "label filter `Area:dra || Area:cri`, Serial specs on a second cluster per stack."; !strings.Contains(md.String(), want) {
		t.Errorf("report.md lacks %q:\n%s", want, md.String())
	}
	if want := "<dt>clusters</dt><dd>Serial specs on a second cluster per stack</dd>"; !strings.Contains(page.String(), want) {
		t.Errorf("report.html lacks %q", want)
	}
}

func TestReplaceReadmeGrid(t *testing.T) {
	r, _ := htmlTestReport(t)
	doc := "# x\n\nbefore\n" + ReadmeBegin + "\nold grid\n" + ReadmeEnd + "\nafter\n"
	out, err := ReplaceReadmeGrid(doc, r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "old grid") || !strings.HasPrefix(out, "# x\n\nbefore\n"+ReadmeBegin+"\n| requirement |") || !strings.HasSuffix(out, ReadmeEnd+"\nafter\n") {
		t.Errorf("replaced:\n%s", out)
	}
	again, err := ReplaceReadmeGrid(out, r)
	if err != nil || again != out {
		t.Errorf("replacing twice changes the document: %v", err)
	}
	if _, err := ReplaceReadmeGrid("no markers", r); err == nil {
		t.Error("no error without markers")
	}
}

func TestJSONRoundTrip(t *testing.T) {
	r, _ := htmlTestReport(t)
	dir := t.TempDir()
	if err := WriteAll(dir, r); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Verdicts) != len(r.Verdicts) || len(back.Stacks) != 2 || back.OK() {
		t.Errorf("read back %d verdicts, %d stacks, ok=%v", len(back.Verdicts), len(back.Stacks), back.OK())
	}
	if _, err := ReadJSON(filepath.Join(dir, MarkdownFile)); err == nil {
		t.Error("report.md read as a report")
	}
}

// TestReadmeGridIsGenerated: the README's verdict grid is exactly what
// faultline report --update-readme writes for the full runs recorded in
// judge/verdicts/testdata (full10-<minor>-<runtime>: every suite on the
// pinned patch of each supported minor, with causes and premises as the
// specs record them), judged by the built-in expectations. New full runs
// replace them, and a changed catalogue or expectation shows here.
func TestReadmeGridIsGenerated(t *testing.T) {
	doc, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var runs []verdicts.Run
	for _, name := range []string{"full10-137-containerd", "full10-137-crio", "full10-136-containerd", "full10-136-crio", "full10-135-containerd", "full10-135-crio"} {
		run, err := verdicts.ReadGinkgoFile("../verdicts/testdata/"+name+".json.gz", 1, "")
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run)
	}
	x, err := expectations.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	rep := verdicts.Build(runs, x, verdicts.Header{OwnClusters: true})
	// A requirement added to the catalogue after the grid's run has no row
	// until a new full run is recorded: said, not failed, so that adding a
	// requirement touches only the catalogue, its spec and the expectations.
	inGrid := map[string]bool{}
	for _, r := range rep.Requirements {
		inGrid[r.ID] = true
	}
	for _, r := range requirements.All() {
		if !inGrid[r.ID] {
			t.Logf("%s is not in the grid's run yet: a new full run records it", r.ID)
		}
	}
	want, err := ReplaceReadmeGrid(string(doc), rep)
	if err != nil {
		t.Fatal(err)
	}
	if want != string(doc) {
		t.Errorf("README.md's grid is not the recorded run's; regenerate it (faultline report --artifacts DIR --update-readme README.md, and copy that run's ginkgo.json files into judge/verdicts/testdata):\n%s", want[strings.Index(want, ReadmeBegin):strings.Index(want, ReadmeEnd)])
	}
}

// A failed spec's line names its cause; other states have none to name.
func TestStateWithCause(t *testing.T) {
	for _, c := range []struct {
		spec verdicts.Spec
		want string
	}{
		{verdicts.Spec{State: verdicts.Fail, Cause: "abandoned"}, "fail (cause abandoned)"},
		{verdicts.Spec{State: verdicts.Fail}, "fail"},
		{verdicts.Spec{State: verdicts.NotImplemented}, "not implemented"},
	} {
		if got := stateWithCause(c.spec); got != c.want {
			t.Errorf("%+v: %q, want %q", c.spec, got, c.want)
		}
	}
}
