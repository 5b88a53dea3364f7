package verdicts

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ManifestFile lists what a run wrote into its artifacts directory: only the
// results it names count, so old files left there are never read.
const ManifestFile = "run.json"

// GinkgoReportFile is the name of the Ginkgo JSON report of one run of the
// test binary (ginkgo --json-report).
const GinkgoReportFile = "ginkgo.json"

// ErrUnexpected says the run gave a verdict its expectations do not allow:
// the run fails (exit code 1).
var ErrUnexpected = errors.New("unexpected verdicts")

// Manifest is run.json.
type Manifest struct {
	Header Header          `json:"header"`
	Stacks []ManifestStack `json:"stacks"`
}

// ManifestStack is one cluster's results.
type ManifestStack struct {
	// Runtime is the cluster's runtime; it names the stack if the suite
	// setup failed before reading the cluster.
	Runtime string `json:"runtime"`
	// Kubernetes is the release the run built the cluster from, when it
	// did: with Runtime it names a stack whose setup failed.
	Kubernetes string `json:"kubernetes,omitempty"`
	// Runs are the Ginkgo JSON reports of each run, relative to the
	// artifacts directory, in order.
	Runs []string `json:"runs"`
	// Errors say why the run could not finish on this stack (a cluster that
	// was not made, a test binary that wrote no report): each one fails
	// the run as a setup failure of the stack.
	Errors []string `json:"errors,omitempty"`
	// What the run knows about the stack beyond what the cluster shows.
	NodeImage    string `json:"nodeImage,omitempty"`
	FakesImageID string `json:"fakesImageID,omitempty"`
	NRIVersion   string `json:"nriVersion,omitempty"`
	// Variant is the stack's variant (StackKey).
	Variant string `json:"variant,omitempty"`
}

// WriteManifest writes dir/run.json.
func WriteManifest(dir string, m Manifest) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ManifestFile), append(data, '\n'), 0o644)
}

// ReadArtifacts reads the runs a manifest names. A run whose report is
// missing (the test binary did not get to write it) is an error: its
// verdicts would be missing without a trace.
func ReadArtifacts(dir string) (Manifest, []Run, error) {
	var m Manifest
	data, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return m, nil, fmt.Errorf("%s is not the artifacts directory of a faultline run: %w", dir, err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, nil, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestFile), err)
	}
	var runs []Run
	var errs []error
	for _, s := range m.Stacks {
		first := len(runs)
		for i, rel := range s.Runs {
			run, err := ReadGinkgoFile(filepath.Join(dir, rel), i+1, s.Runtime)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			// Dumps are relative to the run's directory; the report sits
			// in dir.
			base := filepath.Dir(rel)
			for _, specs := range [][]Spec{run.Specs, run.SetupFailures} {
				for j := range specs {
					if specs[j].Dump != "" {
						specs[j].Dump = filepath.ToSlash(filepath.Join(base, specs[j].Dump))
					}
				}
			}
			fill(&run.Stack.NodeImage, s.NodeImage)
			fill(&run.Stack.FakesImageID, s.FakesImageID)
			fill(&run.Stack.NRIVersion, s.NRIVersion)
			runs = append(runs, run)
		}
		if len(s.Errors) == 0 {
			continue
		}
		if len(runs) == first {
			// Nothing ran: the stack is known by what the run built.
			runs = append(runs, Run{Stack: StackInfo{Key: StackKey(s.Runtime, s.Kubernetes, s.Variant), Runtime: s.Runtime, KubernetesVersion: s.Kubernetes, NodeImage: s.NodeImage, Variant: s.Variant}})
		}
		last := &runs[len(runs)-1]
		for _, e := range s.Errors {
			last.SetupFailures = append(last.SetupFailures, Spec{Name: "[faultline e2e]", State: Fail, Message: e, Run: len(s.Runs)})
		}
	}
	return m, runs, errors.Join(errs...)
}

func fill(field *string, value string) {
	if *field == "" {
		*field = value
	}
}
