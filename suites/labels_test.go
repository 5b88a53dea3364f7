package suites

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/faultline-k8s/faultline/judge/requirements"
	"github.com/faultline-k8s/faultline/suites/all"
	"github.com/faultline-k8s/faultline/suites/harness"
	"github.com/faultline-k8s/faultline/vocab/suitenames"
)

// suites are the suites the binary must hold: the CLI's list
// (vocab/suitenames), sorted.
var suites = func() []string {
	s := append([]string(nil), suitenames.All...)
	sort.Strings(s)
	return s
}()

// TestSpecLabels walks the spec tree (no cluster) and checks that every
// spec carries exactly one Suite:<name> label, the one of the package that
// defines it, so that a label filter selects whole suites and nothing else.
func TestSpecLabels(t *testing.T) {
	if harness.HaveCluster() {
		t.Skip("a unit test: runs without --kubeconfig")
	}
	perSuite := map[string]int{}
	for _, spec := range all.Preview() {
		var got []string
		for _, l := range spec.Labels() {
			if strings.HasPrefix(l, suitenames.LabelPrefix) {
				got = append(got, l)
			}
		}
		if len(got) != 1 {
			t.Errorf("%s (%s): want exactly one Suite:* label, got %v", spec.FullText(), spec.LeafNodeLocation, got)
			continue
		}
		suite := strings.TrimPrefix(got[0], suitenames.LabelPrefix)
		perSuite[suite]++
		// A spec written in suites/<s>/ belongs to suite <s>; the shared
		// ones (suites/harness: smoke) to the suite that registered them.
		if dir := filepath.Base(filepath.Dir(spec.LeafNodeLocation.FileName)); dir != "harness" && dir != suite {
			t.Errorf("%s (%s): labelled %s, but defined in suites/%s", spec.FullText(), spec.LeafNodeLocation, got[0], dir)
		}
	}
	var have []string
	for s := range perSuite {
		have = append(have, s)
	}
	sort.Strings(have)
	if strings.Join(have, ",") != strings.Join(suites, ",") {
		t.Errorf("suites with specs: %v, want %v", have, suites)
	}
	t.Logf("specs per suite: %v", perSuite)
}

// TestListWithoutCluster runs the binary as a user would, without a
// cluster: --list-tests and --list-labels print and exit 0, and KUBECONFIG in
// the environment does not make the specs run.
func TestListWithoutCluster(t *testing.T) {
	if harness.HaveCluster() {
		t.Skip("a unit test: runs without --kubeconfig")
	}
	run := func(env []string, args ...string) string {
		t.Helper()
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", os.Args[0], args, err, out)
		}
		return string(out)
	}

	out := run(nil, "-list-tests")
	for _, s := range suites {
		if want := "[Suite:" + s + "] smoke [smoke] runs a pod"; !strings.Contains(out, want) {
			t.Errorf("--list-tests does not list %q:\n%s", want, out)
		}
	}
	out = run(nil, "-list-labels")
	for _, s := range suites {
		if !strings.Contains(out, "    Suite:"+s+"\n") {
			t.Errorf("--list-labels does not list Suite:%s:\n%s", s, out)
		}
	}

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out = run([]string{"KUBECONFIG=" + kubeconfig}, "-test.run=^TestE2E$", "-test.v")
	if !strings.Contains(out, "--- SKIP: TestE2E") || !strings.Contains(out, "KUBECONFIG alone does not select a cluster") {
		t.Errorf("with KUBECONFIG set and no --kubeconfig, TestE2E must skip saying why:\n%s", out)
	}
}

// TestSpecRequirements keeps the specs and the requirement catalogue in
// step: every spec names at least one requirement (label Req:<ID>), every
// name is in the catalogue, in the spec's own area (or faultline's), and
// every requirement has a spec.
func TestSpecRequirements(t *testing.T) {
	if harness.HaveCluster() {
		t.Skip("a unit test: runs without --kubeconfig")
	}
	checked := map[string]int{}
	for _, spec := range all.Preview() {
		if spec.LeafNodeType != types.NodeTypeIt {
			continue
		}
		ids := requirements.FromLabels(spec.Labels())
		if len(ids) == 0 {
			t.Errorf("%s (%s): names no requirement; label it harness.Checks(<ID>) with an ID of judge/requirements/catalogue.yaml", spec.FullText(), spec.LeafNodeLocation)
		}
		suite := ""
		for _, l := range spec.Labels() {
			if s, ok := strings.CutPrefix(l, suitenames.LabelPrefix); ok {
				suite = s
			}
		}
		for _, id := range ids {
			r, ok := requirements.Lookup(id)
			switch {
			case !ok:
				t.Errorf("%s (%s): names %s, which judge/requirements/catalogue.yaml does not list", spec.FullText(), spec.LeafNodeLocation, id)
			case r.Area != suite && r.Area != "faultline":
				t.Errorf("%s (%s): in suite %s, names %s of area %s", spec.FullText(), spec.LeafNodeLocation, suite, id, r.Area)
			}
			checked[id]++
		}
	}
	for _, r := range requirements.All() {
		if checked[r.ID] == 0 {
			t.Errorf("requirement %s has no spec (label harness.Checks(%q) on the spec that checks it)", r.ID, r.ID)
		}
	}
}
