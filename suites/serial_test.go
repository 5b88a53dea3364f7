package suites

import (
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/faultline-k8s/faultline/suites/all"
	"github.com/faultline-k8s/faultline/suites/harness"
)

// serialTreeEnv makes this test binary, run again by TestSerialPerRuntime,
// print the Serial specs of the tree it built instead of testing.
const serialTreeEnv = "FAULTLINE_PRINT_SERIAL_SPECS"

// TestSerialPerRuntime: which specs need the node alone is decided per
// runtime as the tree is built. containerd slows CreateContainer through
// the NRI hook, which holds every creation on the node, so the CRI
// CreateContainer stage is Serial there; on CRI-O (runc-slow holds only the
// spec's own creation) it is not; the tree of an unknown runtime (the CLI's
// preview, a listing) is Serial wherever some runtime is. Nothing else
// differs.
func TestSerialPerRuntime(t *testing.T) {
	if os.Getenv(serialTreeEnv) != "" {
		var serial []string
		for _, s := range all.Preview() {
			if s.IsSerial {
				serial = append(serial, s.LeafNodeLocation.String()+" "+strings.Join(s.Labels(), ","))
			}
		}
		if err := json.NewEncoder(os.Stdout).Encode(serial); err != nil {
			t.Fatal(err)
		}
		return
	}
	if harness.HaveCluster() {
		t.Skip("a unit test: runs without --kubeconfig")
	}
	tree := func(runtime string) []string {
		args := []string{"-test.run", "^TestSerialPerRuntime$"}
		if runtime != "" {
			args = append(args, "--faultline.runtime", runtime)
		}
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), serialTreeEnv+"=1")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("the tree for runtime %q: %v\n%s", runtime, err, out)
		}
		var serial []string
		if err := json.Unmarshal(out[:strings.IndexByte(string(out), '\n')+1], &serial); err != nil {
			t.Fatalf("the tree for runtime %q: %v\n%s", runtime, err, out)
		}
		// Ginkgo's preview shuffles by a seed of its own each time.
		slices.Sort(serial)
		return serial
	}
	unknown, containerd, crio := tree(""), tree("containerd"), tree("crio")
	if !slices.Equal(unknown, containerd) {
		t.Errorf("Serial specs with the runtime unknown:\n%s\non containerd:\n%s", strings.Join(unknown, "\n"), strings.Join(containerd, "\n"))
	}
	onlyContainerd := 0
	for _, s := range containerd {
		if slices.Contains(crio, s) {
			continue
		}
		onlyContainerd++
		if !strings.Contains(s, "Req:CRI-CONTAINER-") || strings.Contains(s, "RESTART") {
			t.Errorf("Serial on containerd only: %s; want only the CRI CreateContainer stage's (its restart spec is Serial on both)", s)
		}
	}
	for _, s := range crio {
		if !slices.Contains(containerd, s) {
			t.Errorf("Serial on CRI-O only: %s", s)
		}
	}
	if onlyContainerd != 5 {
		t.Errorf("%d specs Serial on containerd only, want the 5 CRI CreateContainer specs but restart", onlyContainerd)
	}
}
