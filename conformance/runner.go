// Package conformance is the runner of faultline's conformance image. It
// follows the Kubernetes conformance image's conventions, so that sonobuoy,
// hydrophone and a plain Job run it alike: settings from the environment
// (RESULTS_DIR, E2E_FOCUS, E2E_SKIP, E2E_PARALLEL, E2E_EXTRA_ARGS,
// E2E_EXTRA_GINKGO_ARGS), results in RESULTS_DIR (e2e.log, junit_01.xml,
// faultline's report), then a tarball of them and a "done" file naming it,
// also when the run fails.
package conformance

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"github.com/faultline-k8s/faultline/vocab/wire"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/faultline-k8s/faultline/internal/ginkgorun"
	"github.com/faultline-k8s/faultline/internal/imageref"
	"github.com/faultline-k8s/faultline/judge/report"
	"github.com/faultline-k8s/faultline/judge/verdicts"
	"github.com/faultline-k8s/faultline/vocab/suitenames"
)

// Config is a run's settings, read from the environment.
type Config struct {
	ResultsDir string
	// Focus and Skip are Ginkgo's --focus and --skip.
	Focus, Skip string
	// LabelFilter is Ginkgo's --label-filter. Default: no Disruptive spec
	// (they restart the node's runtime); set it to "" to run them too.
	LabelFilter string
	Procs       int
	// ExtraArgs go to the test binary, ExtraGinkgoArgs to ginkgo.
	ExtraArgs, ExtraGinkgoArgs []string
	// FakesImage is the image with faultline's fakes, pullable by the
	// cluster: FAULTLINE_FAKES_IMAGE, else this build's fakes image in
	// FAULTLINE_IMAGE_REGISTRY (internal/imageref; the image build sets it to
	// the registry it names).
	FakesImage string
	// Expectations is a file or directory of expectations (optional).
	Expectations string
	// Kubeconfig is KUBECONFIG, else one written from the pod's service
	// account.
	Kubeconfig string
	// Ginkgo and TestBinary are the programs the image holds.
	Ginkgo, TestBinary string
	// RemoveRBAC names the ClusterRole and ClusterRoleBinding that grant
	// this run its permissions, removed when the run ends (RemoveRBACEnv;
	// empty: none).
	RemoveRBAC string

	// client connects to the cluster of a kubeconfig (tests stand in).
	client func(kubeconfig string) (kubernetes.Interface, error)
}

// DefaultLabelFilter leaves out the specs that disrupt the node.
const DefaultLabelFilter = suitenames.NotDisruptive

// FromEnv reads the settings; getenv is os.LookupEnv in the image.
func FromEnv(getenv func(string) (string, bool)) (Config, error) {
	get := func(k, def string) string {
		if v, ok := getenv(k); ok {
			return v
		}
		return def
	}
	c := Config{
		ResultsDir:      get("RESULTS_DIR", "/tmp/results"),
		Focus:           get("E2E_FOCUS", ""),
		Skip:            get("E2E_SKIP", ""),
		LabelFilter:     get("E2E_LABEL_FILTER", DefaultLabelFilter),
		ExtraArgs:       strings.Fields(get("E2E_EXTRA_ARGS", "")),
		ExtraGinkgoArgs: strings.Fields(get("E2E_EXTRA_GINKGO_ARGS", "")),
		FakesImage:      get("FAULTLINE_FAKES_IMAGE", imageref.Fakes(get("FAULTLINE_IMAGE_REGISTRY", ""))),
		Expectations:    get("FAULTLINE_EXPECTATIONS", ""),
		Kubeconfig:      get("KUBECONFIG", ""),
		Ginkgo:          get("FAULTLINE_GINKGO", "/usr/local/bin/ginkgo"),
		TestBinary:      get("FAULTLINE_TEST", "/usr/local/bin/faultline.test"),
		RemoveRBAC:      get(RemoveRBACEnv, ""),
	}
	var errs []string
	// E2E_PARALLEL: as the conformance image takes it, "true"/"y" for
	// parallel (here 6 processes), "false"/"n"/"" for one; or a number.
	switch p := strings.ToLower(get("E2E_PARALLEL", "true")); p {
	case "true", "y", "yes":
		c.Procs = 6
	case "false", "n", "no", "":
		c.Procs = 1
	default:
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Sprintf("E2E_PARALLEL=%q: want true, false or a positive number", p))
		}
		c.Procs = n
	}
	if c.FakesImage == "" {
		errs = append(errs, "FAULTLINE_FAKES_IMAGE is empty: unset it for this build's fakes image, or name one this cluster can pull")
	}
	if c.RemoveRBAC != "" {
		if msgs := validation.IsDNS1123Subdomain(c.RemoveRBAC); len(msgs) > 0 {
			errs = append(errs, fmt.Sprintf("%s=%q: want the name of the ClusterRole and ClusterRoleBinding to remove: %s", RemoveRBACEnv, c.RemoveRBAC, strings.Join(msgs, "; ")))
		}
	}
	if len(errs) > 0 {
		return c, errors.New(strings.Join(errs, "\n"))
	}
	return c, nil
}

