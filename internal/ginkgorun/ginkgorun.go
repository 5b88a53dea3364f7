// Package ginkgorun is how faultline runs its test binary under the ginkgo
// CLI, in one place for faultline e2e (pipeline) and the conformance image
// (conformance): the reports it writes where the verdicts read them, the
// test binary's flags, and what ginkgo's exit means.
package ginkgorun

import (
	"errors"
	"fmt"
	"github.com/faultline-k8s/faultline/vocab/wire"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// JUnitFile is the JUnit report conformance tooling collects.
const JUnitFile = "junit_01.xml"

// Run is one run of the test binary against one cluster.
type Run struct {
	Procs int
	// OutputDir gets the reports; failure dumps go to DumpDir, or
	// OutputDir/dumps.
	OutputDir, DumpDir       string
	LabelFilter, Focus, Skip string
	ExtraGinkgoArgs          []string
	TestBinary               string
	Kubeconfig, FakesImage   string
	// ExtraArgs go to the test binary after the run's own.
	ExtraArgs []string
}

// Args are the ginkgo CLI's arguments.
func (r Run) Args() []string {
	args := []string{"run", "--procs", strconv.Itoa(r.Procs), "--output-dir", r.OutputDir,
		"--junit-report", JUnitFile, "--json-report", wire.GinkgoReportFile,
		"--no-color", "--timeout", "60m", "--poll-progress-after", "120s",
		// Spec by spec, so that the specs that last start first
		// (harness.Lasts), not the containers they are in.
		"--randomize-all",
		// A filter that selects nothing is a mistake, not a green run.
		"--fail-on-empty"}
	for _, f := range []struct{ flag, value string }{{"--label-filter", r.LabelFilter}, {"--focus", r.Focus}, {"--skip", r.Skip}} {
		if f.value != "" {
			args = append(args, f.flag, f.value)
		}
	}
	args = append(args, r.ExtraGinkgoArgs...)
	dumps := r.DumpDir
	if dumps == "" {
		dumps = filepath.Join(r.OutputDir, "dumps")
	}
	args = append(args, r.TestBinary, "--",
		"--kubeconfig", r.Kubeconfig, "--faultline.fakes-image", r.FakesImage,
		"--faultline.dump-dir", dumps)
	return append(args, r.ExtraArgs...)
}

// ErrSpecsFailed says the suites ran and wrote their report, and some spec
// failed: the verdicts judge whether that was expected.
var ErrSpecsFailed = errors.New("specs failed")

// Outcome reads how ginkgo ended (err from running it): nil, ErrSpecsFailed
// when it exited non-zero after writing its report, or an error saying it
// wrote none.
func (r Run) Outcome(err error) error {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return err
	}
	if _, statErr := os.Stat(filepath.Join(r.OutputDir, wire.GinkgoReportFile)); statErr != nil {
		return fmt.Errorf("ginkgo exited %d without writing its report (log: %s)", exit.ExitCode(), filepath.Join(r.OutputDir, "e2e.log"))
	}
	return fmt.Errorf("%w (ginkgo exited %d; JUnit and log under %s)", ErrSpecsFailed, exit.ExitCode(), r.OutputDir)
}
