package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/faultline-k8s/faultline/judge/verdicts"
	"github.com/faultline-k8s/faultline/vocab/wire"
)

// floorTestReport is a run of two stacks whose specs declared floors: some
// over verdicts.FloorFactor times theirs, one under, one of no timer, one
// without a floor.
func floorTestReport(t *testing.T) *verdicts.Report {
	t.Helper()
	resync := wire.FloorPart{Name: "kubelet resync (syncFrequency)", Duration: 2 * time.Minute, Times: 2}
	gc := wire.FloorPart{Name: "kubelet container garbage collection", Duration: time.Minute, UpTo: true}
	floor := func(parts ...wire.FloorPart) *wire.Floor {
		f := &wire.Floor{Parts: parts}
		for _, p := range parts {
			f.Total += p.Duration
		}
		return f
	}
	spec := func(id, name string, state verdicts.State, took time.Duration, f *wire.Floor) verdicts.Spec {
		s := verdicts.Spec{Name: name, Location: "suites/x/x.go:1", Requirements: []string{id}, State: state, Duration: took, Run: 1, Floor: f}
		if state == verdicts.Fail {
			s.Cause = "calls-wrong"
			s.Message = "exactly 3 calls"
		}
		return s
	}
	runs := []verdicts.Run{
		{Stack: wire.StackInfo{Key: "containerd-1.37", Runtime: "containerd"}, Specs: []verdicts.Spec{
			spec("DRA-TRANSIENT-RETRIED", "transient over", verdicts.Pass, 5*time.Minute, floor(resync)),
			spec("DRA-UNCLASSIFIED-TRANSIENT", "unclassified under", verdicts.Pass, 150*time.Second, floor(resync)),
			spec("DRA-TAINTED-DEVICE-EVICTS", "taint no timer", verdicts.Pass, 30*time.Second, floor()),
			spec("DRA-HEALTH-IN-POD-STATUS", "health undeclared", verdicts.Pass, 30*time.Second, nil),
		}},
		{Stack: wire.StackInfo{Key: "crio-1.37", Runtime: "crio"}, Specs: []verdicts.Spec{
			spec("NRI-ASYNC-ERROR-IGNORED", "async over", verdicts.Fail, 3*time.Minute, floor(gc)),
		}},
	}
	return verdicts.Build(runs, nil, verdicts.Header{})
}

func TestOverFloorText(t *testing.T) {
	r := floorTestReport(t)
	var b strings.Builder
	WriteGrid(&b, r)
	out := b.String()
	i := strings.Index(out, "Time against floor")
	if i < 0 {
		t.Fatalf("the grid does not end with the time against floor:\n%s", out)
	}
	got := out[i:]
	want := "Time against floor (the timers the stack makes a spec wait by design; 4 of 5 specs declare one): 2 took over 1.5× it, the slowest first:\n" +
		"containerd-1.37:\n" +
		"- 2.5×  5m0s, floor 2m0s (kubelet resync (syncFrequency) 2×1m0s): DRA-TRANSIENT-RETRIED: transient over\n" +
		"crio-1.37:\n" +
		"- 3.0×  3m0s, floor 1m0s (kubelet container garbage collection ≤1m0s): NRI-ASYNC-ERROR-IGNORED: async over [fail (cause calls-wrong)]\n"
	if got != want {
		t.Errorf("the grid ends with:\n%s\nwant:\n%s", got, want)
	}
	if got != OverFloorText(r) {
		t.Errorf("OverFloorText differs from the grid's end:\n%s", OverFloorText(r))
	}
}

func TestOverFloorTextNone(t *testing.T) {
	r := floorTestReport(t)
	for i := range r.Verdicts {
		for j := range r.Verdicts[i].Specs {
			r.Verdicts[i].Specs[j].Duration = time.Second
		}
	}
	if got, want := OverFloorText(r), "Time against floor: no spec took over 1.5× its floor (4 of 5 specs declare one).\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestMarkdownFloors(t *testing.T) {
	r := floorTestReport(t)
	var b strings.Builder
	WriteMarkdown(&b, r)
	out := b.String()
	i := strings.Index(out, "\n## Time against floor\n")
	if i < 0 {
		t.Fatalf("report.md has no section on time against floor:\n%s", out)
	}
	section := out[i:]
	over, all, _ := strings.Cut(section, "<details>")
	for _, want := range []string{
		"| containerd-1.37 | DRA-TRANSIENT-RETRIED: transient over | 1 | pass | 5m0s | 2m0s | 2.5× | kubelet resync (syncFrequency) 2×1m0s |",
		"| crio-1.37 | NRI-ASYNC-ERROR-IGNORED: async over | 1 | fail (cause calls-wrong) | 3m0s | 1m0s | 3.0× | kubelet container garbage collection ≤1m0s |",
	} {
		if !strings.Contains(over, want) {
			t.Errorf("the list over floor lacks %q:\n%s", want, over)
		}
	}
	if strings.Contains(over, "unclassified under") || strings.Contains(over, "taint no timer") {
		t.Errorf("the list over floor holds a spec within it:\n%s", over)
	}
	for _, want := range []string{
		"Every spec's time and floor (4 of 5 specs declare one)",
		"| containerd-1.37 | DRA-UNCLASSIFIED-TRANSIENT: unclassified under | 1 | pass | 2m30s | 2m0s | 1.2× | kubelet resync (syncFrequency) 2×1m0s |",
		"| containerd-1.37 | DRA-TAINTED-DEVICE-EVICTS: taint no timer | 1 | pass | 30s | 0s | — | no timer |",
		"| containerd-1.37 | DRA-HEALTH-IN-POD-STATUS: health undeclared | 1 | pass | 30s | — | — |  |",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("every spec's table lacks %q:\n%s", want, all)
		}
	}
}

