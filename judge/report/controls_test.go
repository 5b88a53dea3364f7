package report

import (
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/faultline-k8s/faultline/judge/controls"
	"github.com/faultline-k8s/faultline/judge/expectations"
	"github.com/faultline-k8s/faultline/judge/verdicts"
)

// controlsTestReport is a recorded full run judged by the built-in
// expectations: it has requirements with a recorded control and without.
func controlsTestReport(t *testing.T) *verdicts.Report {
	t.Helper()
	run, err := verdicts.ReadGinkgoFile("../verdicts/testdata/full10-137-containerd.json.gz", 1, "")
	if err != nil {
		t.Fatal(err)
	}
	x, err := expectations.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	return verdicts.Build([]verdicts.Run{run}, x, verdicts.Header{OwnClusters: true})
}

// TestMarkdownListsControls: report.md lists every requirement of the run
// with its controls, a requirement with none recorded said so.
func TestMarkdownListsControls(t *testing.T) {
	r := controlsTestReport(t)
	var b strings.Builder
	WriteMarkdown(&b, r)
	out := b.String()
	if !strings.Contains(out, "\n## Controls\n") {
		t.Fatalf("report.md has no Controls section:\n%s", out)
	}
	for _, want := range []string{
		"- `DRA-DEADLINE-ERROR-NAMED`: recorded: red on containerd-1.37 (v1.37.2) in full10-137-containerd, cause driver-not-named\n",
		"- `DRA-DEADLINE-RETRIED`: mutant: red on containerd-1.37+mutant-dra-call-timeout-90s (v1.37.2), patch ",
		"- `DRA-TRANSIENT-RETRIED`: mutant: red on containerd-1.37+mutant-dra-fail-on-second-error (v1.37.2), patch ",
		"- `DRA-PERMANENT-FAILS-POD`: **none recorded yet**; no honest control: Released kubelets lack KEP-5322",
		"- `CRI-SANDBOX-RETRY-GETS-FIRST`: recorded: red on containerd-1.37 (v1.37.2) in full10-137-containerd, cause abandoned; recorded: red on crio-1.37 (v1.37.2) in full10-137-crio, cause abandoned\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	section := out[strings.Index(out, "\n## Controls\n"):]
	for _, req := range r.Requirements {
		if !strings.Contains(section, "- `"+req.ID+"`: ") {
			t.Errorf("the Controls section lacks %s", req.ID)
		}
	}
}

// TestHTMLListsControls: each requirement's heading in the grid opens to
// its controls, a requirement with none recorded marked as such.
func TestHTMLListsControls(t *testing.T) {
	r := controlsTestReport(t)
	doc := htmlTestParse(t, r)
	rows := htmlTestFind(doc, func(n *html.Node) bool { return n.Data == "tr" && htmlTestHasClass(n, "requirement") })
	if len(rows) != len(r.Requirements) {
		t.Fatalf("%d rows, want %d", len(rows), len(r.Requirements))
	}
	for _, row := range rows {
		id := htmlTestAttr(row, "data-id")
		cs, _ := controls.For(id)
		found := htmlTestFind(row, func(n *html.Node) bool { return n.Data == "details" && htmlTestHasClass(n, "controls") })
		if len(found) != 1 {
			t.Errorf("%s: %d controls lists, want 1", id, len(found))
			continue
		}
		text := htmlTestText(found[0])
		if controls.HasRecorded(cs) == htmlTestHasClass(found[0], "none-recorded") {
			t.Errorf("%s: class %q, recorded %v", id, htmlTestAttr(found[0], "class"), controls.HasRecorded(cs))
		}
		for _, c := range cs {
			if !strings.Contains(text, c.Summary()) || !strings.Contains(text, c.Breaks) {
				t.Errorf("%s: the controls list lacks %q", id, c.Summary())
			}
		}
		if !controls.HasRecorded(cs) && !strings.Contains(text, "controls: none recorded yet") {
			t.Errorf("%s: %q does not say none is recorded", id, text)
		}
	}
}
