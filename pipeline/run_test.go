package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/faultline-k8s/faultline/clusters/kindcluster"
	"github.com/faultline-k8s/faultline/internal/capacity"
	"github.com/faultline-k8s/faultline/internal/ginkgorun"
	"github.com/faultline-k8s/faultline/internal/imageref"
	"github.com/faultline-k8s/faultline/internal/interrupt"
	"github.com/faultline-k8s/faultline/judge/report"
	"github.com/faultline-k8s/faultline/judge/requirements"
	"github.com/faultline-k8s/faultline/judge/verdicts"
	"github.com/faultline-k8s/faultline/vocab/facts"
	"github.com/faultline-k8s/faultline/vocab/runtimes"
	"github.com/faultline-k8s/faultline/vocab/versions"
	"github.com/faultline-k8s/faultline/vocab/wire"
)

// fakeBackend records what the run asked for, in order, and fails or
// interrupts where a test says.
type fakeBackend struct {
	mu       sync.Mutex
	calls    []string
	fail     map[string]error // call (as recorded) => error
	exists   map[string]bool  // cluster => exists
	started  bool             // the engine was started by the run
	onCall   func(call string)
	facts    facts.Facts
	barrier  *sync.WaitGroup // RunSuites waits here for the other runtimes
	parallel bool
	// specs gives the spec results RunSuites writes for a runtime's run
	// (1-based); nil is one passing smoke spec.
	specs func(runtime string, run int) []types.SpecReport
	runs  map[string]int
}

func (f *fakeBackend) record(call string) error {
	f.mu.Lock()
	f.calls = append(f.calls, call)
	err := f.fail[call]
	hook := f.onCall
	f.mu.Unlock()
	if hook != nil {
		hook(call)
	}
	return err
}

func (f *fakeBackend) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

type fakeEngine struct{ f *fakeBackend }

func (e fakeEngine) Started() bool { return e.f.started }
func (e fakeEngine) Stop(ctx context.Context) error {
	return e.f.record("stop engine")
}
func (e fakeEngine) Keep() { _ = e.f.record("keep engine") }

func (f *fakeBackend) EnsureEngine(ctx context.Context) (engineHandle, error) {
	return fakeEngine{f}, f.record("engine")
}
func (f *fakeBackend) BuildTestBinary(ctx context.Context) error { return f.record("test binary") }
func (f *fakeBackend) EnsureBuildTools(ctx context.Context, rts []runtimes.Runtime) error {
	return f.record("build tools")
}
func (f *fakeBackend) BuildNodeImage(ctx context.Context, st Stack) (string, error) {
	return "node:" + st.Label, f.record("node image " + st.Label)
}
func (f *fakeBackend) BuildFakesImage(ctx context.Context) (string, error) {
	return "fakes:1", f.record("fakes image")
}
func (f *fakeBackend) ClusterExists(ctx context.Context, name string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.exists[name], nil
}
func (f *fakeBackend) ReuseCluster(ctx context.Context, s kindcluster.Settings, kubeconfig string) error {
	return f.record("reuse " + s.Name)
}
func (f *fakeBackend) CreateCluster(ctx context.Context, s kindcluster.Settings, kubeconfig string) error {
	if err := f.record("create " + s.Name); err != nil {
		return err
	}
	return context.Cause(ctx)
}
func (f *fakeBackend) DeleteCluster(ctx context.Context, name string) error {
	return f.record("delete " + name)
}
func (f *fakeBackend) LoadImage(ctx context.Context, cluster, image string) error {
	return f.record("load " + cluster)
}
func (f *fakeBackend) CheckPodTraffic(ctx context.Context, cluster, image string) error {
	return f.record("pod traffic " + cluster)
}
func (f *fakeBackend) ExportLogs(ctx context.Context, cluster, dir string) error {
	return f.record("logs " + cluster)
}
func (f *fakeBackend) ReadFacts(ctx context.Context, kubeconfig string) (facts.Facts, string, error) {
	return f.facts, "test", f.record("facts")
}
func (f *fakeBackend) RunSuites(ctx context.Context, label, kubeconfig, fakesImage string, run ginkgorun.Run) error {
	dir := run.OutputDir
	if f.barrier != nil {
		f.barrier.Done()
		done := make(chan struct{})
		go func() { f.barrier.Wait(); close(done) }()
		select {
		case <-done:
			f.mu.Lock()
			f.parallel = true
			f.mu.Unlock()
		case <-time.After(5 * time.Second):
		}
	}
	if err := f.record("suites " + label); err != nil {
		return err
	}
	if err := context.Cause(ctx); err != nil {
		return err
	}
	f.mu.Lock()
	if f.runs == nil {
		f.runs = map[string]int{}
	}
	f.runs[label]++
	n := f.runs[label]
	f.mu.Unlock()
	specs := []types.SpecReport{fakeSpec(verdicts.Pass, "FAULTLINE-CLUSTER-RUNS-PODS")}
	if f.specs != nil {
		specs = f.specs(label, n)
	}
	// As Ginkgo reports them: a spec the label filter leaves out is
	// listed, skipped, never attempted.
	if run.LabelFilter != "" {
		match, err := types.ParseLabelFilter(run.LabelFilter)
		if err != nil {
			return err
		}
		for i, s := range specs {
			if !match(s.Labels()) {
				specs[i] = types.SpecReport{LeafNodeType: s.LeafNodeType, LeafNodeText: s.LeafNodeText, LeafNodeLabels: s.LeafNodeLabels,
					IsSerial: s.IsSerial, State: types.SpecStateSkipped}
			}
		}
	}
	return writeFilteredReport(dir, label, run.LabelFilter, specs)
}

func (f *fakeBackend) ImageID(ctx context.Context, ref string) string { return "sha256:fake" }
func (f *fakeBackend) Screenshots() bool                              { return false }
func (f *fakeBackend) RuntimeNRIVersion(context.Context, Stack) string {
	return "v0.0.0-fake"
}

// fakeSpec is a spec's result as Ginkgo reports it.
func fakeSpec(state verdicts.State, requirement string) types.SpecReport {
	s := types.SpecReport{LeafNodeType: types.NodeTypeIt, LeafNodeText: "checks " + requirement,
		LeafNodeLabels: []string{requirements.Label(requirement)}, State: types.SpecStatePassed, NumAttempts: 1}
	switch state {
	case verdicts.Fail:
		s.State, s.Failure = types.SpecStateFailed, types.Failure{Message: "it failed"}
	case verdicts.NotImplemented:
		s.State, s.Failure = types.SpecStateSkipped, types.Failure{Message: wire.NotImplementedPrefix + "no such thing"}
	case verdicts.Skipped:
		s.State, s.Failure = types.SpecStateSkipped, types.Failure{Message: "a precondition is missing"}
	}
	return s
}

// writeGinkgoReport writes what the test binary would: the suite setup with
// the stack, and the specs; and says ginkgorun.ErrSpecsFailed if one failed.
func writeGinkgoReport(dir, label string, specs []types.SpecReport) error {
	return writeFilteredReport(dir, label, "", specs)
}

