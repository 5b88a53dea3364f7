package report

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestRunReportInChromium opens a real run's report.html (the artifacts
// directory FAULTLINE_REPORT_DIR names; .ci/run sets it after its e2e run)
// in Chromium and checks that the rendered grid holds every verdict of the
// run's report.json, then saves a screenshot beside it (report-test.png).
func TestRunReportInChromium(t *testing.T) {
	dir := os.Getenv("FAULTLINE_REPORT_DIR")
	if dir == "" {
		t.Skip("FAULTLINE_REPORT_DIR names no run's artifacts directory")
	}
	if !HaveBrowser() {
		t.Fatal("no Chromium on PATH (apt-get install chromium)")
	}
	rep, err := ReadJSON(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	bctx, stop, err := htmlBrowser(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if err := htmlOpen(bctx, filepath.Join(dir, HTMLFile)); err != nil {
		t.Fatal(err)
	}
	rows, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll('#grid tr.requirement'), tr => tr.dataset.id)`))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range rep.Requirements {
		want = append(want, r.ID)
	}
	if strings.Join(rows, " ") != strings.Join(want, " ") {
		t.Errorf("rendered rows:\n%v\nwant the report's:\n%v", rows, want)
	}
	cells, err := chromedp.Run(bctx, chromedp.Evaluate[map[string]int](`(() => {
		const n = {};
		for (const td of document.querySelectorAll('#grid td.verdict')) n[td.dataset.state] = (n[td.dataset.state] || 0) + 1;
		return n;
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	wantCells := map[string]int{}
	for _, v := range rep.Verdicts {
		wantCells[string(v.State)]++
	}
	if !maps.Equal(cells, wantCells) {
		t.Errorf("rendered cells per state = %v, want %v", cells, wantCells)
	}
	t.Logf("%d requirements x %d stacks: %v", len(rows), len(rep.Stacks), cells)
	png := filepath.Join(dir, "report-test.png")
	if err := htmlSavePNG(bctx, png); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", png)
}