// GinkgoRun is the run of the test binary the settings ask for.
func (c Config) GinkgoRun() ginkgorun.Run {
	return ginkgorun.Run{Procs: c.Procs, OutputDir: c.ResultsDir, LabelFilter: c.LabelFilter, Focus: c.Focus, Skip: c.Skip,
		ExtraGinkgoArgs: c.ExtraGinkgoArgs, TestBinary: c.TestBinary, Kubeconfig: c.Kubeconfig, FakesImage: c.FakesImage, ExtraArgs: c.ExtraArgs}
}

// The files a run leaves in RESULTS_DIR besides the results.
const (
	TarballFile = "e2e.tar.gz"
	DoneFile    = "done"
	LogFile     = "e2e.log"
)

// Run runs the suites and always finishes the results directory: the report
// (when the suites wrote theirs), the tarball and the done file. It returns
// verdicts.ErrUnexpected when a verdict is unexpected, another error when
// the run could not finish.
func Run(ctx context.Context, c Config, out io.Writer) error {
	if err := os.MkdirAll(c.ResultsDir, 0o755); err != nil {
		return err
	}
	var runErr error
	if c.Kubeconfig == "" {
		c.Kubeconfig, runErr = WriteInClusterKubeconfig(filepath.Join(os.TempDir(), "faultline-kubeconfig"))
	}
	if runErr == nil {
		runErr = c.runSuites(ctx, out)
	}
	// Before the report, whose outcome ends the pod's log.
	c.removeOwnRBAC(ctx, out)
	repErr := c.writeReport(out)
	packErr := c.pack()
	// A run that could not finish says so, not the verdicts: its exit code
	// is not theirs.
	if err := errors.Join(runErr, packErr); err != nil {
		if repErr != nil {
			return fmt.Errorf("%w (and the report: %v)", err, repErr)
		}
		return err
	}
	return repErr
}

func (c Config) runSuites(ctx context.Context, out io.Writer) error {
	log, err := os.Create(filepath.Join(c.ResultsDir, LogFile))
	if err != nil {
		return err
	}
	defer log.Close()
	run := c.GinkgoRun()
	cmd := exec.CommandContext(ctx, c.Ginkgo, run.Args()...)
	cmd.Stdout = io.MultiWriter(log, out)
	cmd.Stderr = cmd.Stdout
	if err := run.Outcome(cmd.Run()); !errors.Is(err, ginkgorun.ErrSpecsFailed) {
		return err
	}
	return nil // specs failed: the verdicts judge that
}

// removeAfter bounds removing the run's RBAC, also after the run was
// cancelled (the pod is being stopped: its grace period is 30 s).
const removeAfter = 20 * time.Second

