package nodeimage

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultline-k8s/faultline/internal/cachelock"
	"github.com/faultline-k8s/faultline/vocab/runtimes"
	"github.com/faultline-k8s/faultline/vocab/versions"
)

// fakeCache holds the outputs a previous build left behind.
type fakeCache map[string]bool

func (c fakeCache) HasDir(path string) bool  { return c[path] }
func (c fakeCache) HasImage(ref string) bool { return c[ref] }

// The runtimes the tests build for: the CLI looks them up once, by name.
var containerdRuntime, crioRuntime = runtimes.MustLookup("containerd"), runtimes.MustLookup("crio")

func testBuilder(cache fakeCache, mutate func(*Options)) *Builder {
	opts := Options{Pins: versions.Default(), Runtime: containerdRuntime, CacheDir: "/cache", RepoRoot: "../.."}
	if mutate != nil {
		mutate(&opts)
	}
	return &Builder{Options: opts, cache: cache, goVersion: "go1.26.8"}
}

// everything marks every output of a plan as present.
func everything(p Plan) fakeCache {
	c := fakeCache{}
	for _, s := range p.Steps {
		c[s.Output] = true
	}
	return c
}

func mustPlan(t *testing.T, b *Builder) Plan {
	t.Helper()
	p, err := b.Plan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestColdCacheBuildsEverything(t *testing.T) {
	p := mustPlan(t, testBuilder(fakeCache{}, nil))
	want := []string{"base", "containerd", "etcd", "coredns", "kubernetes", "node"}
	if got := p.ToRun(); !reflect.DeepEqual(got, want) {
		t.Fatalf("ToRun = %v, want %v", got, want)
	}
	if !strings.HasPrefix(p.NodeImage(), "faultline/node-containerd:"+versions.Default().Kubernetes()+"-") {
		t.Fatalf("node image = %s", p.NodeImage())
	}
}

func TestSameVersionsTwiceBuildsNothing(t *testing.T) {
	first := mustPlan(t, testBuilder(fakeCache{}, nil))
	second := mustPlan(t, testBuilder(everything(first), nil))
	if got := second.ToRun(); len(got) != 0 {
		t.Fatalf("second build with the same versions runs %v, want nothing", got)
	}
	if first.NodeImage() != second.NodeImage() {
		t.Fatalf("node image changed: %s then %s", first.NodeImage(), second.NodeImage())
	}
}

func TestChangedPinRebuildsOnlyWhatDependsOnIt(t *testing.T) {
	first := mustPlan(t, testBuilder(fakeCache{}, nil))
	second := mustPlan(t, testBuilder(everything(first), func(o *Options) {
		pins := versions.Pins{}
		for k, v := range o.Pins {
			pins[k] = v
		}
		pins["CONTAINERD_VERSION"] = "v2.4.1"
		o.Pins = pins
	}))
	if got, want := second.ToRun(), []string{"containerd", "node"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after a containerd bump ToRun = %v, want %v", got, want)
	}
	if first.NodeImage() == second.NodeImage() {
		t.Fatal("a containerd bump must change the node image tag")
	}
}

// TestNRIVersionRebuildsOnlyTheRuntime: another NRI for the runtime is a
// replace in its build alone, and a node image of its own.
func TestNRIVersionRebuildsOnlyTheRuntime(t *testing.T) {
	first := mustPlan(t, testBuilder(fakeCache{}, nil))
	second := mustPlan(t, testBuilder(everything(first), func(o *Options) { o.Sources.NRI = "v0.12.5" }))
	if got, want := second.ToRun(), []string{"containerd", "node"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("with --nri-version ToRun = %v, want %v", got, want)
	}
	if first.NodeImage() == second.NodeImage() {
		t.Fatal("another NRI must change the node image tag")
	}
	components, err := RuntimeComponents(containerdRuntime, versions.Default(), Sources{NRI: "v0.12.5"})
	if err != nil {
		t.Fatal(err)
	}
	if r := components[0].Replaces; len(r) != 1 || r[0].String() != NRIModule+" => "+NRIModule+" v0.12.5" {
		t.Errorf("containerd's replaces %v", r)
	}
	if _, err := NewBuilder(context.Background(), Options{Runtime: containerdRuntime, Pins: versions.Default(), CacheDir: t.TempDir(), Sources: Sources{NRI: "latest"}}); err == nil {
		t.Error("--nri-version latest must be refused")
	}
}

// TestKubernetesPatchesAreKeyedByContent: a patch series rebuilds
// Kubernetes and the node, keyed by what the patches say, not their names.
func TestKubernetesPatchesAreKeyedByContent(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	one := write("0001-a.patch", "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")
	renamed := write("0001-renamed.patch", "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")
	other := write("0001-other.patch", "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+c\n")
	first := mustPlan(t, testBuilder(fakeCache{}, nil))
	patched := mustPlan(t, testBuilder(everything(first), func(o *Options) { o.Sources.KubernetesPatches = []string{one} }))
	if got, want := patched.ToRun(), []string{"kubernetes", "node"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("with --kubernetes-patch ToRun = %v, want %v", got, want)
	}
	again := mustPlan(t, testBuilder(everything(patched), func(o *Options) { o.Sources.KubernetesPatches = []string{renamed} }))
	if got := again.ToRun(); len(got) != 0 {
		t.Errorf("the same patch under another name rebuilds %v", got)
	}
	changed := mustPlan(t, testBuilder(everything(patched), func(o *Options) { o.Sources.KubernetesPatches = []string{other} }))
	if got, want := changed.ToRun(), []string{"kubernetes", "node"}; !reflect.DeepEqual(got, want) {
		t.Errorf("another patch: ToRun = %v, want %v", got, want)
	}
	for name, src := range map[string]Sources{
		"not a patch":     {KubernetesPatches: []string{write("notes.txt", "hello\n")}},
		"missing":         {KubernetesPatches: []string{filepath.Join(dir, "absent.patch")}},
		"with a checkout": {KubernetesPatches: []string{one}, Kubernetes: dir},
	} {
		if _, err := NewBuilder(context.Background(), Options{Runtime: containerdRuntime, Pins: versions.Default(), CacheDir: t.TempDir(), Sources: src}); err == nil {
			t.Errorf("%s: NewBuilder accepted it", name)
		}
	}
}

func TestForceRebuildsEverything(t *testing.T) {
	first := mustPlan(t, testBuilder(fakeCache{}, nil))
	forced := mustPlan(t, testBuilder(everything(first), func(o *Options) { o.Force = true }))
	if len(forced.ToRun()) != len(forced.Steps) {
		t.Fatalf("--force runs %v, want every step", forced.ToRun())
	}
}

func TestLocalSourceIsKeyedByItsState(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	src := t.TempDir()
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", src, "-c", "user.email=t@t", "-c", "user.name=t"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(content string) {
		if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("module github.com/containerd/containerd/v2\n")
	git("init", "-q")
	git("add", ".")
	git("commit", "-qm", "init")
	withSource := func(o *Options) { o.Sources.Containerd = src }

	first := mustPlan(t, testBuilder(fakeCache{}, withSource))
	same := mustPlan(t, testBuilder(everything(first), withSource))
	if got := same.ToRun(); len(got) != 0 {
		t.Fatalf("unchanged local tree rebuilds %v", got)
	}
	write("module github.com/containerd/containerd/v2\n\n// edited\n")
	edited := mustPlan(t, testBuilder(everything(first), withSource))
	if got, want := edited.ToRun(), []string{"containerd", "node"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after an uncommitted edit ToRun = %v, want %v", got, want)
	}
}

func TestHostDebianMirror(t *testing.T) {
	for line, want := range map[string]string{
		"deb http://mirror.example/debian bookworm main":                    "http://mirror.example/debian",
		"deb [arch=amd64] http://mirror.example/debian/ bookworm main":      "http://mirror.example/debian",
		"URIs: http://deb.debian.org/debian":                                "http://deb.debian.org/debian",
		"URIs: http://deb.debian.org/debian-security":                       "",
		"deb https://packages.cloud.google.com/apt cloud-sdk-bookworm main": "",
		"# deb http://commented.example/debian bookworm main":               "",
	} {
		if got := debianMirrorFromLine(line); got != want {
			t.Errorf("debianMirrorFromLine(%q) = %q, want %q", line, got, want)
		}
	}
}

func TestNodeFilesRender(t *testing.T) {
	var buf strings.Builder
	err := writeNodeFilesTar(&buf, nodeFileValues{PauseImage: "registry.k8s.io/pause:3.10.2"}, []extraFile{{Path: "kind/version", Mode: 0o644, Content: []byte("v1.36.3")}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"etc/containerd/config.toml", "sandbox = 'registry.k8s.io/pause:3.10.2'", "usr/local/bin/entrypoint", "kind/version"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("node files tar lacks %q", want)
		}
	}
	if strings.Contains(buf.String(), "config.toml.tmpl") || strings.Contains(buf.String(), "{{") {
		t.Error("templates must be rendered, not copied")
	}
}

func withPins(change map[string]string) func(*Options) {
	return func(o *Options) {
		pins := versions.Pins{}
		for k, v := range o.Pins {
			pins[k] = v
		}
		for k, v := range change {
			if v == "" {
				delete(pins, k)
			} else {
				pins[k] = v
			}
		}
		o.Pins = pins
	}
}

func crio(o *Options) { o.Runtime = crioRuntime }

func both(fs ...func(*Options)) func(*Options) {
	return func(o *Options) {
		for _, f := range fs {
			f(o)
		}
	}
}

// The containerd node image is cached: adding the CRI-O variant (its pin, its
// files) must not change its key.
func TestContainerdNodeKeyIgnoresCRIO(t *testing.T) {
	withoutPin := mustPlan(t, testBuilder(fakeCache{}, withPins(map[string]string{"CRIO_VERSION": ""})))
	current := mustPlan(t, testBuilder(fakeCache{}, nil))
	bumped := mustPlan(t, testBuilder(fakeCache{}, withPins(map[string]string{"CRIO_VERSION": "v1.99.0"})))
	for _, p := range []Plan{current, bumped} {
		if !reflect.DeepEqual(p.Steps, withoutPin.Steps) {
			t.Fatalf("containerd plan depends on CRI-O:\n%+v\nwant\n%+v", p.Steps, withoutPin.Steps)
		}
	}
}

func TestCRIOPlan(t *testing.T) {
	containerd := mustPlan(t, testBuilder(fakeCache{}, nil))
	p := mustPlan(t, testBuilder(everything(containerd), crio))
	// etcd, CoreDNS and Kubernetes are shared with the containerd node; the base
	// differs (conmon, skopeo), and CRI-O replaces containerd.
	if got, want := p.ToRun(), []string{"base", "crio", "node"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("crio ToRun with a warm containerd cache = %v, want %v", got, want)
	}
	if !strings.HasPrefix(p.NodeImage(), "faultline/node-crio:"+versions.Default().Kubernetes()+"-") {
		t.Fatalf("node image = %s", p.NodeImage())
	}
	for _, s := range p.Steps {
		if s.Name == "containerd" {
			t.Fatal("a crio node must not build containerd")
		}
	}
	// A CRI-O bump rebuilds CRI-O and the crio node only; a containerd bump nothing.
	bumped := mustPlan(t, testBuilder(everything(p), both(crio, withPins(map[string]string{"CRIO_VERSION": "v1.36.9"}))))
	if got, want := bumped.ToRun(), []string{"crio", "node"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after a CRI-O bump ToRun = %v, want %v", got, want)
	}
	other := mustPlan(t, testBuilder(everything(p), both(crio, withPins(map[string]string{"CONTAINERD_VERSION": "v2.9.9"}))))
	if got := other.ToRun(); len(got) != 0 {
		t.Fatalf("a containerd bump rebuilds %v of the crio node", got)
	}
}

func TestCRIOComponent(t *testing.T) {
	components, err := RuntimeComponents(crioRuntime, versions.Default(), Sources{})
	if err != nil {
		t.Fatal(err)
	}
	c := components[0]
	if c.Name != "crio" || c.Module != "github.com/cri-o/cri-o" || c.Version != versions.Default().Get("CRIO_VERSION") || !c.CGO {
		t.Fatalf("crio component = %+v", c)
	}
	if got, want := c.Binaries(), []string{"crio", "pinns"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("binaries = %v, want %v", got, want)
	}
	var replaces []string
	for _, r := range c.Replaces {
		replaces = append(replaces, r.String())
	}
	for _, want := range []string{"k8s.io/cri-api => k8s.io/cri-api v0.36.0-rc.0", "k8s.io/cri-client => k8s.io/cri-client v0.36.3", "k8s.io/cri-streaming => k8s.io/cri-streaming v0.36.3"} {
		if !strings.Contains(strings.Join(replaces, "\n"), want) {
			t.Errorf("replaces lack %q: %v", want, replaces)
		}
	}
	if _, err := RuntimeComponents(runtimes.Runtime{Name: "rkt"}, versions.Default(), Sources{}); err == nil {
		t.Error("a runtime without a recipe accepted")
	}
}

func TestCRIONodeFilesRender(t *testing.T) {
	var buf strings.Builder
	err := writeRuntimeNodeFilesTar(&buf, crioRuntime, nodeFileValues{PauseImage: "registry.k8s.io/pause:3.10.2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tarText := buf.String()
	for _, want := range []string{
		"etc/crio/crio.conf.d/10-faultline.conf", `pause_image = "registry.k8s.io/pause:3.10.2"`,
		`cgroup_manager = "systemd"`, "enable_nri = true", `nri_listen = "/var/run/nri/nri.sock"`,
		`runtime_path = "/usr/local/bin/runc-restrict"`, "nri_enable_default_validator = true", "runtime-endpoint: unix:///var/run/crio/crio.sock",
		"etc/systemd/system/crio.service", "usr/local/bin/crio-preload", "usr/local/bin/entrypoint",
		`unqualified-search-registries = ["docker.io"]`,
		"etc/cni/net.d/10-faultline.conflist",
	} {
		if !strings.Contains(tarText, want) {
			t.Errorf("crio node files lack %q", want)
		}
	}
	for _, unwanted := range []string{"etc/containerd/config.toml", "etc/systemd/system/containerd.service", "unix:///run/containerd/containerd.sock", "{{"} {
		if strings.Contains(tarText, unwanted) {
			t.Errorf("crio node files contain %q", unwanted)
		}
	}
}

// Every runtime vocab/runtimes knows can be planned: it has a build recipe
// here, and the node files, units and commands its entry names exist. Adding a
// runtime there without its recipe or files fails here.
func TestEveryRuntimeHasARecipe(t *testing.T) {
	images := map[string]string{}
	for _, rt := range runtimes.All() {
		t.Run(rt.Name, func(t *testing.T) {
			components, err := RuntimeComponents(rt, versions.Default(), Sources{})
			if err != nil {
				t.Fatal(err)
			}
			if components[0].Name != rt.Name || len(components[0].Binaries()) == 0 {
				t.Errorf("the runtime's component is %q with %v, want one named %q with binaries", components[0].Name, components[0].Binaries(), rt.Name)
			}
			if _, ok := versions.Default()[rt.VersionPin]; !ok {
				t.Errorf("VersionPin %q is not in versions.env", rt.VersionPin)
			}
			p := mustPlan(t, testBuilder(fakeCache{}, func(o *Options) { o.Runtime = rt }))
			if other, ok := images[p.NodeImage()]; ok {
				t.Errorf("%s and %s plan the same node image %s", rt.Name, other, p.NodeImage())
			}
			images[p.NodeImage()] = rt.Name
			if rt.Images != runtimes.ImagesThroughKind && rt.Images != runtimes.ImagesThroughSkopeo {
				t.Errorf("Images = %q", rt.Images)
			}
			for _, name := range rt.NodeCommands {
				if _, _, err := testBuilder(nil, nil).localCommandKey(name); err != nil {
					t.Error(err)
				}
			}
			var buf strings.Builder
			if err := writeRuntimeNodeFilesTar(&buf, rt, nodeFileValues{PauseImage: "registry.k8s.io/pause:3.10.2"}, nil); err != nil {
				t.Fatal(err)
			}
			files := map[string]bool{}
			tr := tar.NewReader(strings.NewReader(buf.String()))
			for {
				h, err := tr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				files[h.Name] = true
			}
			for _, unit := range append(rt.NodeUnits, "kubelet.service") {
				if !files["etc/systemd/system/"+unit] {
					t.Errorf("unit %s is not in the node's files", unit)
				}
			}
			for _, p := range rt.NodeLeavesOut {
				if _, err := nodeFiles.ReadFile("nodefs/" + p); err != nil {
					t.Errorf("NodeLeavesOut %s: not a nodefs file", p)
				}
			}
			if rt.NodeFilesDir != "" {
				if _, err := fs.Stat(runtimeFiles, "runtimes/"+rt.NodeFilesDir); err != nil {
					t.Errorf("NodeFilesDir: %v", err)
				}
			}
		})
	}
	for name := range runtimeRecipes {
		if _, err := runtimes.Lookup(name); err != nil {
			t.Errorf("recipe %s: %v", name, err)
		}
	}
}

// Editing what a runtime's entry says of its node must give a new node
// image key, or a stale cached image would be used.
func TestNodeEntryKeyFollowsTheEntry(t *testing.T) {
	rt, err := runtimes.Lookup("crio")
	if err != nil {
		t.Fatal(err)
	}
	base := nodeEntryKey(rt)
	for name, edit := range map[string]func(*runtimes.Runtime){
		"units":    func(r *runtimes.Runtime) { r.NodeUnits = append([]string{"extra.service"}, r.NodeUnits...) },
		"leaves":   func(r *runtimes.Runtime) { r.NodeLeavesOut = nil },
		"commands": func(r *runtimes.Runtime) { r.NodeCommands = nil },
		"images":   func(r *runtimes.Runtime) { r.Images = runtimes.ImagesThroughKind },
		"socket":   func(r *runtimes.Runtime) { r.CRISocket = "unix:///run/other.sock" },
	} {
		changed := rt
		edit(&changed)
		if nodeEntryKey(changed) == base {
			t.Errorf("editing the entry's %s leaves the node key unchanged", name)
		}
	}
}

// A node command's key must hash all of faultline's code it links, or a
// change to a package it imports would leave a stale node image cached.
func TestLocalCommandKeysCoverTheirCode(t *testing.T) {
	const module = "github.com/faultline-k8s/faultline/"
	for name, c := range localCommands {
		list := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "./"+c.Dirs[0])
		list.Dir = "../.."
		out, err := list.Output()
		if err != nil {
			t.Fatalf("go list %s: %v", name, err)
		}
		for _, pkg := range strings.Fields(string(out)) {
			dir, ok := strings.CutPrefix(pkg, module)
			if !ok {
				continue
			}
			if !slices.Contains(c.Dirs, dir) {
				t.Errorf("%s links %s, which its node image key (localCommands) does not hash", name, dir)
			}
		}
	}
}

// Build takes the cache lock before it plans: what another run is building
// is not cached yet. A second descriptor's flock stands in for that run.
func TestBuildWaitsForTheCacheLock(t *testing.T) {
	dir := t.TempDir()
	f, err := os.OpenFile(filepath.Join(dir, cachelock.FileName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	// An empty checkout: should the lock not hold, Plan fails before any build starts.
	b := testBuilder(fakeCache{}, func(o *Options) { o.CacheDir, o.Log, o.RepoRoot = dir, &log, t.TempDir() })
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := b.Build(ctx); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "cache lock") {
		t.Fatalf("Build = %v, want it to wait for the cache lock until the deadline", err)
	}
	if strings.Contains(log.String(), "plan") {
		t.Fatalf("planned while another process holds the cache:\n%s", log.String())
	}
}

// The runtime decides the whole node image: a builder without one is refused.
func TestNewBuilderWantsARuntime(t *testing.T) {
	if _, err := NewBuilder(context.Background(), Options{Pins: versions.Default(), CacheDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "no runtime") {
		t.Errorf("err = %v, want no runtime given", err)
	}
}

// --containerd-version builds that containerd release: the component, its
// version stamp and the node image's key follow it; a bad one is refused.
func TestContainerdVersionSwapsThePin(t *testing.T) {
	opts := Options{Pins: versions.Default(), Runtime: containerdRuntime, CacheDir: t.TempDir(), RepoRoot: "../..",
		Sources: Sources{ContainerdVersion: "v2.3.7"}}
	b, err := NewBuilder(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if c := containerdComponent(b.Pins, b.Sources); c.Version != "v2.3.7" || !strings.Contains(strings.Join(c.LDFlags, " "), "Version=v2.3.7") {
		t.Errorf("containerd component %+v", c)
	}
	if versions.Default().Get("CONTAINERD_VERSION") == "v2.3.7" {
		t.Fatal("the default pins changed")
	}
	base := mustPlan(t, testBuilder(fakeCache{}, nil))
	swapped := mustPlan(t, &Builder{Options: b.Options, cache: fakeCache{}, goVersion: "go1.26.8"})
	if base.NodeImage() == swapped.NodeImage() {
		t.Errorf("the node image %s does not change with the containerd release", base.NodeImage())
	}
	for _, bad := range []Sources{{ContainerdVersion: "latest"}, {ContainerdVersion: "v2.3.7", Containerd: "/src/containerd"}} {
		o := opts
		o.Sources = bad
		if _, err := NewBuilder(context.Background(), o); err == nil {
			t.Errorf("%+v: accepted", bad)
		}
	}
}

// TestNodeImageThereNeedsNoBase: the base is only the node image's input;
// an engine that still has the node image but lost its base (removed by
// hand, pruned) does not debootstrap again.
func TestNodeImageThereNeedsNoBase(t *testing.T) {
	first := mustPlan(t, testBuilder(fakeCache{}, nil))
	cache := everything(first)
	delete(cache, first.Steps[0].Output)
	if first.Steps[0].Kind != StepBaseImage {
		t.Fatalf("the plan's first step is %s, want the base", first.Steps[0].Name)
	}
	if got := mustPlan(t, testBuilder(cache, nil)).ToRun(); len(got) != 0 {
		t.Fatalf("with the node image there and its base gone the plan runs %v, want nothing", got)
	}
}
