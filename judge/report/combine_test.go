package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-k8s/faultline/judge/verdicts"
)

// artifactsOf lays out an artifacts directory as a run writes it, from a
// recorded Ginkgo report of one stack.
func artifactsOf(t *testing.T, runtime, recorded string) string {
	t.Helper()
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join("..", "verdicts", "testdata", recorded))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, runtime), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, runtime, "ginkgo.json.gz"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	m := verdicts.Manifest{Stacks: []verdicts.ManifestStack{{Runtime: runtime, Runs: []string{runtime + "/ginkgo.json.gz"}}}}
	if err := verdicts.WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCombine: runs of different stacks make one report, a column each;
// the same stack from two runs is refused.
func TestCombine(t *testing.T) {
	a := artifactsOf(t, "containerd", "full137-containerd.json.gz")
	b := artifactsOf(t, "crio", "full-crio.json.gz")
	out := filepath.Join(t.TempDir(), "combined")
	rep, err := Combine([]string{a, b}, out, "")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, s := range rep.Stacks {
		keys = append(keys, s.Key)
	}
	if got := strings.Join(keys, ","); got != "containerd-1.37,crio-1.36" {
		t.Errorf("stacks %s", got)
	}
	if !strings.Contains(rep.Header.LabelFilter, "containerd-1.37: ") || !strings.Contains(rep.Header.LabelFilter, "crio-1.36: ") {
		t.Errorf("header filters %q", rep.Header.LabelFilter)
	}
	for _, f := range []string{MarkdownFile, JSONFile, HTMLFile} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	if rep.Header.Split != "" {
		t.Errorf("header split %q of runs that did not split", rep.Header.Split)
	}
	if _, err := Combine([]string{a, artifactsOf(t, "containerd", "full137-containerd.json.gz")}, out, ""); err == nil || !strings.Contains(err.Error(), "stack containerd-1.37 is in") {
		t.Errorf("the same stack twice: %v", err)
	}
}

// TestCombineSplit: the combined header says which runs split their
// selection: once when all did, by stack when some did.
func TestCombineSplit(t *testing.T) {
	const split = "Serial specs on a second cluster per stack"
	splitRun := func(runtime, recorded string) string {
		dir := artifactsOf(t, runtime, recorded)
		m := verdicts.Manifest{Header: verdicts.Header{Split: split},
			Stacks: []verdicts.ManifestStack{{Runtime: runtime, Runs: []string{runtime + "/ginkgo.json.gz"}}}}
		if err := verdicts.WriteManifest(dir, m); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	for _, tc := range []struct {
		name string
		dirs []string
		want string
	}{
		{"both split", []string{splitRun("containerd", "full137-containerd.json.gz"), splitRun("crio", "full-crio.json.gz")}, split},
		{"one split", []string{artifactsOf(t, "containerd", "full137-containerd.json.gz"), splitRun("crio", "full-crio.json.gz")}, "crio-1.36: " + split},
	} {
		rep, err := Combine(tc.dirs, filepath.Join(t.TempDir(), "combined"), "")
		if err != nil {
			t.Fatal(err)
		}
		if rep.Header.Split != tc.want {
			t.Errorf("%s: header split %q, want %q", tc.name, rep.Header.Split, tc.want)
		}
	}
}
