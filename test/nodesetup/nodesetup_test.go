// Package nodesetup_test proves `faultline node-setup` on a real kind
// cluster: from one of faultline's node images it derives an image without
// the faultline-slow handler (image_test.go), makes a cluster of it,
// records the node's runtime configuration, checks that the runtime lacks
// the handler and that the CRI suite skips, runs `faultline node-setup
// install` (the handler is listed, the CRI suite runs; a second install
// changes nothing) and `remove` (the handler is gone), and compares the
// node's runtime configuration, byte for byte and mode for mode, with the
// record. It needs a machine that runs kind (root, a Docker engine that
// answers, the node image cached or buildable), so it runs only when asked:
//
//	FAULTLINE_NODESETUP_TEST=1 go test ./test/nodesetup -count=1 -v -timeout 40m   (make test-node-setup)
//
// FAULTLINE_NODE_RUNTIME (containerd, crio) picks the node image's runtime
// (default containerd); FAULTLINE_NODESETUP_KEEP=1 keeps the cluster
// (faultline-nodesetup) for a look afterwards.
package nodesetup_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/kind/pkg/cluster"

	"github.com/faultline-k8s/faultline/clusters/kindcluster"
	"github.com/faultline-k8s/faultline/internal/imageref"
	"github.com/faultline-k8s/faultline/judge/report"
	"github.com/faultline-k8s/faultline/judge/verdicts"
	"github.com/faultline-k8s/faultline/nodesetup"
	"github.com/faultline-k8s/faultline/nodesetup/deploy"
	"github.com/faultline-k8s/faultline/vocab/runtimes"
)

const clusterName = "faultline-nodesetup"

// Env is the cluster under test, as the CRI suite hook needs it.
type Env struct {
	// Kubeconfig of the cluster (a file).
	Kubeconfig string
	// FakesImage is loaded into the cluster's nodes.
	FakesImage string
	// Runtime of the nodes.
	Runtime runtimes.Runtime
	// RepoRoot is the faultline checkout.
	RepoRoot string
	// Faultline is the faultline binary of this checkout.
	Faultline string
}

// registry names faultline's images in the nodes; nothing is pulled.
const registry = "faultline.local"

// runCRISuite runs one requirement of the CRI suite (faultline e2e on the
// cluster) and reads its verdict: without the handler its spec must skip,
// saying why; with it the spec must run (pass, or fail as the runtime's
// expectations say) and nothing may be unexpected.
func runCRISuite(t *testing.T, env Env, handlerInstalled bool) {
	t.Helper()
	const requirement = "CRI-SANDBOX-RETRY-GETS-FIRST"
	artifacts := t.TempDir()
	args := []string{"e2e", "--kubeconfig", env.Kubeconfig, "--image-registry", registry,
		"--suite", "cri", "--label-filter", "Req:" + requirement, "--artifacts", artifacts}
	if !handlerInstalled {
		// The skip is the point here: without the flag the incomplete run
		// exits 4.
		args = append(args, "--allow-incomplete")
	}
	run(context.Background(), t, env.Faultline, args...)
	rep, err := report.ReadJSON(artifacts)
	if err != nil {
		t.Fatal(err)
	}
	var verdict *verdicts.Verdict
	for i := range rep.Verdicts {
		if rep.Verdicts[i].Requirement == requirement {
			verdict = &rep.Verdicts[i]
		}
	}
	if verdict == nil {
		t.Fatalf("no verdict on %s", requirement)
	}
	message := ""
	for _, s := range verdict.Specs {
		message += s.Message
	}
	t.Logf("handler installed %v: %s is %s: %s", handlerInstalled, requirement, verdict.State, report.FirstLine(message))
	switch {
	case !handlerInstalled && (verdict.State != verdicts.Skipped || !strings.Contains(message, nodesetup.HandlerName)):
		t.Errorf("without the handler %s must be skipped, naming the handler; it is %s", requirement, verdict.State)
	case handlerInstalled && verdict.State == verdicts.Skipped:
		t.Errorf("with the handler %s must run; it was skipped: %s", requirement, message)
	}
}