// writeFilteredReport is writeGinkgoReport of a run under a label filter,
// which the report's suite config records as Ginkgo's does.
func writeFilteredReport(dir, label, filter string, specs []types.SpecReport) error {
	// The stack's label is its runtime, or <runtime>-<minor> in a run of
	// several Kubernetes releases.
	label, _, _ = strings.Cut(label, "/") // "containerd/serial": the Serial specs' cluster
	runtime, minor, several := strings.Cut(label, "-")
	kube := versions.Default().Kubernetes()
	if several {
		kube = "v" + minor + ".0"
	}
	setup := types.SpecReport{LeafNodeType: types.NodeTypeSynchronizedBeforeSuite, State: types.SpecStatePassed,
		ReportEntries: types.ReportEntries{{Name: wire.StackEntry, Value: types.WrapEntryValue(wire.StackInfo{
			Key: wire.StackKey(runtime, kube, ""), Runtime: runtime, KubernetesVersion: kube})}}}
	rep := types.Report{SuiteDescription: "faultline", SuiteConfig: types.SuiteConfig{LabelFilter: filter},
		SpecReports: append(types.SpecReports{setup}, specs...)}
	data, err := json.Marshal([]types.Report{rep})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, wire.GinkgoReportFile), data, 0o644); err != nil {
		return err
	}
	for _, s := range specs {
		if s.State == types.SpecStateFailed {
			return fmt.Errorf("%w on %s", ginkgorun.ErrSpecsFailed, label)
		}
	}
	return nil
}

func testOptions(t *testing.T, rts ...string) Options {
	t.Helper()
	list, err := runtimes.Parse(rts...)
	if err != nil {
		t.Fatal(err)
	}
	return Options{Runtimes: list, Procs: 1, Artifacts: t.TempDir(), Out: &bytes.Buffer{}, OptionName: flagLike}
}

