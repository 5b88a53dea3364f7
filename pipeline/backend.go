package pipeline

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/faultline-k8s/faultline/clusters/engine"
	"github.com/faultline-k8s/faultline/clusters/fakesimage"
	"github.com/faultline-k8s/faultline/clusters/gomod"
	"github.com/faultline-k8s/faultline/clusters/kindcluster"
	"github.com/faultline-k8s/faultline/clusters/nodeimage"
	"github.com/faultline-k8s/faultline/internal/ginkgorun"
	"github.com/faultline-k8s/faultline/internal/proc"
	"github.com/faultline-k8s/faultline/vocab/facts"
	"github.com/faultline-k8s/faultline/vocab/runtimes"
	"github.com/faultline-k8s/faultline/vocab/versions"
)

// backend is everything a run does to the machine; the pipeline's decisions
// (order, ownership, cleanup) are tested against a fake one.
type backend interface {
	EnsureEngine(ctx context.Context) (engineHandle, error)
	BuildTestBinary(ctx context.Context) error
	EnsureBuildTools(ctx context.Context, rts []runtimes.Runtime) error
	BuildNodeImage(ctx context.Context, st Stack) (string, error)
	BuildFakesImage(ctx context.Context) (string, error)
	ClusterExists(ctx context.Context, name string) (bool, error)
	// ReuseCluster checks an existing cluster's facts against the settings
	// and writes its kubeconfig.
	ReuseCluster(ctx context.Context, s kindcluster.Settings, kubeconfig string) error
	CreateCluster(ctx context.Context, s kindcluster.Settings, kubeconfig string) error
	DeleteCluster(ctx context.Context, name string) error
	LoadImage(ctx context.Context, cluster, image string) error
	// CheckPodTraffic proves pods on different nodes reach each other,
	// with the fakes image.
	CheckPodTraffic(ctx context.Context, cluster, fakesImage string) error
	ExportLogs(ctx context.Context, cluster, dir string) error
	ReadFacts(ctx context.Context, kubeconfig string) (facts.Facts, string, error)
	// RunSuites runs the test binary against a cluster, results into dir.
	// It returns ginkgorun.ErrSpecsFailed when the suites ran and wrote their report
	// but some spec failed: the verdicts judge that.
	// run is the selection and where its results go; the backend adds the
	// binary, the cluster and the fakes image.
	RunSuites(ctx context.Context, label, kubeconfig, fakesImage string, run ginkgorun.Run) error
	// ImageID is a local image's ID ("" when unknown).
	ImageID(ctx context.Context, ref string) string
	// Screenshots says whether the run may start a browser for report.png.
	Screenshots() bool
	// RuntimeNRIVersion is the NRI the runtime's build linked ("" when
	// unknown).
	RuntimeNRIVersion(ctx context.Context, st Stack) string
}

// engineHandle is the engine a run uses.
type engineHandle interface {
	// Started: this run started it and must stop it (or keep it).
	Started() bool
	Stop(ctx context.Context) error
	Keep()
}

// realBackend acts for real.
type realBackend struct {
	opts Options
	bin  string // _output/bin
	// fakes is the fakes image this backend built (its archive is loaded
	// into nodes without an engine's image store).
	fakes fakesimage.Built
	// kubeconfigs are the files this run wrote each cluster's kubeconfig to,
	// by cluster: kind removes a deleted cluster's entry from that file.
	// Stacks create and delete their clusters side by side.
	mu          sync.Mutex
	kubeconfigs map[string]string
}

// wroteKubeconfig records the file a cluster's kubeconfig goes to, before
// kind writes it: a create that fails or is interrupted half-way is deleted
// with it.
func (b *realBackend) wroteKubeconfig(cluster, path string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.kubeconfigs == nil {
		b.kubeconfigs = map[string]string{}
	}
	b.kubeconfigs[cluster] = path
}

// kubeconfig is the file this run wrote a cluster's kubeconfig to; "" for a
// cluster it did not create or reuse (--replace-cluster), whose delete
// then edits no kubeconfig (kindcluster.Delete).
func (b *realBackend) kubeconfig(cluster string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.kubeconfigs[cluster]
}

type realEngine struct{ *engine.Engine }

func (e realEngine) Started() bool { return e.Engine != nil && e.Engine.Started }

func (b *realBackend) EnsureEngine(ctx context.Context) (engineHandle, error) {
	e, err := engine.Ensure(ctx, engine.DefaultOptions(b.opts.RepoRoot, b.opts.Out))
	return realEngine{e}, err
}

