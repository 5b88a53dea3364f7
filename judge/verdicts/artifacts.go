package verdicts

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/faultline-k8s/faultline/vocab/wire"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// ManifestFile lists what a run wrote into its artifacts directory: only the
// results it names count, so old files left there are never read.
const ManifestFile = "run.json"

// StackErrorName names the setup failure that stands for one of a manifest
// stack's Errors (the run could not finish on the stack: a cluster that was
// not made, a test binary that wrote no report), not for a suite node.
const StackErrorName = "[faultline e2e]"

// ErrUnexpected says the run gave a verdict its expectations do not allow:
// the run fails (exit code 1).
var ErrUnexpected = errors.New("unexpected verdicts")

// ErrIncomplete says the run checked less than it selected (a requirement
// skipped or inconclusive; Report.Complete) and the user did not accept
// that (--allow-incomplete): exit code 4. ErrUnexpected wins over it.
var ErrIncomplete = errors.New("incomplete run")

// Exit codes of faultline e2e and faultline report for ErrUnexpected and
// ErrIncomplete (3 is the command failed, 2 bad input).
const (
	ExitUnexpected = 1
	ExitIncomplete = 4
)

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
// verdicts would be missing without a trace. Every path the manifest names
// must lead to a file inside dir: it is refused if it is absolute, climbs
// out with "..", or goes through a symbolic link that leads outside (dir is
// opened as an os.Root). What it reads is capped (MaxManifestBytes,
// MaxGinkgoReportBytes, MaxArtifactsBytes).
func ReadArtifacts(dir string) (Manifest, []Run, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return Manifest{}, nil, fmt.Errorf("%s is not the artifacts directory of a faultline run: %w", dir, err)
	}
	defer root.Close()
	return readArtifacts(root.FS(), dir, MaxGinkgoReportBytes, MaxArtifactsBytes)
}

// readArtifacts is ReadArtifacts on fsys, the artifacts directory dir (for
// messages), with its limits on each Ginkgo report and on all of them.
func readArtifacts(fsys fs.FS, dir string, perReport, total int64) (Manifest, []Run, error) {
	var m Manifest
	manifest := filepath.Join(dir, ManifestFile)
	f, err := fsys.Open(ManifestFile)
	if err != nil {
		return m, nil, fmt.Errorf("%s is not the artifacts directory of a faultline run: %w", dir, err)
	}
	data, err := readCapped(f, manifest, MaxManifestBytes, "a run manifest")
	f.Close()
	if err != nil {
		return m, nil, err
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, nil, fmt.Errorf("%s: %w", manifest, err)
	}
	for i, s := range m.Stacks {
		// The runtime names a stack whose setup failed: without it there
		// is no column to show the failure in.
		if s.Runtime == "" {
			return m, nil, fmt.Errorf("%s: stack %d names no runtime", manifest, i+1)
		}
	}
	var runs []Run
	var errs []error
	left := total
	for _, s := range m.Stacks {
		first := len(runs)
		for i, rel := range s.Runs {
			entry := fmt.Sprintf("%s: stack %q, run %d", manifest, s.Runtime, i+1)
			name, err := runPath(rel)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", entry, err))
				continue
			}
			display := filepath.Join(dir, filepath.FromSlash(name))
			overall := tooLarge(display, total, "the Ginkgo reports "+ManifestFile+" names add up to more than %s, the most faultline reads of one artifacts directory")
			if left <= 0 {
				return m, nil, errors.Join(append(errs, overall)...)
			}
			// What is left of the total, when less than one report may
			// hold, is the limit this report is held to.
			byTotal := left < perReport
			run, used, err := readRun(fsys, entry, name, display, min(perReport, left), i+1, s.Runtime)
			left -= used
			var tl *TooLargeError
			if err != nil && byTotal && errors.As(err, &tl) {
				return m, nil, errors.Join(append(errs, overall)...)
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			// Dumps are relative to the run's directory; the report sits
			// in dir.
			base := path.Dir(name)
			for _, specs := range [][]Spec{run.Specs, run.SetupFailures} {
				for j := range specs {
					if specs[j].Dump != "" {
						specs[j].Dump = path.Join(base, specs[j].Dump)
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
			runs = append(runs, Run{Stack: wire.StackInfo{Key: wire.StackKey(s.Runtime, s.Kubernetes, s.Variant), Runtime: s.Runtime, KubernetesVersion: s.Kubernetes, NodeImage: s.NodeImage, Variant: s.Variant}})
		}
		last := &runs[len(runs)-1]
		for _, e := range s.Errors {
			last.SetupFailures = append(last.SetupFailures, Spec{Name: StackErrorName, State: Fail, Message: e, Run: len(s.Runs)})
		}
	}
	return m, runs, errors.Join(errs...)
}

// runPath checks a run's report path from the manifest and returns it as
// an io/fs name. The manifest may come from anywhere (faultline report
// --artifacts): it must not make faultline read outside the directory.
func runPath(rel string) (string, error) {
	if !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%q is not a path inside the artifacts directory (absolute, empty, or climbing out with ..)", rel)
	}
	return filepath.ToSlash(filepath.Clean(rel)), nil
}

// readRun reads the report of one run, name inside fsys, held to limit
// bytes. It returns the bytes it read and decompressed.
func readRun(fsys fs.FS, entry, name, display string, limit int64, run int, stackKey string) (Run, int64, error) {
	f, err := fsys.Open(name)
	if err != nil {
		// os.Root says why: missing, or a link that leads outside.
		return Run{}, 0, fmt.Errorf("%s: %w", entry, err)
	}
	defer f.Close()
	reports, used, err := readGinkgoReports(f, display, limit)
	if err != nil {
		return Run{}, used, err
	}
	r, err := FromGinkgo(reports, run, stackKey)
	return r, used, err
}

func fill(field *string, value string) {
	if *field == "" {
		*field = value
	}
}
