package report

import (
	"bytes"
	"context"
	"github.com/faultline-k8s/faultline/vocab/wire"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/net/html"

	"github.com/faultline-k8s/faultline/judge/requirements"
	"github.com/faultline-k8s/faultline/judge/verdicts"
)

const (
	htmlTestStackA = "containerd-1.36" // three runs, with expectations
	htmlTestStackB = "crio-1.35"       // one run, no expectations
	// htmlTestScript would run if the page did not escape messages.
	htmlTestScript = `<script>window.faultlinePwned = 1</script>`
)

// htmlTestReport builds a report with every state, a varying cell, an
// unexpected cell, a cell not run, a setup failure and a message that holds
// a script. It returns the requirement IDs of the rows, in order.
func htmlTestReport(t *testing.T) (*verdicts.Report, []string) {
	t.Helper()
	all := requirements.All()
	if len(all) < 6 {
		t.Fatalf("the catalogue has %d requirements, the test needs 6", len(all))
	}
	// Four from the start and two from the end: several areas.
	var ids []string
	for _, r := range append(all[:4:4], all[len(all)-2:]...) {
		ids = append(ids, r.ID)
	}
	// A failure of the stack has a cause its requirement declares: the first.
	firstCause := func(id string) string {
		r, _ := requirements.Lookup(id)
		return r.Causes[0].ID
	}
	spec := func(id string, state verdicts.State, run int, msg, dump string) verdicts.Spec {
		s := verdicts.Spec{
			Name: "spec of " + id, Location: "suites/x/x_test.go:42", Requirements: []string{id},
			State: state, Message: msg, Duration: 1234567 * time.Microsecond, Run: run, Dump: dump,
		}
		if state == verdicts.Fail {
			s.Cause = firstCause(id)
		}
		return s
	}
	long := "Expected\n    <string>: Pending\nto equal\n    <string>: Failed\n" + strings.Repeat("the kubelet retried the claim again and again; ", 20)
	stackA := wire.StackInfo{
		Key: htmlTestStackA, Runtime: "containerd", RuntimeVersion: "2.2.1", KubernetesVersion: "v1.36.3",
		NRIVersion: "v0.12.5", NodeImage: "kindest/node:v1.36.3", FakesImage: "faultline/fakes:dev",
		FakesImageID: "sha256:0123456789abcdef", Framework: "v1.36.3",
		Nodes: []wire.Node{
			{Name: "kind-control-plane", KubeletVersion: "v1.36.3", ContainerRuntime: "containerd://2.2.1", Kernel: "6.12.0", OSImage: "Debian GNU/Linux 12", Architecture: "amd64"},
			{Name: "kind-worker", KubeletVersion: "v1.36.3", ContainerRuntime: "containerd://2.2.1", Kernel: "6.12.0", OSImage: "Debian GNU/Linux 12", Architecture: "amd64"},
		},
	}
	stackB := wire.StackInfo{Key: htmlTestStackB, Runtime: "cri-o", RuntimeVersion: "1.35.0", KubernetesVersion: "v1.35.2",
		Nodes: []wire.Node{{Name: "kind-worker", KubeletVersion: "v1.35.2", ContainerRuntime: "cri-o://1.35.0", Kernel: "6.12.0", OSImage: "Debian GNU/Linux 12", Architecture: "arm64"}}}

	var runs []verdicts.Run
	for run := 1; run <= 3; run++ {
		varying := verdicts.Pass
		var msg, dump string
		if run == 2 {
			varying, msg, dump = verdicts.Fail, "timed out after 2m0s waiting for the pod to run", "containerd-1.36/run-2/dumps/varying spec"
		}
		runs = append(runs, verdicts.Run{Stack: stackA, LabelFilter: "Area:dra || Area:cri", Specs: []verdicts.Spec{
			spec(ids[0], verdicts.Pass, run, "", ""),
			spec(ids[1], verdicts.Fail, run, long, ""),
			spec(ids[2], verdicts.NotImplemented, run, wire.NotImplementedPrefix+"no NRI", ""),
			spec(ids[3], verdicts.Skipped, run, "needs two nodes", ""),
			spec(ids[4], verdicts.Pending, run, "", ""),
			spec(ids[5], varying, run, msg, dump),
		}})
	}
	runs = append(runs, verdicts.Run{Stack: stackB, Specs: []verdicts.Spec{
		spec(ids[0], verdicts.Pass, 1, "", ""),
		spec(ids[1], verdicts.Fail, 1, "driver said "+htmlTestScript, "crio-1.35/run-1/dumps/spec/"),
		spec(ids[2], verdicts.NotImplemented, 1, wire.NotImplementedPrefix+"no NRI", ""),
		spec(ids[3], verdicts.Skipped, 1, "needs two nodes", ""),
		// ids[4] did not run here.
		spec(ids[5], verdicts.Pass, 1, "", ""),
	}, SetupFailures: []verdicts.Spec{{Name: "[SynchronizedBeforeSuite]", State: verdicts.Fail, Message: "fakes image not loaded", Run: 1}}})

	exp := verdicts.ExpectationSet{htmlTestStackA: {Stack: htmlTestStackA, File: "judge/expectations/containerd-1.36.yaml", Expect: []verdicts.Expectation{
		{Requirement: ids[1], Verdict: verdicts.ExpectFail, Causes: []string{firstCause(ids[1])}, Reason: "containerd retries forever.", Reference: "https://github.com/containerd/containerd/issues/1"},
		{Requirement: ids[2], Verdict: verdicts.ExpectNotImplemented, Reason: "no NRI plugin.", Reference: "https://github.com/containerd/nri/issues/2"},
	}}}
	r := verdicts.Build(runs, exp, verdicts.Header{Faultline: "v0.1.0-test", Date: time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)})
	return r, ids
}