// flagLike names a field as a CLI would ("ReplaceCluster": --replace-cluster),
// so that the tests see the run's messages use the caller's names.
func flagLike(field string) string {
	var b strings.Builder
	b.WriteString("-")
	for _, r := range field {
		if unicode.IsUpper(r) {
			b.WriteString("-")
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// runFake runs as Run does, from prepare on, with f as the backend.
func runFake(t *testing.T, o Options, f *fakeBackend) error {
	t.Helper()
	o, err := prepare(o)
	if err != nil {
		t.Fatal(err)
	}
	return runWith(context.Background(), context.Background(), o, f)
}

func wantCalls(t *testing.T, f *fakeBackend, want ...string) {
	t.Helper()
	if got := f.Calls(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("calls:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestStageOrder(t *testing.T) {
	f := &fakeBackend{started: true}
	o := testOptions(t)
	if err := runFake(t, o, f); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, f, "engine", "test binary", "build tools", "node image containerd", "fakes image",
		"create faultline", "load faultline", "suites containerd", "delete faultline", "stop engine")
	raw, err := os.ReadFile(filepath.Join(o.Artifacts, "timings.txt"))
	if err != nil || !strings.Contains(string(raw), "create cluster") || !strings.Contains(string(raw), "wall") {
		t.Errorf("timings.txt = %q, %v", raw, err)
	}
	if _, err := os.Stat(filepath.Join(o.Artifacts, "timings.json")); err != nil {
		t.Error(err)
	}
}

// A cluster with workers gets its pod traffic checked before the suites run;
// a failed check stops that stack before its suites, and the cluster goes.
func TestWorkersCheckPodTraffic(t *testing.T) {
	f := &fakeBackend{started: true}
	o := testOptions(t)
	o.Workers = 2
	if err := runFake(t, o, f); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, f, "engine", "test binary", "build tools", "node image containerd", "fakes image",
		"create faultline", "load faultline", "pod traffic faultline", "suites containerd", "delete faultline", "stop engine")

	f = &fakeBackend{started: true, fail: map[string]error{"pod traffic faultline": errors.New("pods do not reach each other across nodes")}}
	o = testOptions(t)
	o.Workers = 2
	if err := runFake(t, o, f); err == nil || !strings.Contains(err.Error(), "pods do not reach each other") {
		t.Errorf("run with a broken pod network: %v; want its error", err)
	}
	wantCalls(t, f, "engine", "test binary", "build tools", "node image containerd", "fakes image",
		"create faultline", "load faultline", "pod traffic faultline", "logs faultline", "delete faultline", "stop engine")
}

func TestEngineNotStartedIsNotStopped(t *testing.T) {
	f := &fakeBackend{started: false}
	if err := runFake(t, testOptions(t), f); err != nil {
		t.Fatal(err)
	}
	for _, c := range f.Calls() {
		if c == "stop engine" {
			t.Errorf("stopped an engine the run did not start: %v", f.Calls())
		}
	}
}

func TestEngineThatFailedToAnswerIsStopped(t *testing.T) {
	f := &fakeBackend{started: true, fail: map[string]error{"engine": errors.New("dockerd did not answer")}}
	if err := runFake(t, testOptions(t), f); err == nil {
		t.Fatal("want an error")
	}
	wantCalls(t, f, "engine", "stop engine")
}

func TestCreateFailureDeletesClusterAndStopsEngine(t *testing.T) {
	f := &fakeBackend{started: true, fail: map[string]error{"create faultline": errors.New("kubeadm init failed")}}
	err := runFake(t, testOptions(t), f)
	if err == nil || !strings.Contains(err.Error(), "kubeadm init failed") {
		t.Fatalf("err = %v", err)
	}
	wantCalls(t, f, "engine", "test binary", "build tools", "node image containerd", "fakes image",
		"create faultline", "delete faultline", "stop engine")
}

func TestBuildFailureCreatesNothing(t *testing.T) {
	f := &fakeBackend{started: true, fail: map[string]error{"node image containerd": errors.New("go build failed")}}
	if err := runFake(t, testOptions(t), f); err == nil {
		t.Fatal("want an error")
	}
	wantCalls(t, f, "engine", "test binary", "build tools", "node image containerd", "stop engine")
}

func TestSuiteFailureExportsLogsBeforeDeleting(t *testing.T) {
	f := &fakeBackend{started: true, specs: func(string, int) []types.SpecReport {
		return []types.SpecReport{fakeSpec(verdicts.Fail, "FAULTLINE-CLUSTER-RUNS-PODS")}
	}}
	err := runFake(t, testOptions(t), f)
	if !errors.Is(err, verdicts.ErrUnexpected) {
		t.Fatalf("err = %v, want ErrUnexpected", err)
	}
	wantCalls(t, f, "engine", "test binary", "build tools", "node image containerd", "fakes image",
		"create faultline", "load faultline", "suites containerd", "logs faultline", "delete faultline", "stop engine")
}

// TestExitFollowsUnexpectedVerdictsOnly: a failure the stack's expectations
// explain leaves the run green; one they do not, or an expected failure
// that passes, makes it fail; the report files are written either way.
func TestExitFollowsUnexpectedVerdictsOnly(t *testing.T) {
	expected := "DRA-EVERY-FAILING-CLAIM-NAMED" // expected to fail on containerd (1.36, and 1.37 which extends it)
	for name, tc := range map[string]struct {
		state       verdicts.State
		requirement string
		cause       string // the check the spec failed in; "": none (faultline's own)
		unexpected  bool
		stage       string // the suites stage's result: the report's judgment
	}{
		"expected failure":                  {verdicts.Fail, expected, "claim-not-named", false, "ok: failing specs all expected"},
		"expected failure of another cause": {verdicts.Fail, expected, "not-running", true, "failed: unexpected verdicts (1)"},
		"expected failure, faultline's own": {verdicts.Fail, expected, "", true, "failed: unexpected verdicts (1)"},
		"expected failure passes":           {verdicts.Pass, expected, "", true, "failed: unexpected verdicts (1)"},
		"new failure":                       {verdicts.Fail, "DRA-TRANSIENT-RETRIED", "not-running", true, "failed: unexpected verdicts (1)"},
		"new skip on an own cluster":        {verdicts.Skipped, "DRA-TRANSIENT-RETRIED", "", true, "failed: unexpected verdicts (1)"},
		"pass":                              {verdicts.Pass, "DRA-TRANSIENT-RETRIED", "", false, "ok"},
	} {
		t.Run(name, func(t *testing.T) {
			f := &fakeBackend{specs: func(string, int) []types.SpecReport {
				s := fakeSpec(tc.state, tc.requirement)
				if tc.cause != "" {
					s.ReportEntries = append(s.ReportEntries, verdicts.CauseMarkEntry(tc.cause))
				}
				return []types.SpecReport{s}
			}}
			o := testOptions(t)
			err := runFake(t, o, f)
			if got := errors.Is(err, verdicts.ErrUnexpected); got != tc.unexpected || (err != nil && !got) {
				md, _ := os.ReadFile(filepath.Join(o.Artifacts, "report.md"))
				t.Errorf("err = %v, want unexpected=%v\n%s", err, tc.unexpected, md)
			}
			for _, file := range []string{"report.md", "report.json", "report.html", verdicts.ManifestFile} {
				if _, err := os.Stat(filepath.Join(o.Artifacts, file)); err != nil {
					t.Error(err)
				}
			}
			if got := stageResults(t, o.Artifacts)["suites containerd"]; !slices.Equal(got, []string{tc.stage}) {
				t.Errorf("suites stage %q, want %q", got, tc.stage)
			}
		})
	}
}

// stageResults reads a run's timings.json: each stage's results (one per
// cluster or run) by "<name> <runtime>".
func stageResults(t *testing.T, artifacts string) map[string][]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(artifacts, timingsJSON))
	if err != nil {
		t.Fatal(err)
	}
	var timings struct{ Stages []Stage }
	if err := json.Unmarshal(raw, &timings); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, st := range timings.Stages {
		key := st.Name + " " + st.Runtime
		out[key] = append(out[key], st.Result)
	}
	return out
}

// TestRepeat runs the selection N times per cluster, each into its own
// directory, and the report sees a verdict that varies.
func TestRepeat(t *testing.T) {
	f := &fakeBackend{specs: func(_ string, run int) []types.SpecReport {
		state := verdicts.Pass
		if run == 2 {
			state = verdicts.Fail
		}
		return []types.SpecReport{fakeSpec(state, "DRA-TRANSIENT-RETRIED")}
	}}
	o := testOptions(t)
	o.Repeat = 3
	err := runFake(t, o, f)
	if !errors.Is(err, verdicts.ErrUnexpected) {
		t.Fatalf("err = %v, want ErrUnexpected (a failure in run 2)", err)
	}
	wantCalls(t, f, "engine", "test binary", "build tools", "node image containerd", "fakes image",
		"create faultline", "load faultline", "suites containerd", "suites containerd", "suites containerd", "logs faultline", "delete faultline")
	rep, err := report.ReadJSON(o.Artifacts)
	if err != nil {
		t.Fatal(err)
	}
	v := rep.Verdict("DRA-TRANSIENT-RETRIED", wire.StackKey("containerd", versions.Default().Kubernetes(), ""))
	if v == nil || !v.Varies || fmt.Sprint(v.Runs) != "[pass fail pass]" {
		t.Fatalf("verdict %+v, want varying pass, fail, pass", v)
	}
	for i := 1; i <= 3; i++ {
		if _, err := os.Stat(filepath.Join(o.Artifacts, "containerd", fmt.Sprintf("run-%d", i), wire.GinkgoReportFile)); err != nil {
			t.Error(err)
		}
	}
}

// TestStaleResultsAreNotRead: results an earlier run left in the artifacts
// directory (another runtime's) are not in this run's report.
func TestStaleResultsAreNotRead(t *testing.T) {
	o := testOptions(t)
	earlierRun(t, o.Artifacts, "crio")
	stale := filepath.Join(o.Artifacts, "crio")
	if err := os.MkdirAll(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeGinkgoReport(stale, "crio", []types.SpecReport{fakeSpec(verdicts.Fail, "DRA-TRANSIENT-RETRIED")}); !errors.Is(err, ginkgorun.ErrSpecsFailed) {
		t.Fatal(err)
	}
	if err := runFake(t, o, &fakeBackend{}); err != nil {
		t.Fatalf("the stale crio failure was counted: %v", err)
	}
	rep, err := report.ReadJSON(o.Artifacts)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Stacks) != 1 || rep.Stacks[0].Runtime != "containerd" {
		t.Errorf("stacks %+v, want containerd alone", rep.Stacks)
	}
}

func TestInterruptDuringCreate(t *testing.T) {
	work, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	f := &fakeBackend{started: true}
	f.onCall = func(call string) {
		if call == "create faultline" {
			cancel(&interrupt.Error{Signal: syscall.SIGINT})
		}
	}
	o, err := prepare(testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	err = runWith(work, context.Background(), o, f)
	var ie *interrupt.Error
	if !errors.As(err, &ie) {
		t.Fatalf("err = %v, want the interrupt", err)
	}
	// no logs are collected for an interrupted run; the cluster and engine go
	wantCalls(t, f, "engine", "test binary", "build tools", "node image containerd", "fakes image",
		"create faultline", "delete faultline", "stop engine")
	if !strings.Contains(o.Out.(*bytes.Buffer).String(), "interrupted") {
		t.Errorf("the stage table does not say interrupted:\n%s", o.Out)
	}
}

func TestSecondInterruptSkipsCleanupAndSaysWhatIsLeft(t *testing.T) {
	cleanup, cancelCleanup := context.WithCancelCause(context.Background())
	f := &fakeBackend{started: true}
	f.onCall = func(call string) {
		if call == "delete faultline" {
			cancelCleanup(&interrupt.Error{Signal: syscall.SIGINT})
		}
	}
	o, err := prepare(testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	_ = runWith(context.Background(), cleanup, o, f)
	out := o.Out.(*bytes.Buffer).String()
	if !strings.Contains(out, "left behind: stop engine (-)") {
		t.Errorf("output does not name what is left:\n%s", out)
	}
	for _, c := range f.Calls() {
		if c == "stop engine" {
			t.Error("the engine was stopped after the second interrupt")
		}
	}
}

func TestExistingClusterIsRefused(t *testing.T) {
	f := &fakeBackend{started: true, exists: map[string]bool{"faultline": true}}
	err := runFake(t, testOptions(t), f)
	if err == nil || !strings.Contains(err.Error(), "--replace-cluster") || !strings.Contains(err.Error(), "did not create") {
		t.Fatalf("err = %v", err)
	}
	wantCalls(t, f, "engine", "test binary", "build tools", "node image containerd", "fakes image", "stop engine")
}

func TestReplaceCluster(t *testing.T) {
	f := &fakeBackend{exists: map[string]bool{"faultline": true}}
	o := testOptions(t)
	o.ReplaceCluster = true
	if err := runFake(t, o, f); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, f, "engine", "test binary", "build tools", "node image containerd", "fakes image",
		"delete faultline", "create faultline", "load faultline", "suites containerd", "delete faultline")
}

func TestKeepReusesAMatchingClusterAndKeepsEverything(t *testing.T) {
	f := &fakeBackend{started: true, exists: map[string]bool{"faultline": true}}
	o := testOptions(t)
	o.Keep = true
	if err := runFake(t, o, f); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, f, "engine", "test binary", "build tools", "node image containerd", "fakes image",
		"reuse faultline", "load faultline", "suites containerd", "keep engine")
	if out := o.Out.(*bytes.Buffer).String(); !strings.Contains(out, "kept (--keep)") {
		t.Errorf("the stage table does not say what was kept:\n%s", out)
	}
}

func TestKeepRefusesAClusterWhoseFactsDiffer(t *testing.T) {
	f := &fakeBackend{exists: map[string]bool{"faultline": true},
		fail: map[string]error{"reuse faultline": errors.New("runtime: the cluster runs \"crio\", the run asks for \"containerd\"")}}
	o := testOptions(t)
	o.Keep = true
	err := runFake(t, o, f)
	if err == nil || !strings.Contains(err.Error(), "the cluster runs") {
		t.Fatalf("err = %v", err)
	}
	for _, c := range f.Calls() {
		if strings.HasPrefix(c, "delete") || strings.HasPrefix(c, "suites") {
			t.Errorf("unexpected %q after a facts mismatch: %v", c, f.Calls())
		}
	}
}

func TestRuntimesRunSideBySide(t *testing.T) {
	var barrier sync.WaitGroup
	barrier.Add(2)
	f := &fakeBackend{started: true, barrier: &barrier}
	o := testOptions(t, "all")
	if err := runFake(t, o, f); err != nil {
		t.Fatal(err)
	}
	if !f.parallel {
		t.Error("the runtimes' suites did not run at the same time")
	}
	calls := strings.Join(f.Calls(), ",")
	for _, want := range []string{"create faultline-containerd", "create faultline-crio", "delete faultline-containerd", "delete faultline-crio"} {
		if !strings.Contains(calls, want) {
			t.Errorf("no %q in %s", want, calls)
		}
	}
	if !strings.HasSuffix(calls, "stop engine") {
		t.Errorf("the engine must stop last: %s", calls)
	}
}

// TestEveryRuntimeOnEveryKubernetes: two releases and two runtimes are four
// stacks, each with its node image, cluster, artifacts and column.
func TestEveryRuntimeOnEveryKubernetes(t *testing.T) {
	f := &fakeBackend{}
	o := testOptions(t, "all")
	o.KubernetesVersions = versions.Kubernetes()
	if len(o.KubernetesVersions) < 2 {
		t.Skip("one Kubernetes release pinned")
	}
	if err := runFake(t, o, f); err != nil {
		t.Fatal(err)
	}
	calls := strings.Join(f.Calls(), ",")
	var keys []string
	for _, v := range o.KubernetesVersions {
		for _, rt := range []string{"containerd", "crio"} {
			key := wire.StackKey(rt, v, "")
			keys = append(keys, key)
			for _, want := range []string{"node image " + key, "create faultline-" + strings.ReplaceAll(key, ".", "-"), "suites " + key} {
				if !strings.Contains(calls, want) {
					t.Errorf("no %q in %s", want, calls)
				}
			}
			if _, err := os.Stat(filepath.Join(o.Artifacts, key, wire.GinkgoReportFile)); err != nil {
				t.Errorf("stack %s: %v", key, err)
			}
		}
	}
	rep, err := report.ReadJSON(o.Artifacts)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range keys {
		if v := rep.Verdict("FAULTLINE-CLUSTER-RUNS-PODS", key); v == nil {
			t.Errorf("no verdict in column %s", key)
		}
	}
}

func TestOneRuntimeFailingDoesNotStopTheOther(t *testing.T) {
	f := &fakeBackend{fail: map[string]error{"create faultline-crio": errors.New("no")}}
	err := runFake(t, testOptions(t, "all"), f)
	if err == nil || !strings.Contains(err.Error(), "failed on crio") {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(strings.Join(f.Calls(), ","), "suites containerd") {
		t.Errorf("containerd did not run: %v", f.Calls())
	}
}

func TestExistingClusterBuildsAndCreatesNothing(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := &fakeBackend{facts: facts.Facts{Runtime: "crio", RuntimeVersion: "1.36.2"}}
	o := testOptions(t)
	o.Runtimes = nil
	o.Kubeconfig, o.FakesImage = kubeconfig, "registry.example/fakes:1"
	if err := runFake(t, o, f); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, f, "test binary", "facts", "suites crio")

	o.Runtimes, o.RuntimesGiven = []runtimes.Runtime{runtimes.MustLookup("containerd")}, true
	f = &fakeBackend{facts: facts.Facts{Runtime: "crio"}}
	if err := runFake(t, o, f); err == nil || !strings.Contains(err.Error(), "nodes run crio") {
		t.Fatalf("err = %v, want a runtime mismatch", err)
	}
}

// TestExistingClusterDefaults: on a cluster faultline did not create, the
// fakes image is this build's in the named registry, and Disruptive specs
// run only when asked for.
func TestExistingClusterDefaults(t *testing.T) {
	o := testOptions(t)
	o.Kubeconfig, o.ImageRegistry, o.LabelFilter = os.DevNull, "registry.example/ci", "smoke"
	o, err := prepare(o)
	if err != nil {
		t.Fatal(err)
	}
	if want := imageref.Fakes("registry.example/ci"); o.FakesImage != want {
		t.Errorf("fakes image %q, want %q", o.FakesImage, want)
	}
	if got := o.labelFilter(); got != "((smoke) && !Disruptive)" {
		t.Errorf("label filter %q leaves Disruptive specs in", got)
	}
	o.Disruptive = true
	if got := o.labelFilter(); got != "(smoke)" {
		t.Errorf("with --disruptive: label filter %q", got)
	}
	own, err := prepare(testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := own.labelFilter(); strings.Contains(got, "Disruptive") {
		t.Errorf("faultline's own cluster: label filter %q leaves out Disruptive specs", got)
	}
}

// TestValidateLeavesTheOptionsAlone: Validate only checks, also options it
// refuses, and leaves what their slices and maps hold (compared with the
// same options made a second time); the defaults are filled once, and
// filling them again changes nothing.
func TestValidateLeavesTheOptionsAlone(t *testing.T) {
	for name, edit := range map[string]func(*Options){
		"good": func(o *Options) {},
		"bad": func(o *Options) {
			o.Procs, o.Suites, o.KubernetesVersions = -1, []string{"dra,foo"}, []string{"", versions.Default().Kubernetes()}
			o.KubernetesPatches, o.FeatureGates, o.Kubeconfig = []string{"relative.patch"}, map[string]bool{"A": true}, "relative-kubeconfig"
		},
	} {
		t.Run(name, func(t *testing.T) {
			base := testOptions(t)
			made := func() Options {
				o := base
				o.Runtimes = append([]runtimes.Runtime(nil), base.Runtimes...)
				edit(&o)
				return o.withDefaults()
			}
			o, want := made(), made()
			if err := o.Validate(); (err == nil) != (name == "good") {
				t.Fatalf("Validate = %v", err)
			}
			// Functions never compare equal: compare what they say.
			same := func(a, b Options) bool {
				if a.OptionName("Keep") != b.OptionName("Keep") {
					return false
				}
				a.OptionName, b.OptionName = nil, nil
				return reflect.DeepEqual(a, b)
			}
			if !same(o, want) {
				t.Errorf("Validate changed the options:\n%+v\nwant\n%+v", o, want)
			}
			if again := o.withDefaults(); !same(again, want) {
				t.Errorf("defaults filled twice differ:\n%+v\nwant\n%+v", again, want)
			}
		})
	}
}

// TestWithDefaultsLeavesTheCallersSlices: the absolute patch paths are a
// list of the run's own.
func TestWithDefaultsLeavesTheCallersSlices(t *testing.T) {
	patches := []string{"relative.patch"}
	o := Options{KubernetesPatches: patches}.withDefaults()
	if patches[0] != "relative.patch" || !filepath.IsAbs(o.KubernetesPatches[0]) {
		t.Errorf("caller's %q, the run's %q", patches, o.KubernetesPatches)
	}
}

// TestOptionErrorsNameTheField: a refusal names the field at fault and the
// other options it mentions, the way the caller names them.
func TestOptionErrorsNameTheField(t *testing.T) {
	o := testOptions(t)
	o.KubernetesPatches, o.KubernetesSrc = []string{os.DevNull}, t.TempDir()
	err := o.withDefaults().Validate()
	var bad *OptionError
	if !errors.As(err, &bad) || bad.Field != "KubernetesPatches" {
		t.Fatalf("err = %v, want an OptionError of KubernetesPatches", err)
	}
	flags := func(field string) string { return "--" + strings.ToLower(field) }
	if got, want := bad.Message(flags), "--kubernetespatches applies to the pinned release; with --kubernetessrc, apply it to the checkout"; got != want {
		t.Errorf("Message = %q, want %q", got, want)
	}
	var all OptionErrors
	if !errors.As(err, &all) || !strings.Contains(all.Message(flags), "--kubernetessrc") || strings.Contains(all.Message(flags), "KubernetesSrc") {
		t.Errorf("OptionErrors.Message = %q", all.Message(flags))
	}
}

func TestValidate(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(*Options)
		want string
	}{
		"bad procs":          {func(o *Options) { o.Procs = -1 }, "Procs"},
		"bad repeat":         {func(o *Options) { o.Repeat = -1 }, "Repeat wants a positive number"},
		"bad focus":          {func(o *Options) { o.Focus = "(" }, "Focus"},
		"bad suite":          {func(o *Options) { o.Suites = []string{"dra,foo"} }, `unknown suite "foo"`},
		"bad cluster name":   {func(o *Options) { o.ClusterName = "Fault_line" }, "ClusterName"},
		"kubeconfig missing": {func(o *Options) { o.Kubeconfig = "/nonexistent" }, "Kubeconfig"},
		"node image for two": {func(o *Options) {
			o.Runtimes, _ = runtimes.Parse("all")
			o.NodeImage = "x"
		}, "NodeImage"},
		"containerd-src on crio": {func(o *Options) {
			o.Runtimes, _ = runtimes.Parse("crio")
			o.ContainerdSrc = t.TempDir()
		}, "ContainerdSrc is for Runtimes containerd"},
		"missing patch": {func(o *Options) { o.KubernetesPatches = []string{"/nonexistent.patch"} }, "KubernetesPatches"},
		"patch with a checkout": {func(o *Options) {
			o.KubernetesPatches = []string{os.DevNull}
			o.KubernetesSrc = t.TempDir()
		}, "with KubernetesSrc, apply it"},
		"patch on a cluster": {func(o *Options) {
			o.KubernetesPatches = []string{os.DevNull}
			o.Kubeconfig = os.DevNull
		}, "KubernetesPatches builds a cluster; it does not go with Kubeconfig"},
		"crio patch on containerd": {func(o *Options) {
			o.Runtimes, _ = runtimes.Parse("containerd")
			o.CRIOPatches = []string{os.DevNull}
		}, "CRIOPatches is for Runtimes crio"},
		"containerd patch with a checkout": {func(o *Options) {
			o.Runtimes, _ = runtimes.Parse("containerd")
			o.ContainerdPatches = []string{os.DevNull}
			o.ContainerdSrc = t.TempDir()
		}, "with ContainerdSrc, apply it"},
		"missing NRI patch":    {func(o *Options) { o.NRIPatches = []string{"/nonexistent.patch"} }, "NRIPatches"},
		"NRI patch with image": {func(o *Options) { o.NRIPatches, o.NodeImage = []string{os.DevNull}, "x" }, "NRIPatches builds a node image"},
		"NRI patch on a cluster": {func(o *Options) {
			o.NRIPatches = []string{os.DevNull}
			o.Kubeconfig = os.DevNull
		}, "NRIPatches builds a cluster; it does not go with Kubeconfig"},
		"gates on a cluster": {func(o *Options) {
			o.FeatureGates = map[string]bool{"A": true}
			o.Kubeconfig = os.DevNull
		}, "FeatureGates builds a cluster; it does not go with Kubeconfig"},
		"a kubelet setting on a cluster": {func(o *Options) {
			o.KubeletSyncFrequency = 20 * time.Second
			o.Kubeconfig = os.DevNull
		}, "KubeletSyncFrequency builds a cluster; it does not go with Kubeconfig"},
		"a bad sync frequency": {func(o *Options) { o.KubeletSyncFrequency = -time.Second }, "KubeletSyncFrequency"},
	} {
		t.Run(name, func(t *testing.T) {
			o := testOptions(t)
			tc.edit(&o)
			err := o.withDefaults().Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestVariant: what a run changes on the pinned releases names its stacks.
func TestVariant(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{}, ""},
		{Options{NRIVersion: "v0.12.5"}, "nri-v0.12.5"},
		{Options{KubernetesPatches: []string{"clusters/patches/kep-5322/0001-kubelet-dra-permanent-failures.patch"}, FeatureGates: map[string]bool{"X": true}}, "kep-5322"},
		{Options{KubernetesPatches: []string{"/tmp/fix-dra.patch", "/tmp/more/0002-b.patch", "/tmp/more/0003-c.patch"}}, "fix-dra+more"},
		{Options{FeatureGates: map[string]bool{"X": true}}, "feature-gates"},
		{Options{NRIVersion: "v0.12.5", KubernetesPatches: []string{"a/kep/0001-x.patch"}}, "nri-v0.12.5+kep"},
		{Options{Workers: 2}, "multinode"},
		{Options{KubernetesPatches: []string{"a/kep/0001-x.patch"}, FakeModes: []string{"dra-first-device-only"}}, "kep+fake-dra-first-device-only"},
	} {
		if got := tc.o.Variant(); got != tc.want {
			t.Errorf("Variant of %+v = %q, want %q", tc.o, got, tc.want)
		}
	}
	o := Options{Runtimes: []runtimes.Runtime{runtimes.MustLookup("containerd")}, NRIVersion: "v0.12.5"}
	if st := o.Stacks(); len(st) != 1 || st[0].Variant != "nri-v0.12.5" || st[0].Label != "containerd" {
		t.Errorf("Stacks = %+v", st)
	}
	// Another containerd release changes only the containerd stack.
	o = Options{Runtimes: []runtimes.Runtime{runtimes.MustLookup("containerd"), runtimes.MustLookup("crio")}, ContainerdVersion: "v2.3.7", NRIVersion: "v0.12.5"}
	if st := o.Stacks(); len(st) != 2 || st[0].Variant != "containerd-v2.3.7+nri-v0.12.5" || st[1].Variant != "nri-v0.12.5" {
		t.Errorf("Stacks = %+v", st)
	}
	// A runtime's patches change its stacks only; NRI's every stack.
	o = Options{Runtimes: []runtimes.Runtime{runtimes.MustLookup("containerd"), runtimes.MustLookup("crio")},
		ContainerdPatches: []string{"p/mutant-ctd/0001-a.patch"}, CRIOPatches: []string{"p/mutant-crio/0001-a.patch"},
		NRIPatches: []string{"p/mutant-nri/0001-a.patch"}, KubernetesPatches: []string{"p/kep/0001-a.patch"}}
	if st := o.Stacks(); len(st) != 2 || st[0].Variant != "kep+mutant-nri+mutant-ctd" || st[1].Variant != "kep+mutant-nri+mutant-crio" {
		t.Errorf("Stacks = %+v", st)
	}
}

// --containerd-version needs a containerd stack, a release, and no other
// containerd source.
func TestContainerdVersionChecked(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"crio only", func(o *Options) { o.Runtimes = []runtimes.Runtime{runtimes.MustLookup("crio")} }, "is for"},
		{"not a release", func(o *Options) { o.ContainerdVersion = "main" }, "want a containerd release"},
		{"with a checkout", func(o *Options) { o.ContainerdSrc = t.TempDir() }, "does not go with"},
	} {
		o := testOptions(t)
		o.ContainerdVersion = "v2.3.7"
		tc.edit(&o)
		_, err := prepare(o)
		var refused OptionErrors
		if !errors.As(err, &refused) || !strings.Contains(err.Error(), tc.want) || refused[0].Field != "ContainerdVersion" {
			t.Errorf("%s: %v, want a refusal of ContainerdVersion saying %q", tc.name, err, tc.want)
		}
	}
	o := testOptions(t)
	o.ContainerdVersion = "v2.3.7"
	if _, err := prepare(o); err != nil {
		t.Errorf("a containerd release: %v", err)
	}
}

func TestLabelFilter(t *testing.T) {
	for _, tc := range []struct {
		suites []string
		user   string
		want   string
	}{
		{Suites, "", ""},
		{[]string{"dra"}, "", "(Suite:dra)"},
		{[]string{"dra", "nri"}, "smoke || ci", "(Suite:dra || Suite:nri) && (smoke || ci)"},
		{Suites, "!Slow", "(!Slow)"},
	} {
		if got := LabelFilter(tc.suites, tc.user); got != tc.want {
			t.Errorf("LabelFilter(%v, %q) = %q, want %q", tc.suites, tc.user, got, tc.want)
		}
	}
	got, err := ParseSuites([]string{"nri", "dra,nri"})
	if err != nil || strings.Join(got, ",") != "dra,nri" {
		t.Errorf("ParseSuites = %v, %v", got, err)
	}
}

// TestRelativeArtifacts: the default --artifacts is relative; the manifest
// still names each run's report.
func TestRelativeArtifacts(t *testing.T) {
	t.Chdir(t.TempDir())
	o := testOptions(t)
	o.Artifacts = "_artifacts"
	if err := runFake(t, o, &fakeBackend{}); err != nil {
		t.Fatal(err)
	}
	rep, err := report.ReadJSON("_artifacts")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Verdicts) != 1 {
		t.Errorf("verdicts %+v", rep.Verdicts)
	}
}

