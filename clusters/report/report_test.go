package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sampleJUnit = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="5" disabled="1" errors="0" failures="1" time="30">
  <testsuite name="faultline DRA suite" tests="5">
    <testcase name="[SynchronizedBeforeSuite]" classname="x" status="passed" time="1"></testcase>
    <testcase name="[It] smoke runs a pod [Suite:dra, smoke]" classname="x" status="passed" time="10.5"></testcase>
    <testcase name="[It] dra transient failure is retried [Suite:dra, ci]" classname="x" status="failed" time="15">
      <failure message="Timed out after 15s.&#xA;more detail" type="failed">trace</failure>
    </testcase>
    <testcase name="[It] dra permanent failure fails the pod [Suite:dra]" classname="x" status="skipped" time="0.1">
      <skipped message="skipped - KEP-5322 not in this kubelet"></skipped>
    </testcase>
    <testcase name="[It] dra permanent failure, judged [Suite:dra]" classname="x" status="skipped" time="90">
      <skipped message="skipped - not implemented: the kubelet retried a permanent error (KEP-5322)"></skipped>
    </testcase>
    <testcase name="[It] dra left out by the label filter [Suite:dra]" classname="x" status="skipped" time="0">
      <skipped message="skipped"></skipped>
    </testcase>
    <testcase name="[It] nri failure policy [Suite:dra]" classname="x" status="pending" time="0">
      <skipped message="pending"></skipped>
    </testcase>
  </testsuite>
</testsuites>`

func TestReadAndWrite(t *testing.T) {
	dir := t.TempDir()
	suiteDir := filepath.Join(dir, "containerd")
	if err := os.MkdirAll(suiteDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(suiteDir, JUnitFile), []byte(sampleJUnit), 0o644); err != nil {
		t.Fatal(err)
	}
	cells, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 1 {
		t.Fatalf("cells = %+v", cells)
	}
	c := cells[0]
	if c.Runtime != "containerd" || c.Suite != "dra" || c.Passed != 1 || c.Failed != 1 || c.Skipped != 1 || c.Pending != 1 || c.NotImplemented != 1 {
		t.Fatalf("cell = %+v", c)
	}
	var out bytes.Buffer
	Write(&out, cells)
	for _, want := range []string{
		"| containerd | dra | 1 | 1 | 1 | 1 | 1 |",
		"not implemented: [It] dra permanent failure, judged [Suite:dra]: the kubelet retried a permanent error (KEP-5322)",
		"failed: [It] dra transient failure is retried [Suite:dra, ci]: Timed out after 15s.",
		"skipped: [It] dra permanent failure fails the pod [Suite:dra]: skipped - KEP-5322",
		"pending: [It] nri failure policy [Suite:dra]",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "left out") {
		t.Errorf("a spec the filter left out is not a result:\n%s", out.String())
	}
}

func TestSuiteOf(t *testing.T) {
	for name, want := range map[string]string{
		"[It] a b [Suite:nri, ci]":  "nri",
		"[It] a b [ci, Suite:cri]":  "cri",
		"[It] a b":                  "setup",
		"[SynchronizedBeforeSuite]": "setup",
		"[It] a [b] c [smoke]":      "setup",
		"[It] a [b] c [Suite:dra]":  "dra",
	} {
		if got := suiteOf(name); got != want {
			t.Errorf("suiteOf(%q) = %q, want %q", name, got, want)
		}
	}
}
