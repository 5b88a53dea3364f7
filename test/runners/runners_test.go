// Package runners_test proves that the conformance image runs the way
// vendors run conformance, with the real tools, on a real kind cluster: as
// a Job, as a sonobuoy plugin and under hydrophone, each built from its Go
// module at a pinned version, with every image it needs built here (nothing
// is pulled). Each run takes the smoke specs of every suite, and its
// results must hold faultline's verdicts. It needs what the e2e run needs
// (root, a Docker engine or the means to start one, the node image cached
// or buildable), so it runs only when asked:
//
//	FAULTLINE_RUNNERS_TEST=1 go test ./test/runners -v -timeout 40m   (make test-runners)
package runners_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/faultline-k8s/faultline/clusters/images"
	"github.com/faultline-k8s/faultline/fixtures"
	fversion "github.com/faultline-k8s/faultline/internal/version"
	"github.com/faultline-k8s/faultline/judge/report"
	"github.com/faultline-k8s/faultline/judge/verdicts"
	"github.com/faultline-k8s/faultline/vocab/suitenames"
)

// The tools, pinned: the newest the Go module proxy serves.
const (
	sonobuoyModule   = "github.com/vmware-tanzu/sonobuoy@v0.57.3"
	sonobuoyImage    = "sonobuoy/sonobuoy:v0.57.3" // its default for this version
	hydrophoneModule = "sigs.k8s.io/hydrophone@v0.8.0"
)

const (
	cluster = "faultline-runners"
	// registry names the images loaded into the nodes; nothing is pulled
	// from it (pull policy IfNotPresent).
	registry = "faultline.local"
	// version stamps the faultline binary, and so every image it builds.
	version = "runners-test"
	// smoke is the selection: every suite's smoke spec.
	smoke = "smoke"
	// runWithin bounds one runner's run of the smoke specs, pod start and
	// collection included.
	runWithin = 10 * time.Minute
)

type env struct {
	root, work, faultline, kubeconfig string
	cs                                kubernetes.Interface
}

func TestRunners(t *testing.T) {
	if os.Getenv("FAULTLINE_RUNNERS_TEST") == "" {
		t.Skip("set FAULTLINE_RUNNERS_TEST=1 to run the conformance image as a Job, under sonobuoy and under hydrophone on a kind cluster (make test-runners)")
	}
	e := setUp(t)
	t.Run("job", e.job)
	t.Run("sonobuoy", e.sonobuoy)
	t.Run("hydrophone", e.hydrophone)
}