// htmlTestWant is what the grid should show: cells per data-state, not-run
// cells under "not-run".
func htmlTestWant(r *verdicts.Report) map[string]int {
	want := map[string]int{}
	for _, req := range r.Requirements {
		for _, s := range r.Stacks {
			if v := r.Verdict(req.ID, s.Key); v != nil {
				want[string(v.State)]++
			} else {
				want["not-run"]++
			}
		}
	}
	return want
}

func TestHTMLTestReportShape(t *testing.T) {
	// Guards the fixture: it must keep covering every kind of cell.
	r, _ := htmlTestReport(t)
	want := map[string]int{"pass": 3, "fail": 2, "known discrepancy": 1, "not implemented": 2, "skipped": 2, "pending": 1, "not-run": 1}
	if got := htmlTestWant(r); !maps.Equal(got, want) {
		t.Fatalf("fixture cells = %v, want %v", got, want)
	}
	if n := len(r.Unexpected()); n != 3 {
		t.Fatalf("fixture has %d unexpected verdicts, want 3", n)
	}
}

func TestWriteHTML(t *testing.T) {
	r, ids := htmlTestReport(t)
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	doc, err := html.Parse(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}

	grid := htmlTestFind(doc, func(n *html.Node) bool { return n.Data == "table" && htmlTestAttr(n, "id") == "grid" })
	if len(grid) != 1 {
		t.Fatalf("found %d table#grid, want 1", len(grid))
	}
	rows := htmlTestFind(grid[0], func(n *html.Node) bool { return n.Data == "tr" && htmlTestHasClass(n, "requirement") })
	var rowIDs []string
	for _, row := range rows {
		rowIDs = append(rowIDs, htmlTestAttr(row, "data-id"))
	}
	if strings.Join(rowIDs, " ") != strings.Join(ids, " ") {
		t.Errorf("rows = %v, want %v", rowIDs, ids)
	}
	got := map[string]int{}
	for _, td := range htmlTestFind(grid[0], func(n *html.Node) bool { return n.Data == "td" }) {
		switch {
		case htmlTestHasClass(td, "verdict"):
			state := htmlTestAttr(td, "data-state")
			got[state]++
			if slug := "state-" + htmlSlug(verdicts.State(state)); !htmlTestHasClass(td, slug) {
				t.Errorf("cell %s (%s) lacks class %s", htmlTestAttr(td, "id"), state, slug)
			}
		case htmlTestHasClass(td, "not-run"):
			got["not-run"]++
		}
	}
	if want := htmlTestWant(r); !maps.Equal(got, want) {
		t.Errorf("cells per state = %v, want %v", got, want)
	}

	cell := func(req, stack string) *html.Node {
		t.Helper()
		id := htmlAnchor(req, stack)
		found := htmlTestFind(doc, func(n *html.Node) bool { return n.Data == "td" && htmlTestAttr(n, "id") == id })
		if len(found) != 1 {
			t.Fatalf("found %d cells #%s, want 1", len(found), id)
		}
		return found[0]
	}
	varying := cell(ids[5], htmlTestStackA)
	if !htmlTestHasClass(varying, "varies") || !htmlTestHasClass(varying, "unexpected") {
		t.Errorf("varying cell classes = %q, want varies and unexpected", htmlTestAttr(varying, "class"))
	}
	if text := htmlTestText(varying); !strings.Contains(text, "pass 2/3, fail 1/3") {
		t.Errorf("varying cell does not show its counts: %q", text)
	}
	if title := htmlTestAttr(cell(ids[1], htmlTestStackB), "title"); !strings.Contains(title, "no expectation") {
		t.Errorf("unexpected cell's title = %q, want the reason it is unexpected", title)
	}
	if known := cell(ids[1], htmlTestStackA); htmlTestHasClass(known, "unexpected") || !strings.Contains(htmlTestText(known), "containerd retries forever.") {
		t.Errorf("known discrepancy cell: class %q, want no unexpected and the expectation's reason", htmlTestAttr(known, "class"))
	}

	// The message is text, not markup: no script element anywhere, and the
	// message readable as written.
	if scripts := htmlTestFind(doc, func(n *html.Node) bool { return n.Data == "script" }); len(scripts) > 0 {
		t.Errorf("the page has %d script elements; the message was not escaped", len(scripts))
	}
	if !strings.Contains(htmlTestText(cell(ids[1], htmlTestStackB)), htmlTestScript) {
		t.Errorf("the message with a script is not shown as text")
	}

	for _, href := range []string{`href="containerd-1.36/run-2/dumps/varying%20spec/"`, `href="crio-1.35/run-1/dumps/spec/"`} {
		if !strings.Contains(out, href) {
			t.Errorf("no failure dump link %s", href)
		}
	}
	for _, s := range []string{
		"FAILED: 3 unexpected verdicts, 1 setup failure", "Setup failures", "fakes image not loaded",
		"judge/expectations/containerd-1.36.yaml", "sha256:0123456789abcdef", "kind-control-plane", "v0.1.0-test",
		"2026-05-04 03:02:01 UTC", "Area:dra || Area:cri", "1.2s",
	} {
		if !strings.Contains(out, html.EscapeString(s)) {
			t.Errorf("the page does not show %q", s)
		}
	}
	// Self-contained: nothing to fetch (links are fine, they are not loaded).
	if fetch := htmlTestFind(doc, func(n *html.Node) bool {
		return n.Data == "link" || n.Data == "img" || n.Data == "iframe" || htmlTestAttr(n, "src") != ""
	}); len(fetch) > 0 {
		t.Errorf("the page loads %d resources; it must be self-contained", len(fetch))
	}
}

func TestWriteHTMLEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, verdicts.Build(nil, nil, verdicts.Header{})); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"OK: nothing unexpected", "No verdicts"} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("an empty report does not say %q", s)
		}
	}
}

// TestHTMLInChromium checks the page as a browser shows it, and leaves a
// screenshot to look at (FAULTLINE_SCREENSHOT_DIR, or a temporary directory).
func TestHTMLInChromium(t *testing.T) {
	if _, err := htmlBrowserPath(); err != nil {
		t.Skip("no Chromium on PATH; install it to run this test: apt-get install chromium")
	}
	r, ids := htmlTestReport(t)
	shots := t.TempDir()
	if d := os.Getenv("FAULTLINE_SCREENSHOT_DIR"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		shots = d
	}
	// The page goes next to its screenshots, to open by hand as well.
	htmlPath := filepath.Join(shots, "faultline-report.html")
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(htmlPath, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	// The browser must never hang the test.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// The exported helper, as the pipeline will call it.
	png := filepath.Join(shots, "faultline-report.png")
	if err := Screenshot(ctx, htmlPath, png); err != nil {
		t.Fatal(err)
	}
	htmlTestCheckPNG(t, png)

	bctx, stop, err := htmlBrowser(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if err := htmlOpen(bctx, htmlPath); err != nil {
		t.Fatal(err)
	}
	rows, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll('#grid tr.requirement'), tr => tr.dataset.id)`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rows, " ") != strings.Join(ids, " ") {
		t.Errorf("rendered rows = %v, want %v", rows, ids)
	}
	cells, err := chromedp.Run(bctx, chromedp.Evaluate[map[string]int](`(() => {
		const n = {};
		for (const td of document.querySelectorAll('#grid td.verdict')) n[td.dataset.state] = (n[td.dataset.state] || 0) + 1;
		const notRun = document.querySelectorAll('#grid td.not-run').length;
		if (notRun) n['not-run'] = notRun;
		return n;
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if want := htmlTestWant(r); !maps.Equal(cells, want) {
		t.Errorf("rendered cells per state = %v, want %v", cells, want)
	}

	// Open the cell whose message holds a script: the message shows, as text.
	id := strconv.Quote(htmlAnchor(ids[1], htmlTestStackB))
	visible := `(() => { const pre = document.getElementById(` + id + `).querySelector('pre'); return pre.checkVisibility() && pre.getBoundingClientRect().height > 0; })()`
	if shown, err := chromedp.Run(bctx, chromedp.Evaluate[bool](visible)); err != nil || shown {
		t.Fatalf("message visible before the cell is opened: %v, %v", shown, err)
	}
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`td[id=`+id+`] > details > summary`))); err != nil {
		t.Fatal(err)
	}
	if shown, err := chromedp.Run(bctx, chromedp.Evaluate[bool](visible)); err != nil || !shown {
		t.Fatalf("message not visible after a click on the cell: %v, %v", shown, err)
	}
	text, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById(`+id+`).querySelector('pre').innerText`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, htmlTestScript) {
		t.Errorf("opened message = %q, want it to show %q", text, htmlTestScript)
	}
	if ran, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`window.faultlinePwned !== undefined`)); err != nil || ran {
		t.Errorf("the script in the message ran: %v, %v", ran, err)
	}

	// Open a known discrepancy too, for its expectation in the screenshot.
	known := strconv.Quote(htmlAnchor(ids[1], htmlTestStackA))
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`td[id=`+known+`] > details > summary`))); err != nil {
		t.Fatal(err)
	}

	// The opened cells, to look at as well.
	open := filepath.Join(shots, "faultline-report-open.png")
	if err := htmlSavePNG(bctx, open); err != nil {
		t.Fatal(err)
	}
	htmlTestCheckPNG(t, open)
}

func htmlTestCheckPNG(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("%s is not a PNG", path)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(data))
}

// htmlTestFind returns the elements under n that match.
// htmlTestParse renders r as report.html and parses the page.
func htmlTestParse(t *testing.T, r *verdicts.Report) *html.Node {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func htmlTestFind(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	for d := range n.Descendants() {
		if d.Type == html.ElementNode && match(d) {
			out = append(out, d)
		}
	}
	return out
}

func htmlTestAttr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func htmlTestHasClass(n *html.Node, class string) bool {
	for _, c := range strings.Fields(htmlTestAttr(n, "class")) {
		if c == class {
			return true
		}
	}
	return false
}

// htmlTestText is n's text, entities decoded.
func htmlTestText(n *html.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return b.String()
}