// TestRuntimeThatCouldNotRun: when one runtime's cluster cannot be made,
// the report shows that stack's failure next to the other's verdicts, the
// run's error is not the verdicts' (exit code 3, not 1), and an earlier
// run's report does not survive.
func TestRuntimeThatCouldNotRun(t *testing.T) {
	o := testOptions(t, "all")
	earlierRun(t, o.Artifacts, "report.html")
	if err := os.WriteFile(filepath.Join(o.Artifacts, "report.html"), []byte("an older run's"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &fakeBackend{fail: map[string]error{"create faultline-crio": errors.New("kind: node did not start")}}
	err := runFake(t, o, f)
	if err == nil || errors.Is(err, verdicts.ErrUnexpected) {
		t.Fatalf("err = %v, want the cluster's failure and not ErrUnexpected", err)
	}
	rep, rerr := report.ReadJSON(o.Artifacts)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if len(rep.SetupFailures) != 1 || rep.SetupFailures[0].Stack != wire.StackKey("crio", versions.Default().Kubernetes(), "") || !strings.Contains(rep.SetupFailures[0].Message, "node did not start") {
		t.Errorf("setup failures %+v", rep.SetupFailures)
	}
	if v := rep.Verdict("FAULTLINE-CLUSTER-RUNS-PODS", wire.StackKey("containerd", versions.Default().Kubernetes(), "")); v == nil || v.State != verdicts.Pass {
		t.Errorf("containerd's verdict %+v", v)
	}
	if html, _ := os.ReadFile(filepath.Join(o.Artifacts, "report.html")); strings.Contains(string(html), "an older run's") {
		t.Error("an earlier run's report.html survived")
	}
}

// TestValidateRefusesBadInputBeforeAnyStage: input that would otherwise be
// found late (Ginkgo's filter, kind's name length) or silently replaced (an
// empty release is the default one) is refused with one line.
func TestValidateRefusesBadInputBeforeAnyStage(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(*Options)
		want string
	}{
		"empty release":          {func(o *Options) { o.KubernetesVersions = []string{"", ""} }, "KubernetesVersions"},
		"empty release of two":   {func(o *Options) { o.KubernetesVersions = []string{versions.Default().Kubernetes(), ""} }, "an empty release"},
		"label filter":           {func(o *Options) { o.LabelFilter = "((" }, "LabelFilter"},
		"NRI timeout":            {func(o *Options) { o.NRIRequestTimeout = 3 * time.Nanosecond }, "NRIRequestTimeout 3ns"},
		"runtime timeout":        {func(o *Options) { o.RuntimeRequestTimeout = time.Nanosecond }, "RuntimeRequestTimeout 1ns"},
		"negative timeout":       {func(o *Options) { o.RuntimeRequestTimeout = -time.Second }, "RuntimeRequestTimeout"},
		"long cluster name":      {func(o *Options) { o.ClusterName = strings.Repeat("a", 60) }, "ClusterName"},
		"path as a cluster name": {func(o *Options) { o.ClusterName = "../victim" }, "ClusterName"},
		"unknown fake mode":      {func(o *Options) { o.FakeModes = []string{"dra-crash"} }, `fake mode "dra-crash": want one of dra-first-device-only`},
		"empty fake mode":        {func(o *Options) { o.FakeModes = []string{""} }, `fake mode ""`},
		"fake mode twice":        {func(o *Options) { o.FakeModes = []string{"dra-first-device-only", "dra-first-device-only"} }, "named twice"},
	} {
		t.Run(name, func(t *testing.T) {
			o := testOptions(t)
			tc.edit(&o)
			err := o.withDefaults().Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %q, want one line with %q", err, tc.want)
			}
		})
	}
	// The longest name --cluster-name takes names every stack's nodes with
	// DNS labels, in the run with the most stacks.
	o := testOptions(t, "all")
	o.KubernetesVersions = versions.Kubernetes()
	o.ClusterName = strings.Repeat("a", kindcluster.MaxNameLength-maxClusterNameSuffix())
	o = o.withDefaults()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, st := range o.Stacks() {
		if err := kindcluster.ValidateName(o.clusterName(st)); err != nil {
			t.Error(err)
		}
	}
	o.ClusterName += "a"
	if err := o.Validate(); err == nil {
		t.Errorf("--cluster-name of %d characters accepted", len(o.ClusterName))
	}
	for _, ok := range []struct{ filter string }{{"smoke"}, {"!Slow && (ci || smoke)"}} {
		o := testOptions(t)
		o.LabelFilter = ok.filter
		if err := o.withDefaults().Validate(); err != nil {
			t.Errorf("--label-filter %q: %v", ok.filter, err)
		}
	}
}