// setUp builds faultline and the tools, makes the cluster and loads every
// image the runs need into it.
func setUp(t *testing.T) *env {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	e := &env{root: root, work: t.TempDir()}
	e.faultline = filepath.Join(e.work, "faultline")
	step(t, "build faultline", func() error {
		return e.run(context.Background(), nil, "go", "build", "-o", e.faultline,
			"-ldflags", fversion.LinkFlag(version), "./cmd/faultline")
	})
	// The engine: started if none answers, stopped at the end if this test started it.
	if exec.Command("docker", "info").Run() != nil {
		step(t, "start the engine", func() error { return e.run(context.Background(), nil, e.faultline, "engine", "start") })
		t.Cleanup(func() { _ = e.run(context.Background(), nil, e.faultline, "engine", "stop") })
	}
	var nodeImage bytes.Buffer
	step(t, "node image", func() error {
		return e.run(context.Background(), &nodeImage, e.faultline, "build-node-image", "--runtime", "containerd")
	})
	e.kubeconfig = filepath.Join(e.work, "kubeconfig")
	_ = e.run(context.Background(), nil, e.faultline, "delete-cluster", "--name", cluster)
	step(t, "create the cluster", func() error {
		return e.run(context.Background(), nil, e.faultline, "create-cluster", "--name", cluster, "--node-image", strings.TrimSpace(nodeImage.String()), "--kubeconfig", e.kubeconfig)
	})
	t.Cleanup(func() { _ = e.run(context.Background(), nil, e.faultline, "delete-cluster", "--name", cluster) })
	cfg, err := clientcmd.BuildConfigFromFlags("", e.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if e.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	step(t, "faultline's images", func() error {
		return e.run(context.Background(), nil, e.faultline, "images", "load", cluster, "--registry", registry)
	})
	bin := filepath.Join(e.work, "bin")
	step(t, "build sonobuoy and hydrophone", func() error {
		for _, module := range []string{sonobuoyModule, hydrophoneModule} {
			if err := buildTool(module, bin); err != nil {
				return err
			}
		}
		return nil
	})
	// sonobuoy's image: its binary, as its Dockerfile has it, on an empty base.
	step(t, "sonobuoy's image", func() error {
		return e.loadImage(sonobuoyImage, images.Spec{
			Files: map[string]map[string]string{runtime.GOARCH: {"/sonobuoy": filepath.Join(bin, "sonobuoy")}},
			Dirs:  map[string]os.FileMode{"/tmp": os.ModeSticky | 0o777},
		})
	})
	// hydrophone's output container needs sh, sleep and cat: Debian's
	// static busybox stands in for the busybox image it would pull.
	step(t, "busybox image", func() error {
		bb, err := debianBusybox(e.work)
		if err != nil {
			return err
		}
		files := map[string]string{"/bin/sh": bb}
		for _, applet := range []string{"sh", "sleep", "cat"} {
			files["/usr/local/bin/"+applet] = bb
		}
		return e.loadImage(busyboxImage, images.Spec{Files: map[string]map[string]string{runtime.GOARCH: files}})
	})
	return e
}

const busyboxImage = registry + "/busybox:debian"

// job runs the Job manifest (faultline manifests job) and reads the
// verdicts from its pod's log.
func (e *env) job(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), runWithin)
	defer cancel()
	manifest := e.manifest(t, "job")
	objects := decode(t, selectSmoke(t, manifest))
	cfg, _ := clientcmd.BuildConfigFromFlags("", e.kubeconfig)
	applier, err := fixtures.NewApplier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := applier.Create(ctx, objects); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = applier.Delete(context.Background(), objects) })
	ns, name := "faultline-conformance", "faultline-conformance"
	var job *batchv1.Job
	for {
		job, err = e.cs.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if job.Status.Succeeded > 0 || job.Status.Failed > 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the Job did not finish within %s", runWithin)
		case <-time.After(5 * time.Second):
		}
	}
	pods, err := e.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + name})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("the Job's pod: %v (%d pods)", err, len(pods.Items))
	}
	log, err := e.cs.CoreV1().Pods(ns).GetLogs(pods.Items[0].Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the Job's pod log ends:\n%s", tail(string(log), 12))
	if job.Status.Succeeded == 0 {
		t.Fatalf("the Job failed")
	}
	if !strings.Contains(string(log), "faultline: Nothing unexpected: ") {
		t.Errorf("the Job's log lacks faultline's outcome")
	}
	// The runner removed its ClusterRole (FAULTLINE_REMOVE_RBAC), and the
	// garbage collector the binding the role owns by then.
	if !strings.Contains(string(log), "faultline: removed ClusterRole "+name) {
		t.Errorf("the Job's log does not say its ClusterRole was removed")
	}
	for {
		_, rerr := e.cs.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
		_, berr := e.cs.RbacV1().ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(rerr) && apierrors.IsNotFound(berr) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the Job's ClusterRole (%v) or ClusterRoleBinding (%v) is still there after the run", rerr, berr)
		case <-time.After(2 * time.Second):
		}
	}
}

