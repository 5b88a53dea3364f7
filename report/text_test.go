package report

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/faultline-k8s/faultline/requirements"
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
		"([dump](containerd-1.36/run-2/dumps/varying spec/))",
		"**unexpected**",
		"label filter `Area:dra || Area:cri`",
		"every spec run 3 times",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report.md lacks %q:\n%s", want, out)
		}
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

// TestReadmeGridIsGenerated: the README's verdict grid is what
// ReplaceReadmeGrid writes (faultline report --update-readme) for a full run:
// one row per requirement of the catalogue, in its order, every cell a
// state. A requirement added to the catalogue needs a new run's grid.
func TestReadmeGridIsGenerated(t *testing.T) {
	doc, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	begin, end := strings.Index(s, ReadmeBegin), strings.Index(s, ReadmeEnd)
	if begin < 0 || end < begin {
		t.Fatalf("README.md has no generated grid (%s ... %s)", ReadmeBegin, ReadmeEnd)
	}
	var ids []string
	for _, line := range strings.Split(s[begin:end], "\n") {
		id, ok := strings.CutPrefix(line, "| `")
		if !ok {
			continue
		}
		id, rest, _ := strings.Cut(id, "` ")
		ids = append(ids, id)
		cells := strings.Split(strings.TrimSuffix(rest, " |"), " | ")[1:]
		for _, c := range cells {
			if !readmeCellPattern.MatchString(c) {
				t.Errorf("%s: cell %q is not a generated one", id, c)
			}
		}
	}
	var want []string
	for _, r := range requirements.All() {
		want = append(want, r.ID)
	}
	if strings.Join(ids, " ") != strings.Join(want, " ") {
		t.Errorf("README grid rows:\n%v\nthe catalogue:\n%v\nregenerate it from a full run: faultline report --artifacts DIR --update-readme README.md", ids, want)
	}
}

// readmeCellPattern matches a cell WriteMarkdownGrid writes.
var readmeCellPattern = regexp.MustCompile(`^(~?[✓✗≈∅↷…0-9]+!?|[✓✗≈∅↷…]!? (pass|fail|known discrepancy|not implemented|skipped|pending))?$`)
