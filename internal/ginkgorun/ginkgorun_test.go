package ginkgorun

import (
	"errors"
	"github.com/faultline-k8s/faultline/vocab/wire"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutcome: a non-zero exit after the report was written is
// ErrSpecsFailed (the verdicts judge it); without the report it is the
// run's own failure; other errors pass through.
func TestOutcome(t *testing.T) {
	r := Run{OutputDir: t.TempDir()}
	exit := exec.Command("sh", "-c", "exit 1").Run()
	if err := r.Outcome(exit); err == nil || errors.Is(err, ErrSpecsFailed) || !strings.Contains(err.Error(), "without writing its report") {
		t.Errorf("no report: %v", err)
	}
	if err := os.WriteFile(filepath.Join(r.OutputDir, wire.GinkgoReportFile), []byte("[]"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.Outcome(exit); !errors.Is(err, ErrSpecsFailed) {
		t.Errorf("report written: %v", err)
	}
	if err := r.Outcome(nil); err != nil {
		t.Errorf("success: %v", err)
	}
	other := errors.New("no such file")
	if err := r.Outcome(other); !errors.Is(err, other) {
		t.Errorf("start failure: %v", err)
	}
}

func TestArgs(t *testing.T) {
	args := strings.Join(Run{Procs: 2, OutputDir: "/r", Skip: "x", TestBinary: "/t", Kubeconfig: "k", FakesImage: "f", ExtraArgs: []string{"--a"}}.Args(), " ")
	want := "run --procs 2 --output-dir /r --junit-report junit_01.xml --json-report ginkgo.json --no-color --timeout 60m --poll-progress-after 120s --randomize-all --fail-on-empty --skip x /t -- --kubeconfig k --faultline.fakes-image f --faultline.dump-dir /r/dumps --a"
	if args != want {
		t.Errorf("args:\n%s\nwant:\n%s", args, want)
	}
}
