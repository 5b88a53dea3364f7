package pipeline

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/faultline-k8s/faultline/judge/verdicts"
	"github.com/faultline-k8s/faultline/vocab/facts"
)

// TestIncompleteRun: on a cluster faultline did not make, a skipped
// requirement is no unexpected verdict but leaves the run incomplete: it
// ends with ErrIncomplete (exit 4), or nil with AllowIncomplete, and the
// terminal says how many requirements were checked. A new failure beside
// it ends with ErrUnexpected alone (exit 1).
func TestIncompleteRun(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		allow      bool
		failToo    bool
		incomplete bool
		unexpected bool
	}{
		"skip":                     {incomplete: true},
		"skip, allowed":            {allow: true},
		"skip and a new failure":   {failToo: true, unexpected: true},
		"skip and failure allowed": {allow: true, failToo: true, unexpected: true},
	} {
		t.Run(name, func(t *testing.T) {
			f := &fakeBackend{facts: facts.Facts{Runtime: "crio", RuntimeVersion: "1.36.3"}, specs: func(string, int) []types.SpecReport {
				specs := []types.SpecReport{fakeSpec(verdicts.Pass, "FAULTLINE-CLUSTER-RUNS-PODS"), fakeSpec(verdicts.Skipped, "CRI-SANDBOX-RETRY-GETS-FIRST")}
				if tc.failToo {
					specs = append(specs, fakeSpec(verdicts.Fail, "DRA-TRANSIENT-RETRIED"))
				}
				return specs
			}}
			o := testOptions(t)
			o.Runtimes = nil
			o.Kubeconfig, o.FakesImage, o.AllowIncomplete = kubeconfig, "registry.example/fakes:1", tc.allow
			err := runFake(t, o, f)
			if errors.Is(err, verdicts.ErrIncomplete) != tc.incomplete || errors.Is(err, verdicts.ErrUnexpected) != tc.unexpected ||
				(err != nil && !tc.incomplete && !tc.unexpected) {
				t.Errorf("err = %v, want incomplete %v, unexpected %v", err, tc.incomplete, tc.unexpected)
			}
			out := o.Out.(*bytes.Buffer).String()
			checked := "Incomplete: 1 of 2 requirements checked"
			if tc.failToo {
				checked = "Incomplete: 2 of 3 requirements checked"
			}
			if !strings.Contains(out, checked) || !strings.Contains(out, "CRI-SANDBOX-RETRY-GETS-FIRST on crio-") {
				t.Errorf("the terminal lacks %q and the skipped requirement:\n%s", checked, out)
			}
		})
	}
}