// sonobuoy runs the plugin (faultline manifests sonobuoy-plugin) with
// sonobuoy's own image, retrieves its results and finds faultline's report
// and the JUnit sonobuoy parsed in them.
func (e *env) sonobuoy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), runWithin)
	defer cancel()
	sonobuoy := filepath.Join(e.work, "bin", "sonobuoy")
	plugin := e.manifest(t, "sonobuoy-plugin")
	pluginFile := filepath.Join(e.work, "faultline-plugin.yaml")
	if err := os.WriteFile(pluginFile, selectSmoke(t, plugin), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.run(context.Background(), nil, sonobuoy, "delete", "--kubeconfig", e.kubeconfig, "--wait=5")
	})
	// The aggregator's address as its Service (conformance.Manifests says why).
	config := filepath.Join(e.work, "sonobuoy-config.json")
	if err := os.WriteFile(config, e.manifest(t, "sonobuoy-config"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := e.run(ctx, nil, sonobuoy, "run", "--config", config, "--kubeconfig", e.kubeconfig, "--plugin", pluginFile,
		"--sonobuoy-image", sonobuoyImage, "--image-pull-policy", "IfNotPresent", "--wait=10"); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(e.work, "sonobuoy-results")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	var name bytes.Buffer
	if err := e.run(ctx, &name, sonobuoy, "retrieve", "--kubeconfig", e.kubeconfig, out); err != nil {
		t.Fatal(err)
	}
	tarball := strings.TrimSpace(name.String())
	var results bytes.Buffer
	if err := e.run(ctx, &results, sonobuoy, "results", tarball, "--plugin", "faultline"); err != nil {
		t.Fatal(err)
	}
	t.Logf("sonobuoy results:\n%s", results.String())
	if !strings.Contains(results.String(), "Status: passed") {
		t.Errorf("sonobuoy does not report the plugin passed")
	}
	files := untar(t, tarball)
	const dir = "plugins/faultline/results/global/"
	if _, ok := files[dir+"junit_01.xml"]; !ok {
		t.Errorf("sonobuoy's results lack the JUnit: %v", keys(files))
	}
	reportJSON, ok := files[dir+report.JSONFile]
	if !ok {
		t.Fatalf("sonobuoy's results lack faultline's report: %v", keys(files))
	}
	checkVerdicts(t, "sonobuoy", reportJSON)
	if !strings.Contains(string(files[dir+"e2e.log"]), "faultline's verdicts") {
		t.Errorf("sonobuoy's e2e.log lacks faultline's verdict grid")
	}
}

// hydrophone runs the conformance image its own way (its pod, its service
// account, its output container) and copies e2e.log and junit_01.xml.
func (e *env) hydrophone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), runWithin)
	defer cancel()
	out := filepath.Join(e.work, "hydrophone-results")
	// Progress polling execs sh in the conformance container, which has none.
	err := e.run(ctx, nil, filepath.Join(e.work, "bin", "hydrophone"), "--kubeconfig", e.kubeconfig,
		"--conformance-image", registry+"/faultline-conformance:"+version, "--busybox-image", busyboxImage,
		"--focus", smoke, "--output-dir", out, "--disable-progress-status")
	if err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(filepath.Join(out, "e2e.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("hydrophone's e2e.log ends:\n%s", tail(string(log), 10))
	if !strings.Contains(string(log), "faultline's verdicts") || !strings.Contains(string(log), "Nothing unexpected: ") {
		t.Errorf("hydrophone's e2e.log lacks faultline's verdicts")
	}
	junit, err := os.ReadFile(filepath.Join(out, "junit_01.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(junit), "<testcase "); n == 0 || !strings.Contains(string(junit), "smoke") {
		t.Errorf("hydrophone's junit_01.xml holds %d test cases and no smoke spec", n)
	}
}

// checkVerdicts: the run judged the smoke requirement a pass and found
// nothing unexpected.
func checkVerdicts(t *testing.T, runner string, data []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := report.ReadJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	var grid bytes.Buffer
	report.WriteOutcome(&grid, rep)
	t.Logf("%s: %s", runner, grid.String())
	if !rep.OK() {
		t.Errorf("%s: unexpected verdicts", runner)
	}
	found := false
	for _, v := range rep.Verdicts {
		if v.Requirement == "FAULTLINE-CLUSTER-RUNS-PODS" {
			found = true
			if v.State != verdicts.Pass {
				t.Errorf("%s: FAULTLINE-CLUSTER-RUNS-PODS is %s, want pass", runner, v.State)
			}
		}
	}
	if !found {
		t.Errorf("%s: no verdict on FAULTLINE-CLUSTER-RUNS-PODS", runner)
	}
}

// manifest renders a manifest with the faultline binary: the images it
// names carry that binary's version, as those it loaded.
func (e *env) manifest(t *testing.T, name string) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := e.run(context.Background(), &out, e.faultline, "manifests", name, "--registry", registry); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// selectSmoke narrows a manifest's label filter to the smoke specs.
func selectSmoke(t *testing.T, manifest []byte) []byte {
	t.Helper()
	all := `value: "` + suitenames.NotDisruptive + `"`
	if !bytes.Contains(manifest, []byte(all)) {
		t.Fatalf("the manifest has no label filter %s to narrow", all)
	}
	return bytes.Replace(manifest, []byte(all), []byte(`value: "smoke && `+suitenames.NotDisruptive+`"`), 1)
}

func decode(t *testing.T, manifest []byte) []*unstructured.Unstructured {
	t.Helper()
	var objects []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := d.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objects
			}
			t.Fatal(err)
		}
		if len(obj.Object) > 0 {
			objects = append(objects, obj)
		}
	}
}

