package nodeimage

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/faultline-k8s/faultline/clusters/versions"
)

// fakeCache holds the outputs a previous build left behind.
type fakeCache map[string]bool

func (c fakeCache) HasDir(path string) bool  { return c[path] }
func (c fakeCache) HasImage(ref string) bool { return c[ref] }

func testBuilder(cache fakeCache, mutate func(*Options)) *Builder {
	opts := Options{Pins: versions.Default(), CacheDir: "/cache", RepoRoot: "../.."}
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
	if !strings.HasPrefix(p.NodeImage(), "faultline/node-containerd:v1.36.3-") {
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
