package pipeline

import (
	"bytes"
	"errors"
	"github.com/faultline-k8s/faultline/vocab/wire"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/faultline-k8s/faultline/internal/artifactdir"
	"github.com/faultline-k8s/faultline/judge/report"
	"github.com/faultline-k8s/faultline/judge/verdicts"
	"github.com/faultline-k8s/faultline/vocab/facts"
)

// earlierRun marks dir as faultline's, recording rels as written by an
// earlier run (write them after): what a test needs to leave results of a
// run before the one it makes.
func earlierRun(t *testing.T, dir string, rels ...string) {
	t.Helper()
	d, err := artifactdir.Claim(dir, "--artifacts", "an earlier run")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Reserve(rels...); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// lockedWriter lets the runtimes' stages print side by side under -race.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func present(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// TestRunFailingAtFirstStageKeepsHandPlacedFiles: a run that fails at its
// first stage removes the earlier run's results, and only those: what the
// user put into the directory stays.
func TestRunFailingAtFirstStageKeepsHandPlacedFiles(t *testing.T) {
	o := testOptions(t, "all")
	o.Out = &lockedWriter{w: io.Discard}
	// A whole earlier run, on both runtimes.
	if err := runFake(t, o, &fakeBackend{}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(o.Artifacts, "notes.md"), "by hand")
	writeFile(t, filepath.Join(o.Artifacts, "old", "report.md"), "an older report, kept by hand")

	o.Runtimes = o.Runtimes[:1]
	f := &fakeBackend{started: true, fail: map[string]error{"engine": errors.New("dockerd did not answer")}}
	if err := runFake(t, o, f); err == nil || errors.Is(err, artifactdir.ErrNotOurs) {
		t.Fatalf("err = %v, want the engine's", err)
	}
	wantCalls(t, f, "engine", "stop engine")
	for _, gone := range []string{"crio", "containerd", verdicts.ManifestFile, report.MarkdownFile, report.JSONFile, report.HTMLFile, fakesImageFile, nodeImageFile("crio")} {
		if present(filepath.Join(o.Artifacts, gone)) {
			t.Errorf("the earlier run's %s survived", gone)
		}
	}
	for _, kept := range []string{"notes.md", "old/report.md", timingsText} {
		if !present(filepath.Join(o.Artifacts, kept)) {
			t.Errorf("%s is gone", kept)
		}
	}
}

// TestHandPlacedReportIsNotOverwritten: a report.md a user put into
// faultline's own directory survives; the run says it is in the way before
// any stage runs instead of overwriting it.
func TestHandPlacedReportIsNotOverwritten(t *testing.T) {
	o := testOptions(t)
	earlierRun(t, o.Artifacts, "containerd")
	writeFile(t, filepath.Join(o.Artifacts, "containerd", "junit_01.xml"), "the earlier run's")
	writeFile(t, filepath.Join(o.Artifacts, report.MarkdownFile), "by hand")
	f := &fakeBackend{started: true}
	err := runFake(t, o, f)
	if !errors.Is(err, artifactdir.ErrNotOurs) || !strings.Contains(err.Error(), filepath.Join(o.Artifacts, report.MarkdownFile)) || !strings.Contains(err.Error(), "--artifacts") {
		t.Fatalf("err = %v, want ErrNotOurs naming report.md and --artifacts", err)
	}
	wantCalls(t, f)
	if data, _ := os.ReadFile(filepath.Join(o.Artifacts, report.MarkdownFile)); string(data) != "by hand" {
		t.Errorf("report.md = %q", data)
	}
	if !present(filepath.Join(o.Artifacts, "containerd", "junit_01.xml")) {
		t.Error("a refused run removed the earlier run's results")
	}
}

// TestUnmarkedDirectoryIsRefusedBeforeAnyStage: --artifacts naming a
// directory with files faultline did not make (/etc, a source tree with a
// containerd/ folder) is bad input: one line, nothing runs, nothing goes.
func TestUnmarkedDirectoryIsRefusedBeforeAnyStage(t *testing.T) {
	tree := t.TempDir()
	writeFile(t, filepath.Join(tree, "containerd", "config.toml"), "mine")
	writeFile(t, filepath.Join(tree, report.MarkdownFile), "mine")
	t.Chdir(tree)
	o := testOptions(t)
	o.Artifacts = "."
	f := &fakeBackend{started: true}
	err := runFake(t, o, f)
	if !errors.Is(err, artifactdir.ErrNotOurs) {
		t.Fatalf("err = %v, want ErrNotOurs", err)
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, tree) || !strings.Contains(msg, "--artifacts") {
		t.Errorf("want one line naming %s and --artifacts: %q", tree, msg)
	}
	wantCalls(t, f)
	if out := o.Out.(*bytes.Buffer).String(); out != "" {
		t.Errorf("a refused run printed stages:\n%s", out)
	}
	for _, kept := range []string{"containerd/config.toml", report.MarkdownFile} {
		if !present(filepath.Join(tree, kept)) {
			t.Errorf("%s is gone", kept)
		}
	}
	if present(filepath.Join(tree, artifactdir.MarkerFile)) || present(filepath.Join(tree, timingsText)) {
		t.Error("a refused run wrote into the directory")
	}
}

// TestMissingDirectoryIsMarkedAndUsed: a directory the run makes is
// faultline's, and records what the run wrote.
func TestMissingDirectoryIsMarkedAndUsed(t *testing.T) {
	o := testOptions(t)
	o.Artifacts = filepath.Join(o.Artifacts, "new", "artifacts")
	if err := runFake(t, o, &fakeBackend{}); err != nil {
		t.Fatal(err)
	}
	marker, err := os.ReadFile(filepath.Join(o.Artifacts, artifactdir.MarkerFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"containerd", verdicts.ManifestFile, report.MarkdownFile, timingsText} {
		if !strings.Contains(string(marker), `"`+p+`"`) {
			t.Errorf("the marker does not record %s:\n%s", p, marker)
		}
		if !present(filepath.Join(o.Artifacts, p)) {
			t.Errorf("%s was not written", p)
		}
	}
}

// TestRecordedRuntimeDirectoryNowALink: an earlier run's containerd/
// replaced by a link to outside is not followed: neither removed through nor
// written through; the run is refused before any stage.
func TestRecordedRuntimeDirectoryNowALink(t *testing.T) {
	o := testOptions(t)
	if err := runFake(t, o, &fakeBackend{}); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "junit_01.xml"), "not faultline's")
	link := filepath.Join(o.Artifacts, "containerd")
	if err := os.RemoveAll(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	o.Out = &bytes.Buffer{}
	f := &fakeBackend{}
	err := runFake(t, o, f)
	if !errors.Is(err, artifactdir.ErrNotOurs) || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("err = %v, want ErrNotOurs for the link", err)
	}
	wantCalls(t, f)
	if data, _ := os.ReadFile(filepath.Join(outside, "junit_01.xml")); string(data) != "not faultline's" || !present(link) {
		t.Error("the link or what it points to was touched")
	}
	// A refused run changes nothing, the earlier run's results included.
	if !present(filepath.Join(o.Artifacts, report.MarkdownFile)) {
		t.Error("a refused run removed the earlier run's report")
	}
}