// removeOwnRBAC removes the ClusterRole and binding of RemoveRBAC
// (RemoveOwnRBAC) and says so in the pod's log and e2e.log. A failure is
// said loudly there and does not change the run's outcome: the results
// stand, and the binding is for the user to remove.
func (c Config) removeOwnRBAC(ctx context.Context, out io.Writer) {
	if c.RemoveRBAC == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), removeAfter)
	defer cancel()
	connect := c.client
	if connect == nil {
		connect = clientFor
	}
	cs, err := connect(c.Kubeconfig)
	if err == nil {
		err = RemoveOwnRBAC(ctx, cs, c.RemoveRBAC)
	}
	msg := fmt.Sprintf("faultline: removed ClusterRole %s and (through the garbage collector) ClusterRoleBinding %s: this run's permissions end with it\n", c.RemoveRBAC, c.RemoveRBAC)
	if err != nil {
		msg = fmt.Sprintf("faultline: WARNING: this run's permissions are still granted (%v): remove them with kubectl delete clusterrolebinding,clusterrole %s\n", err, c.RemoveRBAC)
	}
	fmt.Fprint(out, msg)
	if log, err := os.OpenFile(filepath.Join(c.ResultsDir, LogFile), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644); err == nil {
		fmt.Fprint(log, msg)
		log.Close()
	}
}

func clientFor(kubeconfig string) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// writeReport judges the run: the manifest names its one report, the
// stack comes from the report itself.
func (c Config) writeReport(out io.Writer) error {
	if _, err := os.Stat(filepath.Join(c.ResultsDir, wire.GinkgoReportFile)); err != nil {
		return nil //nolint:nilerr // nothing ran; runSuites said why
	}
	m := verdicts.Manifest{
		Header: verdicts.Header{Expectations: c.Expectations},
		Stacks: []verdicts.ManifestStack{{Runtime: "cluster", Runs: []string{wire.GinkgoReportFile}}},
	}
	if err := verdicts.WriteManifest(c.ResultsDir, m); err != nil {
		return err
	}
	rep, err := report.FromArtifacts(c.ResultsDir, c.Expectations)
	if err != nil {
		return err
	}
	// The whole grid goes to e2e.log, which every collector keeps (hydrophone
	// copies only it and junit_01.xml); the pod's log ends with the outcome,
	// at most outcomeLines long, so that ginkgo's closing "Ginkgo ran 1
	// suite" line stays among the last lines a collector looks at.
	log, err := os.OpenFile(filepath.Join(c.ResultsDir, LogFile), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "\nfaultline's verdicts (report.md has their reasons):\n")
	report.WriteGrid(log, rep)
	if err := log.Close(); err != nil {
		return err
	}
	var outcome bytes.Buffer
	report.WriteOutcome(&outcome, rep)
	lines := strings.SplitAfter(strings.TrimRight(outcome.String(), "\n"), "\n")
	if len(lines) > outcomeLines {
		more := len(lines) - outcomeLines
		lines = append(lines[:outcomeLines], fmt.Sprintf("\n... %d more line(s): the grid and every reason are in %s\n", more, LogFile))
	}
	fmt.Fprintf(out, "faultline: %s", strings.Join(lines, ""))
	fmt.Fprintf(out, "\nfaultline: the verdict grid is in %s; the report in report.md, report.json and report.html\n", LogFile)
	// An incomplete run (rep.Complete) is said in the outcome above and in
	// the report, not in the exit code: sonobuoy and hydrophone read that as
	// the plugin's status, and a cluster without faultline's node setup
	// skips the CRI suite by design.
	if !rep.OK() {
		return fmt.Errorf("%w: %d verdict(s), %d setup failure(s)", verdicts.ErrUnexpected, len(rep.Unexpected()), len(rep.SetupFailures))
	}
	return nil
}

// outcomeLines bounds the outcome in the pod's log.
const outcomeLines = 20

// pack writes the tarball of everything in the results directory and the
// done file that names it, last: a collector waits for "done".
func (c Config) pack() error {
	tarball := filepath.Join(c.ResultsDir, TarballFile)
	f, err := os.Create(tarball)
	if err != nil {
		return err
	}
	z := gzip.NewWriter(f)
	tw := tar.NewWriter(z)
	walkErr := filepath.WalkDir(c.ResultsDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(c.ResultsDir, path)
		if err != nil || rel == "." || rel == TarballFile || rel == DoneFile {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() && !info.IsDir() {
			return nil
		}
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if info.IsDir() {
			return nil
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if err := errors.Join(walkErr, tw.Close(), z.Close(), f.Close()); err != nil {
		return fmt.Errorf("results tarball: %w", err)
	}
	return os.WriteFile(filepath.Join(c.ResultsDir, DoneFile), []byte(tarball), 0o644)
}
