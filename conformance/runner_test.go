package conformance

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-k8s/faultline/internal/imageref"
	"github.com/faultline-k8s/faultline/verdicts"
)

func env(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
}

func TestFromEnv(t *testing.T) {
	c, err := FromEnv(env(map[string]string{"FAULTLINE_FAKES_IMAGE": "fakes:1", "E2E_FOCUS": "transient", "E2E_PARALLEL": "3", "E2E_EXTRA_ARGS": "--a 1", "E2E_EXTRA_GINKGO_ARGS": "--v"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.ResultsDir != "/tmp/results" || c.Procs != 3 || c.LabelFilter != DefaultLabelFilter {
		t.Errorf("%+v", c)
	}
	args := strings.Join(c.GinkgoRun().Args(), " ")
	for _, want := range []string{"--procs 3", "--focus transient", "--label-filter !Disruptive", "--junit-report junit_01.xml", "--v /usr/local/bin/faultline.test --", "--faultline.fakes-image fakes:1", "--faultline.dump-dir /tmp/results/dumps --a 1"} {
		if !strings.Contains(args, want) {
			t.Errorf("ginkgo args %q lack %q", args, want)
		}
	}
	c, _ = FromEnv(env(map[string]string{"FAULTLINE_FAKES_IMAGE": "f", "E2E_PARALLEL": "false", "E2E_LABEL_FILTER": ""}))
	if c.Procs != 1 || strings.Contains(strings.Join(c.GinkgoRun().Args(), " "), "--label-filter") {
		t.Errorf("%+v", c)
	}
	for name, kv := range map[string]map[string]string{
		"empty fakes image": {"FAULTLINE_FAKES_IMAGE": ""},
		"bad parallel":      {"FAULTLINE_FAKES_IMAGE": "f", "E2E_PARALLEL": "lots"},
		"zero parallel":     {"FAULTLINE_FAKES_IMAGE": "f", "E2E_PARALLEL": "0"},
	} {
		if _, err := FromEnv(env(kv)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestFakesImageByVersion(t *testing.T) {
	c, err := FromEnv(env(map[string]string{"FAULTLINE_IMAGE_REGISTRY": "registry.example:5000/ci"}))
	if err != nil {
		t.Fatal(err)
	}
	if want := imageref.Fakes("registry.example:5000/ci"); c.FakesImage != want {
		t.Errorf("fakes image %q, want %q", c.FakesImage, want)
	}
	if c, _ := FromEnv(env(nil)); c.FakesImage != imageref.Fakes("") {
		t.Errorf("without a registry: fakes image %q, want the default registry's", c.FakesImage)
	}
}

// fakeGinkgo is a script standing in for ginkgo: it copies a recorded
// Ginkgo report into the output directory (or writes none) and exits.
func fakeGinkgo(t *testing.T, report string, exit int) string {
	t.Helper()
	dir := t.TempDir()
	script := "#!/bin/sh\necho ginkgo ran \"$@\"\n"
	if report != "" {
		script += "while [ \"$1\" != --output-dir ]; do shift; done\ncp " + report + " \"$2\"/ginkgo.json\n"
	}
	script += "exit " + string(rune('0'+exit)) + "\n"
	p := filepath.Join(dir, "ginkgo")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// recordedReport ungzips a recorded full run's Ginkgo report.
func recordedReport(t *testing.T, name string) string {
	t.Helper()
	f, err := os.Open("../verdicts/testdata/" + name + ".json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "ginkgo.json")
	out, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := io.Copy(out, z); err != nil {
		t.Fatal(err)
	}
	return p
}

func tarNames(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	z, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	tr := tar.NewReader(z)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
}

// TestRun: a run whose specs failed as the stack's expectations say leaves
// e2e.log, junit (ginkgo's), the report, the tarball and the done file, and
// is OK; one whose ginkgo wrote no report still leaves the log, the tarball
// and done, and fails.
func TestRun(t *testing.T) {
	results := t.TempDir()
	c := Config{ResultsDir: results, Procs: 1, FakesImage: "f", Kubeconfig: "/dev/null",
		Ginkgo: fakeGinkgo(t, recordedReport(t, "full-crio"), 1), TestBinary: "/bin/true"}
	var out bytes.Buffer
	if err := Run(context.Background(), c, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, f := range []string{LogFile, "report.md", "report.html", "report.json", TarballFile, DoneFile} {
		if _, err := os.Stat(filepath.Join(results, f)); err != nil {
			t.Error(err)
		}
	}
	if done, _ := os.ReadFile(filepath.Join(results, DoneFile)); string(done) != filepath.Join(results, TarballFile) {
		t.Errorf("done names %q", done)
	}
	names := strings.Join(tarNames(t, filepath.Join(results, TarballFile)), " ")
	for _, want := range []string{"e2e.log", "ginkgo.json", "report.md"} {
		if !strings.Contains(names, want) {
			t.Errorf("tarball %q lacks %s", names, want)
		}
	}
	if !strings.Contains(out.String(), "Nothing unexpected") {
		t.Errorf("no grid on the output:\n%s", out.String())
	}

	results = t.TempDir()
	c.ResultsDir, c.Ginkgo = results, fakeGinkgo(t, "", 1)
	err := Run(context.Background(), c, io.Discard)
	if err == nil || errors.Is(err, verdicts.ErrUnexpected) {
		t.Errorf("err = %v, want the run's failure", err)
	}
	for _, f := range []string{LogFile, TarballFile, DoneFile} {
		if _, err := os.Stat(filepath.Join(results, f)); err != nil {
			t.Error(err)
		}
	}
}