func TestHTMLFloors(t *testing.T) {
	r := floorTestReport(t)
	doc := htmlTestParse(t, r)
	section := htmlTestFind(doc, func(n *html.Node) bool { return n.Data == "section" && htmlTestAttr(n, "id") == "floors" })
	if len(section) != 1 {
		t.Fatalf("found %d section#floors, want 1", len(section))
	}
	tables := htmlTestFind(section[0], func(n *html.Node) bool { return n.Data == "table" && htmlTestHasClass(n, "floors") })
	if len(tables) != 2 {
		t.Fatalf("found %d tables of floors, want 2 (over, every spec)", len(tables))
	}
	rows := func(table *html.Node, over bool) int {
		return len(htmlTestFind(table, func(n *html.Node) bool {
			return n.Data == "tr" && n.Parent != nil && n.Parent.Data == "tbody" && (!over || htmlTestHasClass(n, "over"))
		}))
	}
	if n := rows(tables[0], false); n != 2 {
		t.Errorf("%d specs over floor, want 2", n)
	}
	if n, over := rows(tables[1], false), rows(tables[1], true); n != 5 || over != 2 {
		t.Errorf("every spec's table: %d rows (%d over), want 5 (2)", n, over)
	}
	// A spec in its grid cell shows its floor; one without none.
	spans := htmlTestFind(doc, func(n *html.Node) bool { return n.Data == "span" && htmlTestHasClass(n, "floor") })
	var texts []string
	for _, s := range spans {
		texts = append(texts, htmlTestText(s)+" over="+map[bool]string{true: "yes", false: "no"}[htmlTestHasClass(s, "over")])
	}
	want := "(floor 2m0s, 2.5×) over=yes|(floor 2m0s, 1.2×) over=no|(floor 0s, —) over=no|(floor 1m0s, 3.0×) over=yes"
	if strings.Join(texts, "|") != want {
		t.Errorf("floors in the cells:\n%s\nwant:\n%s", strings.Join(texts, "|"), want)
	}
	if title := htmlTestAttr(spans[0], "title"); title != "kubelet resync (syncFrequency) 2×1m0s" {
		t.Errorf("the floor's title = %q, want its parts", title)
	}
}

// TestNoFloorsRender: a report whose specs declared no floor (the recorded
// runs predate floors) renders as before, saying once that floors are
// unknown: nothing in the text summary, one line in report.md and
// report.html.
func TestNoFloorsRender(t *testing.T) {
	// The oldest recorded run: it stays as it was recorded.
	recorded, err := verdicts.ReadGinkgoFile("../verdicts/testdata/full-containerd.json.gz", 1, "containerd-1.36")
	if err != nil {
		t.Fatal(err)
	}
	synthetic, _ := htmlTestReport(t)
	for name, r := range map[string]*verdicts.Report{
		"recorded":  verdicts.Build([]verdicts.Run{recorded}, nil, verdicts.Header{}),
		"synthetic": synthetic,
	} {
		var grid, md strings.Builder
		WriteGrid(&grid, r)
		if strings.Contains(grid.String(), "floor") {
			t.Errorf("%s: the text summary speaks of floors:\n%s", name, grid.String())
		}
		WriteMarkdown(&md, r)
		if !strings.HasSuffix(md.String(), "## Time against floor\n\nNo spec of this run declares its floor (a faultline before floors): how its time compares with the stack's timers is unknown.\n") {
			t.Errorf("%s: report.md does not end saying floors are unknown:\n%s", name, md.String()[max(0, md.Len()-400):])
		}
		var page bytes.Buffer
		if err := WriteHTML(&page, r); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(page.String(), "No spec of this run declares its floor") || strings.Contains(page.String(), `class="floor`) {
			t.Errorf("%s: report.html shows floors", name)
		}
	}
}