// loadImage builds an image of the host's architecture and loads it into
// the cluster's nodes.
func (e *env) loadImage(ref string, spec images.Spec) error {
	img, err := images.Image(spec, runtime.GOARCH)
	if err != nil {
		return err
	}
	archive := filepath.Join(e.work, strings.NewReplacer("/", "_", ":", "_").Replace(ref)+".tar")
	if err := images.SaveDockerArchive(archive, ref, img); err != nil {
		return err
	}
	return e.run(context.Background(), nil, e.faultline, "load-archive", "--name", cluster, archive, ref)
}

// buildTool builds a command from its module at a version into bin,
// through a throwaway module that requires it as a tool: go install
// mod@version asks the proxy for the module's version list, which it does
// not serve for every module.
func buildTool(module, bin string) error {
	path, _, _ := strings.Cut(module, "@")
	dir, err := os.MkdirTemp("", "faultline-tool-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for _, args := range [][]string{
		{"mod", "init", "faultline.local/tools"},
		{"mod", "edit", "-require=" + module, "-tool=" + path},
		{"mod", "tidy"},
		{"build", "-trimpath", "-o", filepath.Join(bin, filepath.Base(path)), path},
	} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go %s (%s): %w\n%s", strings.Join(args, " "), module, err, out)
		}
	}
	return nil
}

// debianBusybox downloads Debian's busybox-static package and unpacks its
// binary.
func debianBusybox(dir string) (string, error) {
	if p := os.Getenv("FAULTLINE_BUSYBOX"); p != "" {
		return p, nil
	}
	download := func() ([]byte, error) {
		get := exec.Command("apt-get", "download", "busybox-static")
		get.Dir = dir
		return get.CombinedOutput()
	}
	if _, err := download(); err != nil {
		// A fresh machine may have no package lists yet.
		if out, err := exec.Command("apt-get", "update", "-qq").CombinedOutput(); err != nil {
			return "", fmt.Errorf("apt-get update: %w\n%s", err, out)
		}
		if out, err := download(); err != nil {
			return "", fmt.Errorf("apt-get download busybox-static: %w\n%s", err, out)
		}
	}
	debs, _ := filepath.Glob(filepath.Join(dir, "busybox-static_*.deb"))
	if len(debs) != 1 {
		return "", fmt.Errorf("apt-get download left %v", debs)
	}
	root := filepath.Join(dir, "busybox-static")
	if out, err := exec.Command("dpkg-deb", "-x", debs[0], root).CombinedOutput(); err != nil {
		return "", fmt.Errorf("dpkg-deb -x: %w\n%s", err, out)
	}
	return filepath.Join(root, "bin", "busybox"), nil
}

// run runs a command in the checkout, its output in the test log (stdout
// into out when given).
func (e *env) run(ctx context.Context, out io.Writer, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = e.root
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if out != nil {
		cmd.Stdout = io.MultiWriter(out, &log)
	}
	err := cmd.Run()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, tail(log.String(), 40))
	}
	return nil
}

func step(t *testing.T, what string, f func() error) {
	t.Helper()
	start := time.Now()
	if err := f(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	t.Logf("%s: %.0f s", what, time.Since(start).Seconds())
}

func untar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(z)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[strings.TrimPrefix(h.Name, "./")] = data
		}
	}
}

func keys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