// run runs a command in the checkout and returns its standard output; a
// failure ends the test with its output.
func run(ctx context.Context, t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = "../.."
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", filepath.Base(name), strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

func TestNodeSetupInstallsAndRemovesTheHandler(t *testing.T) {
	if os.Getenv("FAULTLINE_NODESETUP_TEST") != "1" {
		t.Skip("set FAULTLINE_NODESETUP_TEST=1, FAULTLINE_NODE_IMAGE and FAULTLINE_FAKES_IMAGE to run node-setup on a real kind cluster (needs root and a Docker engine)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 35*time.Minute)
	defer cancel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := buildFaultline(t, root)
	// The engine: started if none answers, stopped at the end if this test
	// started it (an e2e run before it stops the one it started).
	if exec.Command("docker", "info").Run() != nil {
		run(ctx, t, bin, "engine", "start")
		t.Cleanup(func() {
			stop := exec.Command(bin, "engine", "stop")
			stop.Dir = "../.."
			_ = stop.Run()
		})
	}
	runtimeName := os.Getenv("FAULTLINE_NODE_RUNTIME")
	if runtimeName == "" {
		runtimeName = runtimes.Default
	}
	nodeImage := strings.TrimSpace(run(ctx, t, bin, "build-node-image", "--runtime", runtimeName))
	if exists, err := kindcluster.Exists(clusterName); err != nil || exists {
		t.Fatalf("a cluster %q exists before the test (%v): remove it (kind delete cluster --name %s)", clusterName, err, clusterName)
	}

	bareImage, rt := deriveBareImage(ctx, t, nodeImage, runtimeName)

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	t.Logf("creating cluster %s (%s) from %s", clusterName, rt.Name, bareImage)
	t.Cleanup(func() {
		if os.Getenv("FAULTLINE_NODESETUP_KEEP") == "1" {
			t.Logf("keeping cluster %s (kind delete cluster --name %s)", clusterName, clusterName)
			return
		}
		if err := kindcluster.Delete(clusterName, kubeconfig); err != nil {
			t.Errorf("delete cluster %s: %v", clusterName, err)
		}
	})
	err = kindcluster.Create(ctx, kindcluster.Settings{Name: clusterName, Runtime: rt, NodeImage: bareImage, CgroupV1: kindcluster.HostIsCgroupV1()},
		kubeconfig, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// faultline's images, built without an engine, under this build's tag.
	run(ctx, t, bin, "images", "load", clusterName, "--registry", registry)
	fakesImage := registry + "/" + imageref.FakesName + ":" + strings.TrimSpace(run(ctx, t, bin, "version", "--tag"))
	cs := clientset(t, kubeconfig)
	env := Env{Kubeconfig: kubeconfig, FakesImage: fakesImage, Runtime: rt, RepoRoot: root, Faultline: bin}

	before := snapshotNodes(t)
	waitHandler(ctx, t, cs, false)
	runCRISuite(t, env, false)
	runDeveloperLoop(ctx, t, root, kubeconfig, fakesImage)

	cli := func(args ...string) string {
		t.Helper()
		args = append(args, "--kubeconfig", kubeconfig, "--image", fakesImage, "--timeout", "4m")
		cmd := exec.CommandContext(ctx, bin, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		t.Logf("faultline %s:\n%s%s", strings.Join(args[:2], " "), stderr.String(), stdout.String())
		if err != nil {
			t.Fatalf("faultline %s: %v", strings.Join(args[:2], " "), err)
		}
		return stdout.String()
	}
	perNode := func(out string, want ...string) {
		t.Helper()
		lines := 0
		for _, line := range strings.Split(out, "\n") {
			if !strings.Contains(line, "://") { // a node's line: <node> (<runtime>://<version>): ...
				continue
			}
			lines++
			for _, w := range want {
				if negated, ok := strings.CutPrefix(w, "!"); ok {
					if strings.Contains(line, negated) {
						t.Errorf("node line says %q: %s", negated, line)
					}
				} else if !strings.Contains(line, w) {
					t.Errorf("node line lacks %q: %s", w, line)
				}
			}
		}
		if lines != len(before) {
			t.Errorf("%d node lines for %d nodes:\n%s", lines, len(before), out)
		}
	}

	out := cli("node-setup", "install")
	perNode(out, "created "+nodesetup.RuncSlowPath, "created "+nodesetup.DelegatePath, "restarted "+rt.Name, "handler "+nodesetup.HandlerName+" listed")
	waitHandler(ctx, t, cs, true)
	if _, err := cs.AppsV1().DaemonSets(deploy.Namespace).Get(ctx, deploy.DaemonSet, metav1.GetOptions{}); err != nil {
		t.Errorf("the install's DaemonSet must stay: %v", err)
	}
	// Idempotent: a second install changes nothing and restarts nothing.
	out = cli("node-setup", "install")
	perNode(out, "nothing changed", "!restarted", "handler "+nodesetup.HandlerName+" listed")
	runCRISuite(t, env, true)

	out = cli("node-setup", "remove")
	perNode(out, "deleted "+nodesetup.RuncSlowPath, "restarted "+rt.Name, "handler "+nodesetup.HandlerName+" not listed")
	waitHandler(ctx, t, cs, false)
	if _, err := cs.CoreV1().Namespaces().Get(ctx, deploy.Namespace, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s must be gone after remove: %v", deploy.Namespace, err)
	}

	after := snapshotNodes(t)
	for node, b := range before {
		if a := after[node]; a != b {
			t.Errorf("node %s: its runtime configuration differs from before the install:\n%s", node, lineDiff(b, a))
		}
	}
}

func clientset(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func buildFaultline(t *testing.T, root string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "faultline")
	build := exec.Command("go", "build", "-o", bin, "./cmd/faultline")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build faultline: %v\n%s", err, out)
	}
	return bin
}

// waitHandler waits until every node's status lists the runtime's handlers
// (the kubelet reports what CRI Status says) with faultline-slow among them
// or not, as want says.
func waitHandler(ctx context.Context, t *testing.T, cs kubernetes.Interface, want bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	var last string
	for {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err == nil {
			ok := len(nodes.Items) > 0
			var seen []string
			for _, n := range nodes.Items {
				names := handlerNames(n)
				seen = append(seen, fmt.Sprintf("%s: %v", n.Name, names))
				if len(names) == 0 || contains(names, nodesetup.HandlerName) != want {
					ok = false
				}
			}
			if ok {
				t.Logf("runtime handlers (want %s: %v): %s", nodesetup.HandlerName, want, strings.Join(seen, "; "))
				return
			}
			last = strings.Join(seen, "; ")
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("the nodes' runtime handlers do not say %s is there: %v within 3m: %s", nodesetup.HandlerName, want, last)
		}
		time.Sleep(2 * time.Second)
	}
}

func handlerNames(n corev1.Node) []string {
	var out []string
	for _, h := range n.Status.RuntimeHandlers {
		out = append(out, h.Name)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// snapshotNodes records each node's runtime configuration and what
// node-setup may touch: for every entry of the directories, its type, mode
// and owner; for every file its SHA-256; and the runtime's config files
// whole, so that a difference shows.
func snapshotNodes(t *testing.T) map[string]string {
	t.Helper()
	dirs := []string{path.Dir(nodesetup.ContainerdConfigPath), path.Dir(nodesetup.CRIOConfigPath), path.Dir(nodesetup.DelegatePath)}
	script := fmt.Sprintf(`set -e
for p in %s %s; do
  if [ -e "$p" ]; then find "$p" -printf '%%y %%m %%U:%%G %%s %%p\n' | sort; else echo "absent $p"; fi
done
for d in %s; do
  [ -e "$d" ] || continue
  find "$d" -type f -exec sha256sum {} + | sort -k2
done
for f in $(find %s %s -type f 2>/dev/null | sort); do
  echo "=== $f"; cat "$f"
done
`, strings.Join(dirs, " "), nodesetup.RuncSlowPath, strings.Join(dirs, " "), dirs[0], dirs[1])
	nodes, err := cluster.NewProvider(cluster.ProviderWithDocker()).ListNodes(clusterName)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, n := range nodes {
		var buf, errBuf bytes.Buffer
		if err := n.Command("sh", "-c", script).SetStdout(&buf).SetStderr(&errBuf).Run(); err != nil {
			t.Fatalf("snapshot node %s: %v\n%s", n.String(), err, errBuf.String())
		}
		out[n.String()] = buf.String()
	}
	if len(out) == 0 {
		t.Fatalf("cluster %s has no nodes", clusterName)
	}
	return out
}

// lineDiff lists the lines only one of a and b has.
func lineDiff(a, b string) string {
	count := map[string]int{}
	for _, l := range strings.Split(a, "\n") {
		count[l]++
	}
	for _, l := range strings.Split(b, "\n") {
		count[l]--
	}
	var out []string
	for _, l := range strings.Split(a, "\n") {
		if count[l] > 0 {
			out = append(out, "- "+l)
			count[l] = 0
		}
	}
	for _, l := range strings.Split(b, "\n") {
		if count[l] < 0 {
			out = append(out, "+ "+l)
			count[l] = 0
		}
	}
	return strings.Join(out, "\n")
}

// runDeveloperLoop runs the README's developer-loop command (the block
// after "a developer drives Ginkgo directly") from the repository root on
// this kept cluster, as a developer would paste it: only its two paths
// into _artifacts/ are this cluster's kubeconfig and fakes image, since the
// test must not write into a checkout's _artifacts/.
func runDeveloperLoop(ctx context.Context, t *testing.T, root, kubeconfig, fakesImage string) {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "a developer drives Ginkgo directly")
	_, block, ok2 := strings.Cut(after, "```sh\n")
	command, _, ok3 := strings.Cut(block, "```")
	const kubeconfigArg, imageArg = `"$PWD/_artifacts/containerd/kubeconfig"`, `"$(cat _artifacts/fakes-image.txt)"`
	if !ok || !ok2 || !ok3 || !strings.Contains(command, kubeconfigArg) || !strings.Contains(command, imageArg) {
		t.Fatalf("the README's developer-loop command is not where this test looks for it (after \"a developer drives Ginkgo directly\", naming %s and %s): update the test with the README", kubeconfigArg, imageArg)
	}
	command = strings.ReplaceAll(command, kubeconfigArg, "'"+kubeconfig+"'")
	command = strings.ReplaceAll(command, imageArg, "'"+fakesImage+"'")
	cmd := exec.CommandContext(ctx, "bash", "-c", command)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	t.Logf("the README's developer loop:\n%s\n%s", command, lastLines(string(out), 6))
	if err != nil || !strings.Contains(string(out), "SUCCESS!") {
		t.Errorf("the README's developer-loop command failed from the repository root: %v", err)
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