// TestKeptKubeconfigSurvivesTheCleanup: --kubeconfig naming the kubeconfig
// a kept run left in its results works, though those results go.
func TestKeptKubeconfigSurvivesTheCleanup(t *testing.T) {
	o := testOptions(t)
	earlierRun(t, o.Artifacts, "containerd")
	kubeconfig := filepath.Join(o.Artifacts, "containerd", "kubeconfig")
	writeFile(t, kubeconfig, "kept")
	writeFile(t, filepath.Join(o.Artifacts, "containerd", "junit_01.xml"), "the kept run's")
	o.Runtimes = nil
	o.Kubeconfig, o.FakesImage = kubeconfig, "registry.example/fakes:1"
	f := &fakeBackend{facts: facts.Facts{Runtime: "crio"}}
	if err := runFake(t, o, f); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, f, "test binary", "facts", "suites crio")
	if data, _ := os.ReadFile(kubeconfig); string(data) != "kept" {
		t.Errorf("kubeconfig = %q", data)
	}
	if present(filepath.Join(o.Artifacts, "containerd", "junit_01.xml")) {
		t.Error("the kept run's results survived")
	}
	if !present(filepath.Join(o.Artifacts, "crio", wire.GinkgoReportFile)) {
		t.Error("no results in crio/")
	}
}
