package kindcluster

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestValidateName(t *testing.T) {
	longest := strings.Repeat("a", MaxNameLength)
	for _, name := range []string{"faultline", "faultline-containerd-1-37", "k8s", "1", longest} {
		if err := ValidateName(name); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	for _, name := range []string{"", ".", "..", "../../victim", "a/b", "/abs", "a.b", "Faultline", "fault_line", "-a", "a-", "a b", longest + "a"} {
		if err := ValidateName(name); err == nil {
			t.Errorf("%q is accepted", name)
		}
	}
	// The longest name keeps every node name kind makes a DNS label.
	label := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	for _, node := range []string{longest + "-control-plane", longest + "-worker", longest + "-worker10"} {
		if len(node) > 63 || !label.MatchString(node) {
			t.Errorf("node %q (%d characters) is not a DNS label", node, len(node))
		}
	}
	if len(longest+"-control-plane") != 63 {
		t.Errorf("MaxNameLength %d leaves room unused", MaxNameLength)
	}
}

func TestCheckTimeout(t *testing.T) {
	for _, d := range []time.Duration{0, time.Second, 30 * time.Second} {
		if err := CheckTimeout(d); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
	for _, d := range []time.Duration{time.Nanosecond, 3 * time.Nanosecond, 999 * time.Millisecond, -time.Second} {
		if err := CheckTimeout(d); err == nil {
			t.Errorf("%s is accepted", d)
		}
	}
	if _, err := (Settings{Runtime: containerd, NRIRequestTimeout: 3 * time.Nanosecond}).Resolve(); err == nil {
		t.Error("Resolve accepts an NRI request timeout of 3ns")
	}
}

// fakeHome points every directory kind or faultline might write to into a
// temporary root, and PATH at a docker that lists no nodes and records
// each call (into the returned file): no real engine or cluster is reached.
func fakeHome(t *testing.T) (root, dockerLog string) {
	t.Helper()
	root = t.TempDir()
	bin := filepath.Join(root, "bin")
	dockerLog = filepath.Join(root, "docker.log")
	script := "#!/bin/sh\necho \"$*\" >> " + dockerLog + "\ncase \"$1\" in ps) exit 0;; esac\necho \"fake docker: $*\" >&2\nexit 1\n"
	for _, dir := range []string{bin, filepath.Join(root, "home", ".kube"), filepath.Join(root, "cache")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bin, "docker"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	t.Setenv("HOME", filepath.Join(root, "home"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(root, "cache"))
	t.Setenv("KUBECONFIG", filepath.Join(root, "env-kubeconfig"))
	return root, dockerLog
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

// TestDeleteRefusesNamesOutsideItsState: a name that is not a cluster name
// deletes nothing (in particular not what it points to outside faultline's
// state) and reaches no engine.
func TestDeleteRefusesNamesOutsideItsState(t *testing.T) {
	root, dockerLog := fakeHome(t)
	clusters := filepath.Join(root, "cache", "faultline", "clusters")
	kept := []string{
		filepath.Join(root, "cache", "victim", "file"),    // ../../victim
		filepath.Join(root, "cache", "faultline", "f"),    // ..
		filepath.Join(clusters, "other", "crio-run.conf"), // '' must not be the whole state
		filepath.Join(clusters, "a", "b", "file"),         // a/b
		filepath.Join(root, "home", "file"),               // ../../../home
	}
	for _, f := range kept {
		writeFile(t, f, "keep")
	}
	for _, name := range []string{"../../victim", "", "a/b", "..", ".", "../../../home", "/"} {
		if err := Delete(name, ""); err == nil {
			t.Errorf("Delete(%q) did not refuse", name)
		}
		if err := Delete(name, filepath.Join(root, "kubeconfig")); err == nil {
			t.Errorf("Delete(%q, kubeconfig) did not refuse", name)
		}
	}
	for _, f := range kept {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if calls, err := os.ReadFile(dockerLog); err == nil {
		t.Errorf("docker was called for names that were refused:\n%s", calls)
	}
	if err := Create(context.Background(), Settings{Name: "../x", Runtime: containerd, NodeImage: "img"}, filepath.Join(root, "kubeconfig"), time.Second); err == nil {
		t.Error("Create accepts ../x")
	}
	if err := Create(context.Background(), Settings{Name: "x", Runtime: containerd, NodeImage: "img"}, "", time.Second); err == nil {
		t.Error("Create accepts no kubeconfig path (kind would write the user's own)")
	}
	if err := WriteKubeconfig("x", ""); err == nil {
		t.Error("WriteKubeconfig accepts no path (kind would write the user's own)")
	}
}

const kindEntry = `apiVersion: v1
kind: Config
clusters:
- name: kind-x
  cluster:
    server: https://127.0.0.1:1
users:
- name: kind-x
  user: {}
contexts:
- name: kind-x
  context:
    cluster: kind-x
    user: kind-x
current-context: kind-x
`

// TestDeleteLeavesTheUsersKubeconfig: without a kubeconfig path, a delete
// edits neither $KUBECONFIG nor ~/.kube/config, though both name the
// cluster; with one, kind removes the cluster from that file only.
func TestDeleteLeavesTheUsersKubeconfig(t *testing.T) {
	root, dockerLog := fakeHome(t)
	userFiles := []string{os.Getenv("KUBECONFIG"), filepath.Join(root, "home", ".kube", "config")}
	for _, f := range userFiles {
		writeFile(t, f, kindEntry)
	}
	state := filepath.Join(root, "cache", "faultline", "clusters", "x")
	writeFile(t, filepath.Join(state, "crio-run.conf"), "x")
	unchanged := func(when string) {
		t.Helper()
		for _, f := range userFiles {
			if data, err := os.ReadFile(f); err != nil || string(data) != kindEntry {
				t.Errorf("%s: %s changed: %q %v", when, f, data, err)
			}
		}
		entries, _ := os.ReadDir(filepath.Join(root, "home", ".kube"))
		if len(entries) != 1 {
			t.Errorf("%s: ~/.kube holds %v", when, entries)
		}
	}

	if err := Delete("x", ""); err != nil {
		t.Fatal(err)
	}
	unchanged("delete without a kubeconfig")
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("the cluster's state is left: %v", err)
	}
	if calls, _ := os.ReadFile(dockerLog); !strings.Contains(string(calls), "ps -a --filter label=io.x-k8s.kind.cluster=x") {
		t.Errorf("kind did not list the cluster's nodes (docker calls: %q): the test proves nothing", calls)
	}

	own := filepath.Join(root, "artifacts", "kubeconfig")
	writeFile(t, own, kindEntry)
	if err := Delete("x", own); err != nil {
		t.Fatal(err)
	}
	unchanged("delete with faultline's kubeconfig")
	if data, _ := os.ReadFile(own); strings.Contains(string(data), "kind-x") {
		t.Errorf("kind left the cluster in the kubeconfig it was given:\n%s", data)
	}
}

func TestDeleteKubeconfig(t *testing.T) {
	fakeHome(t)
	dir, err := stateDir("x")
	if err != nil {
		t.Fatal(err)
	}
	if got := deleteKubeconfig(dir, "/run/k"); got != "/run/k" {
		t.Errorf("given path: %q", got)
	}
	got := deleteKubeconfig(dir, "")
	if got == "" || got == os.Getenv("KUBECONFIG") || filepath.Dir(got) != dir {
		t.Errorf("no path: %q, want a file in the cluster's state %s", got, dir)
	}
}