// TestDeleteClusterPassesTheRunsKubeconfig: the real backend deletes a
// cluster it created with the kubeconfig file it wrote for it, and one it
// did not create (--replace-cluster) with none of the user's: $KUBECONFIG
// and ~/.kube/config stay byte-identical. docker is a fake that lists no
// nodes and fails everything else, so kind's create fails at once.
func TestDeleteClusterPassesTheRunsKubeconfig(t *testing.T) {
	root := t.TempDir()
	bin := filepath.Join(root, "bin")
	if err := os.MkdirAll(filepath.Join(root, "home", ".kube"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\ncase \"$1\" in ps) exit 0;; esac\necho \"fake docker: $*\" >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "docker"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	t.Setenv("HOME", filepath.Join(root, "home"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(root, "cache"))
	t.Setenv("KUBECONFIG", filepath.Join(root, "env-kubeconfig"))
	entry := func(cluster string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: kind-%[1]s\n  cluster:\n    server: https://127.0.0.1:1\n"+
			"contexts:\n- name: kind-%[1]s\n  context:\n    cluster: kind-%[1]s\n    user: kind-%[1]s\nusers:\n- name: kind-%[1]s\n  user: {}\n", cluster)
	}
	// the user's files name both clusters
	user := strings.Replace(entry("made"), "clusters:\n", "clusters:\n- name: kind-old\n  cluster:\n    server: https://127.0.0.1:2\n", 1)
	userFiles := []string{os.Getenv("KUBECONFIG"), filepath.Join(root, "home", ".kube", "config")}
	for _, f := range userFiles {
		if err := os.WriteFile(f, []byte(user), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	own := filepath.Join(root, "artifacts", "containerd", "kubeconfig")
	if err := os.MkdirAll(filepath.Dir(own), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(own, []byte(entry("made")), 0o644); err != nil {
		t.Fatal(err)
	}

	b := &realBackend{opts: Options{Out: &bytes.Buffer{}}}
	ctx := context.Background()
	if err := b.CreateCluster(ctx, kindcluster.Settings{Name: "made", Runtime: runtimes.MustLookup("containerd"), NodeImage: "img"}, own); err == nil {
		t.Fatal("kind created a cluster with a fake docker")
	}
	for _, name := range []string{"made", "old"} {
		if err := b.DeleteCluster(ctx, name); err != nil {
			t.Fatalf("delete %s: %v", name, err)
		}
	}
	for _, f := range userFiles {
		if data, err := os.ReadFile(f); err != nil || string(data) != user {
			t.Errorf("%s changed: %q %v", f, data, err)
		}
	}
	if data, _ := os.ReadFile(own); strings.Contains(string(data), "kind-made") {
		t.Errorf("the run's kubeconfig still has the deleted cluster:\n%s", data)
	}
}

// serialSpec is fakeSpec of a spec the e2e framework marks Serial.
func serialSpec(state verdicts.State, requirement string) types.SpecReport {
	s := fakeSpec(state, requirement)
	s.IsSerial, s.LeafNodeLabels = true, append(s.LeafNodeLabels, serialLabel)
	return s
}

// TestSerialSpecsOnASecondCluster: a selection with Serial specs and others
// runs on two clusters of the stack at the same time, the Serial specs on
// the second; the report is one run's, with each spec as the cluster that
// ran it reports it. Without Serial specs in the selection, or with
// SerialCluster never, or fewer than two spare cores per cluster, one cluster per stack runs everything.
func TestSerialSpecsOnASecondCluster(t *testing.T) {
	tree := []types.SpecReport{fakeSpec(verdicts.Pass, "DRA-TRANSIENT-RETRIED"), serialSpec(verdicts.Fail, "DRA-KUBELET-RESTART-PREPARE")}
	specs := func(string, int) []types.SpecReport { return slices.Clone(tree) }
	for _, tc := range []struct {
		name     string
		change   func(o *Options)
		clusters []string
	}{
		{"split", func(o *Options) {}, []string{"faultline", "faultline-serial"}},
		{"never", func(o *Options) { o.SerialCluster = SerialClusterNever }, []string{"faultline"}},
		// One stack is two clusters: auto splits where two spare cores
		// wait for each, not on an idle two-core machine, nor on a
		// four-core one whose cores are half busy.
		{"two cores", func(o *Options) { o.Machine = capacity.Idle(2) }, []string{"faultline"}},
		{"four busy cores", func(o *Options) { o.Machine = capacity.Machine{Cores: 4, Idle: 0.5, Window: time.Second} }, []string{"faultline"}},
		{"two cores, always", func(o *Options) { o.Machine, o.SerialCluster = capacity.Idle(2), SerialClusterAlways }, []string{"faultline", "faultline-serial"}},
		// Four clusters for two stacks: auto splits on eight idle cores.
		{"two stacks on four cores", func(o *Options) { o.Runtimes = twoRuntimes(t) }, []string{"faultline-containerd", "faultline-crio"}},
		{"two stacks on eight cores", func(o *Options) { o.Machine, o.Runtimes = capacity.Idle(8), twoRuntimes(t) },
			[]string{"faultline-containerd", "faultline-containerd-serial", "faultline-crio", "faultline-crio-serial"}},
		{"always", func(o *Options) {
			o.Machine, o.Runtimes, o.SerialCluster = capacity.Idle(2), twoRuntimes(t), SerialClusterAlways
		},
			[]string{"faultline-containerd", "faultline-containerd-serial", "faultline-crio", "faultline-crio-serial"}},
		{"no Serial spec selected", func(o *Options) { o.LabelFilter = "!Serial" }, []string{"faultline"}},
		{"only Serial specs selected", func(o *Options) { o.Focus = "RESTART" }, []string{"faultline"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeBackend{specs: specs}
			o := testOptions(t)
			o.SpecTree = SpecTree{Description: "faultline", Specs: tree}
			o.Machine = capacity.Idle(4)
			tc.change(&o)
			err := runFake(t, o, f)
			var created, deleted []string
			for _, c := range f.Calls() {
				if name, ok := strings.CutPrefix(c, "create "); ok {
					created = append(created, name)
				}
				if name, ok := strings.CutPrefix(c, "delete "); ok {
					deleted = append(deleted, name)
				}
			}
			slices.Sort(created)
			slices.Sort(deleted)
			if !slices.Equal(created, tc.clusters) || !slices.Equal(deleted, tc.clusters) {
				t.Fatalf("created %v, deleted %v; want %v both", created, deleted, tc.clusters)
			}
			if !slices.Equal(tc.clusters, []string{"faultline", "faultline-serial"}) {
				return
			}
			// The Serial spec fails (as expected of nothing): the run
			// says so, and its report holds both specs.
			if !errors.Is(err, verdicts.ErrUnexpected) {
				t.Fatalf("err = %v, want ErrUnexpected", err)
			}
			rep, err := report.ReadJSON(o.Artifacts)
			if err != nil {
				t.Fatal(err)
			}
			key := wire.StackKey("containerd", versions.Default().Kubernetes(), "")
			for id, want := range map[string]verdicts.State{"DRA-TRANSIENT-RETRIED": verdicts.Pass, "DRA-KUBELET-RESTART-PREPARE": verdicts.Fail} {
				if v := rep.Verdict(id, key); v == nil || v.State != want {
					t.Errorf("%s: %+v, want %s", id, v, want)
				}
			}
			for _, f := range []string{wire.GinkgoReportFile, ginkgorun.JUnitFile, "serial/" + wire.GinkgoReportFile} {
				if _, err := os.Stat(filepath.Join(o.Artifacts, "containerd", f)); err != nil {
					t.Error(err)
				}
			}
			// The report is of one run with one label filter (none here:
			// every spec), not the first share's "!Serial"; the split is
			// said apart.
			if rep.Header.LabelFilter != "" || rep.Header.Split != splitHeader {
				t.Errorf("header label filter %q, split %q; want none, %q", rep.Header.LabelFilter, rep.Header.Split, splitHeader)
			}
			md, err := os.ReadFile(filepath.Join(o.Artifacts, report.MarkdownFile))
			if err != nil {
				t.Fatal(err)
			}
			header, _, _ := strings.Cut(string(md), "\n\n|")
			if strings.Contains(header, "label filter") || !strings.Contains(header, ", "+splitHeader+".") {
				t.Errorf("report.md header:\n%s", header)
			}
			// The Serial spec's unexpected failure fails the stack's
			// suites, on both its clusters.
			stages := stageResults(t, o.Artifacts)
			for _, c := range []string{"suites (all but Serial) containerd", "suites (Serial specs) containerd/serial"} {
				if got := stages[c]; !slices.Equal(got, []string{"failed: unexpected verdicts (1)"}) {
					t.Errorf("%s: %q", c, got)
				}
			}
		})
	}
}

// TestSplitRunReportsTheRunsLabelFilter: a run that splits its selection
// under a label filter of its own reports that filter, not a share's.
func TestSplitRunReportsTheRunsLabelFilter(t *testing.T) {
	tree := []types.SpecReport{fakeSpec(verdicts.Pass, "DRA-TRANSIENT-RETRIED"), serialSpec(verdicts.Pass, "DRA-KUBELET-RESTART-PREPARE")}
	f := &fakeBackend{specs: func(string, int) []types.SpecReport { return slices.Clone(tree) }}
	o := testOptions(t)
	o.SpecTree = SpecTree{Description: "faultline", Specs: tree}
	o.SerialCluster, o.LabelFilter = SerialClusterAlways, "!Slow"
	if err := runFake(t, o, f); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(f.Calls(), "create faultline-serial") {
		t.Fatalf("the run did not split: %v", f.Calls())
	}
	rep, err := report.ReadJSON(o.Artifacts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Header.LabelFilter != "(!Slow)" || rep.Header.Split != splitHeader {
		t.Errorf("header label filter %q, split %q", rep.Header.LabelFilter, rep.Header.Split)
	}
	md, err := os.ReadFile(filepath.Join(o.Artifacts, report.MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := "label filter `(!Slow)`, " + splitHeader + "."; !strings.Contains(string(md), want) {
		t.Errorf("report.md lacks %q:\n%s", want, md)
	}
	stages := stageResults(t, o.Artifacts)
	for _, c := range []string{"suites (all but Serial) containerd", "suites (Serial specs) containerd/serial"} {
		if got := stages[c]; !slices.Equal(got, []string{"ok"}) {
			t.Errorf("%s: %q", c, got)
		}
	}
}

func twoRuntimes(t *testing.T) []runtimes.Runtime {
	t.Helper()
	list, err := runtimes.Parse("containerd", "crio")
	if err != nil {
		t.Fatal(err)
	}
	return list
}