// BuildTestBinary links every suite into _output/bin/faultline.test, and
// the ginkgo CLI that runs it in parallel.
func (b *realBackend) BuildTestBinary(ctx context.Context) error {
	args := []string{"test", "-c", "-o", filepath.Join(b.bin, "faultline.test")}
	if v, err := gomod.RequiredVersion(filepath.Join(b.opts.RepoRoot, "go.mod"), "k8s.io/kubernetes"); err == nil {
		args = append(args, "-ldflags", "-X github.com/faultline-k8s/faultline/suites/harness.FrameworkVersion="+v)
	}
	if err := b.runLogged(ctx, "go", append(args, "./suites")...); err != nil {
		return err
	}
	return b.runLogged(ctx, "go", "build", "-o", filepath.Join(b.bin, "ginkgo"), "github.com/onsi/ginkgo/v2/ginkgo")
}

func (b *realBackend) runLogged(ctx context.Context, name string, args ...string) error {
	cmd := proc.Command(ctx, syscall.SIGTERM, 5*time.Second, name, args...)
	cmd.Dir = b.opts.RepoRoot
	out, err := cmd.CombinedOutput()
	if err != nil {
		if cause := context.Cause(ctx); cause != nil {
			return cause
		}
		return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// EnsureBuildTools installs (Debian) what building node images needs:
// debootstrap for the root filesystem, gcc for cgo, and each runtime's
// build libraries.
func (b *realBackend) EnsureBuildTools(ctx context.Context, rts []runtimes.Runtime) error {
	var missing []string
	for cmd, pkg := range map[string]string{"debootstrap": "debootstrap", "gcc": "gcc"} {
		if _, err := exec.LookPath(cmd); err != nil {
			missing = append(missing, pkg)
		}
	}
	for _, rt := range rts {
		for _, pkg := range rt.HostBuildPackages {
			out, _ := exec.CommandContext(ctx, "dpkg-query", "-W", "-f", "${Status}", pkg).Output()
			if !strings.Contains(string(out), "ok installed") {
				missing = append(missing, pkg)
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	fmt.Fprintf(b.opts.Out, "faultline: installing %s\n", strings.Join(missing, " "))
	if err := engine.AptInstall(ctx, b.opts.Out, missing...); err != nil {
		return fmt.Errorf("%w (or pass --node-image)", err)
	}
	return nil
}

func (b *realBackend) BuildNodeImage(ctx context.Context, st Stack) (string, error) {
	builder, err := b.nodeImageBuilder(ctx, st, b.opts.Out)
	if err != nil {
		return "", err
	}
	ref, err := builder.Build(ctx)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil {
			return "", cause
		}
		return "", fmt.Errorf("%w (build logs: %s)", err, filepath.Join(b.opts.CacheDir, "logs"))
	}
	return ref, nil
}

// sources are what a stack's node image builds instead of the pins.
func (b *realBackend) sources(st Stack) nodeimage.Sources {
	src := nodeimage.Sources{Kubernetes: b.opts.KubernetesSrc, NRI: b.opts.NRIVersion, KubernetesPatches: b.opts.KubernetesPatches,
		RuntimePatches: b.opts.RuntimePatches(st.Runtime), NRIPatches: b.opts.NRIPatches}
	if st.Runtime.Name == "containerd" {
		src.Containerd, src.ContainerdVersion = b.opts.ContainerdSrc, b.opts.ContainerdVersion
	}
	return src
}

// nodeImageBuilder builds (or finds) a stack's node image.
func (b *realBackend) nodeImageBuilder(ctx context.Context, st Stack, log io.Writer) (*nodeimage.Builder, error) {
	pins, err := versions.ForKubernetes(st.Kubernetes)
	if err != nil {
		return nil, err
	}
	return nodeimage.NewBuilder(ctx, nodeimage.Options{
		Pins:     pins,
		Sources:  b.sources(st),
		Runtime:  st.Runtime,
		CacheDir: b.opts.CacheDir,
		RepoRoot: b.opts.RepoRoot,
		Log:      log,
	})
}

func (b *realBackend) BuildFakesImage(ctx context.Context) (string, error) {
	built, err := fakesimage.Build(ctx, b.opts.RepoRoot, b.opts.CacheDir, runtime.GOARCH, b.opts.Out)
	if err != nil {
		return "", err
	}
	b.fakes = built
	return built.Ref, nil
}

func (b *realBackend) ClusterExists(ctx context.Context, name string) (bool, error) {
	return kindcluster.Exists(name)
}

func (b *realBackend) ReuseCluster(ctx context.Context, s kindcluster.Settings, kubeconfig string) error {
	b.wroteKubeconfig(s.Name, kubeconfig)
	_, err := kindcluster.Reuse(ctx, s, kubeconfig)
	return err
}

func (b *realBackend) CreateCluster(ctx context.Context, s kindcluster.Settings, kubeconfig string) error {
	b.wroteKubeconfig(s.Name, kubeconfig)
	return kindcluster.Create(ctx, s, kubeconfig, 3*time.Minute)
}

// DeleteCluster deletes a kind cluster and makes sure none of its node
// containers is left: kind's create cannot be cancelled, so a node it was
// still starting may appear after the first delete.
func (b *realBackend) DeleteCluster(ctx context.Context, name string) error {
	for {
		if err := kindcluster.Delete(name, b.kubeconfig(name)); err != nil {
			return err
		}
		out, err := exec.CommandContext(ctx, "docker", "ps", "-aq", "--filter", "label=io.x-k8s.kind.cluster="+name).Output()
		if err != nil {
			return fmt.Errorf("list the nodes of %s: %w", name, err)
		}
		if strings.TrimSpace(string(out)) == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node containers of %s are left: %s", name, strings.Fields(string(out)))
		case <-time.After(time.Second):
		}
	}
}

func (b *realBackend) LoadImage(ctx context.Context, cluster, image string) error {
	if image == b.fakes.Ref {
		return kindcluster.LoadArchive(ctx, cluster, b.fakes.Archive, image)
	}
	return kindcluster.LoadImages(ctx, cluster, image) // --fakes-image: the engine's
}

func (b *realBackend) CheckPodTraffic(ctx context.Context, cluster, fakesImage string) error {
	return kindcluster.CheckPodTraffic(ctx, cluster, fakesImage)
}

func (b *realBackend) ExportLogs(ctx context.Context, cluster, dir string) error {
	return kindcluster.ExportLogs(cluster, dir, b.opts.Out)
}

func (b *realBackend) ReadFacts(ctx context.Context, kubeconfig string) (facts.Facts, string, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return facts.Facts{}, "", fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return facts.Facts{}, "", err
	}
	f, found, err := facts.Read(ctx, cs)
	if err != nil {
		return facts.Facts{}, "", err
	}
	if found {
		return f, facts.Namespace + "/" + facts.Name, nil
	}
	f, err = facts.FromNodes(ctx, cs)
	return f, "the nodes", err
}

// RunSuites runs the test binary with the ginkgo CLI against one cluster.
func (b *realBackend) RunSuites(ctx context.Context, label, kubeconfig, fakesImage string, run ginkgorun.Run) error {
	dir := run.OutputDir
	run.TestBinary, run.Kubeconfig, run.FakesImage = filepath.Join(b.bin, "faultline.test"), kubeconfig, fakesImage
	log, err := os.Create(filepath.Join(dir, "e2e.log"))
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := proc.Command(ctx, syscall.SIGINT, ginkgoGrace, filepath.Join(b.bin, "ginkgo"), run.Args()...)
	cmd.Dir = b.opts.RepoRoot
	prefixed := &linePrefixer{w: b.opts.Out, prefix: "[" + label + "] "}
	cmd.Stdout = io.MultiWriter(log, prefixed)
	cmd.Stderr = cmd.Stdout
	err = cmd.Run()
	prefixed.Flush()
	proc.KillGroup(cmd)
	if cause := context.Cause(ctx); cause != nil {
		return cause
	}
	if err := run.Outcome(err); err != nil {
		return fmt.Errorf("on %s: %w", label, err)
	}
	return nil
}

func (b *realBackend) Screenshots() bool { return true }

func (b *realBackend) RuntimeNRIVersion(ctx context.Context, st Stack) string {
	builder, err := b.nodeImageBuilder(ctx, st, io.Discard)
	if err == nil {
		var v string
		if v, err = builder.RuntimeModuleVersion(ctx, nodeimage.NRIModule); err == nil {
			return v
		}
	}
	fmt.Fprintf(b.opts.Out, "faultline [%s]: the NRI version it links is unknown: %v\n", st.Label, err)
	return ""
}

func (b *realBackend) ImageID(ctx context.Context, ref string) string {
	if ref == b.fakes.Ref {
		return b.fakes.ID
	}
	out, err := exec.CommandContext(ctx, "docker", "image", "inspect", "--format", "{{.Id}}", ref).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// ginkgoRun is the ginkgo run of a share of the options' selection writing
// into dir, its dumps into dumps (the cluster and binary are the backend's).
func (o *Options) ginkgoRun(sh share, dir, dumps string) ginkgorun.Run {
	procs := o.Procs
	if procs == 0 {
		procs = o.Machine.Procs()
	}
	if sh == serialShare {
		// Serial specs run one at a time whatever the processes.
		procs = 1
	}
	return ginkgorun.Run{Procs: procs, OutputDir: dir, DumpDir: dumps, LabelFilter: sh.labelFilter(o.labelFilter()), Focus: o.Focus, ExtraArgs: o.SuiteArgs}
}
