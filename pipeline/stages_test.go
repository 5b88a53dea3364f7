package pipeline

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/faultline-k8s/faultline/internal/ginkgorun"
)

// TestStagesJudge: a suites stage whose specs failed waits for the report;
// the report's judgment of its stack settles it, and only its: a stage
// that failed otherwise, or any other stage, keeps its result.
func TestStagesJudge(t *testing.T) {
	s := NewStages(io.Discard)
	specsFailed := fmt.Errorf("%w (ginkgo exited 1)", ginkgorun.ErrSpecsFailed)
	_ = s.RunSuites("containerd", "suites", func() error { return specsFailed })
	_ = s.RunSuites("containerd/serial", "suites", func() error { return nil })
	_ = s.RunSuites("crio", "suites", func() error { return specsFailed })
	_ = s.RunSuites("crio/serial", "suites", func() error { return errors.New("ginkgo exited 2 without writing its report") })
	_ = s.RunSuites("nri", "suites", func() error { return specsFailed })
	_ = s.Run("crio", "load fakes image", func() error { return specsFailed })

	results := func() map[string]string {
		out := map[string]string{}
		for _, st := range s.List() {
			out[st.Name+" "+st.Runtime] = st.Result
		}
		return out
	}
	if got := results()["suites containerd"]; got != resultNotJudged {
		t.Errorf("before the report: %q", got)
	}
	s.Judge(func(runtime string) (string, bool) {
		switch runtime {
		case "containerd", "containerd/serial":
			return "", true
		case "crio", "crio/serial":
			return "unexpected verdicts (2)", true
		}
		return "", false // nri: not in the report
	})
	for stage, want := range map[string]string{
		"suites containerd":        resultExpectedFailures,
		"suites containerd/serial": "ok",
		"suites crio":              "failed: unexpected verdicts (2)",
		"suites crio/serial":       "failed: ginkgo exited 2 without writing its report",
		"suites nri":               resultNotJudged,
		"load fakes image crio":    "failed: specs failed (ginkgo exited 1)",
	} {
		if got := results()[stage]; got != want {
			t.Errorf("%s: %q, want %q", stage, got, want)
		}
	}
}
