package nodeimage

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/faultline-k8s/faultline/clusters/gomod"
	"github.com/faultline-k8s/faultline/vocab/versions"
)

func writePatch(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRuntimeAndNRIPatchesRebuildOnlyTheRuntime: a runtime's patch series
// and an NRI one each rebuild the runtime and the node, keyed by content,
// and leave Kubernetes, etcd and CoreDNS cached; the NRI one stands for
// --nri-version's replace too.
func TestRuntimeAndNRIPatchesRebuildOnlyTheRuntime(t *testing.T) {
	one := writePatch(t, "0001-a.patch", "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")
	other := writePatch(t, "0001-b.patch", "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+c\n")
	for _, rt := range []func(*Options){nil, crio} {
		first := mustPlan(t, testBuilder(fakeCache{}, rt))
		name := first.Steps[1].Name // the runtime's component follows the base
		for what, src := range map[string]Sources{
			"runtime patch":     {RuntimePatches: []string{one}},
			"NRI patch":         {NRIPatches: []string{one}},
			"NRI release+patch": {NRI: "v0.12.5", NRIPatches: []string{one}},
		} {
			patched := mustPlan(t, testBuilder(everything(first), func(o *Options) {
				if rt != nil {
					rt(o)
				}
				o.Sources = src
			}))
			if got, want := patched.ToRun(), []string{name, "node"}; !reflect.DeepEqual(got, want) {
				t.Errorf("%s, %s: ToRun = %v, want %v", name, what, got, want)
				continue
			}
			changed := mustPlan(t, testBuilder(everything(patched), func(o *Options) {
				if rt != nil {
					rt(o)
				}
				o.Sources = src
				if len(o.Sources.RuntimePatches) > 0 {
					o.Sources.RuntimePatches = []string{other}
				} else {
					o.Sources.NRIPatches = []string{other}
				}
			}))
			if got, want := changed.ToRun(), []string{name, "node"}; !reflect.DeepEqual(got, want) {
				t.Errorf("%s, another %s: ToRun = %v, want %v", name, what, got, want)
			}
		}
	}
	components, err := RuntimeComponents(containerdRuntime, versions.Default(), Sources{NRI: "v0.12.5", NRIPatches: []string{one}, RuntimePatches: []string{other}})
	if err != nil {
		t.Fatal(err)
	}
	own := components[0]
	if len(own.Replaces) != 0 || !reflect.DeepEqual(own.PatchedDeps, []PatchedDep{{Module: NRIModule, Version: "v0.12.5", Patches: []string{one}}}) ||
		!reflect.DeepEqual(own.Patches, []string{other}) {
		t.Errorf("containerd's replaces %v, patched deps %v, patches %v", own.Replaces, own.PatchedDeps, own.Patches)
	}
	for _, c := range components[1:] {
		if len(c.Patches) > 0 || len(c.PatchedDeps) > 0 {
			t.Errorf("%s must not take the runtime's patches", c.Name)
		}
	}
	notAPatch := writePatch(t, "notes.txt", "hello\n")
	for name, src := range map[string]Sources{
		"runtime: not a patch":     {RuntimePatches: []string{notAPatch}},
		"NRI: missing":             {NRIPatches: []string{filepath.Join(t.TempDir(), "absent.patch")}},
		"containerd with checkout": {RuntimePatches: []string{one}, Containerd: t.TempDir()},
	} {
		if _, err := NewBuilder(context.Background(), Options{Runtime: containerdRuntime, Pins: versions.Default(), CacheDir: t.TempDir(), Sources: src}); err == nil {
			t.Errorf("%s: NewBuilder accepted it", name)
		}
	}
}

// TestPatchedDependencyTree: an NRI patch is applied to a copy of the
// release the runtime requires (from the module cache), and the build
// replaces the module by that copy; a patch that does not apply says so.
func TestPatchedDependencyTree(t *testing.T) {
	const version = "v0.11.0"
	if _, err := gomod.Download(context.Background(), NRIModule, version); err != nil {
		t.Skipf("%s@%s not in the module cache or proxy: %v", NRIModule, version, err)
	}
	patch := writePatch(t, "0001-mark.patch", "text before the diff is ignored\n"+
		"diff --git a/faultline-mark.txt b/faultline-mark.txt\nnew file mode 100644\n--- /dev/null\n+++ b/faultline-mark.txt\n@@ -0,0 +1 @@\n+patched\n")
	var log bytes.Buffer
	b := &Builder{Options: Options{CacheDir: t.TempDir(), Log: &log}}
	r, err := b.patchedDep(context.Background(), GoComponent{Name: "runtime", Source: fakeRuntimeTree(t, version)}, PatchedDep{Module: NRIModule, Patches: []string{patch}})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if r.Old != NRIModule || r.Version != "" || !strings.Contains(r.New, "nri-"+version+"-") {
		t.Errorf("replace %v, want %s => a patched tree of %s", r, NRIModule, version)
	}
	if data, err := os.ReadFile(filepath.Join(r.New, "faultline-mark.txt")); err != nil || string(data) != "patched\n" {
		t.Errorf("the patch's file in the tree: %q, %v", data, err)
	}
	if _, err := os.Stat(filepath.Join(r.New, "go.mod")); err != nil {
		t.Errorf("the tree is no module: %v", err)
	}
	bad := writePatch(t, "0001-bad.patch", "diff --git a/go.mod b/go.mod\n--- a/go.mod\n+++ b/go.mod\n@@ -1 +1 @@\n-module example.com/not-nri\n+module example.com/x\n")
	_, err = b.patchedDep(context.Background(), GoComponent{Name: "runtime", Source: fakeRuntimeTree(t, version)}, PatchedDep{Module: NRIModule, Patches: []string{bad}})
	if err == nil || !strings.Contains(err.Error(), "does not apply to "+NRIModule+" "+version) {
		t.Errorf("a patch that does not apply: %v", err)
	}
}

// fakeRuntimeTree is a module that requires NRI at version, standing in
// for a runtime's checkout.
func fakeRuntimeTree(t *testing.T, version string) string {
	t.Helper()
	dir := t.TempDir()
	goMod := "module example.com/runtime\n\ngo 1.24\n\nrequire " + NRIModule + " " + version + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(goMod), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestLinkedVersionOfAPatchedRelease: a dependency replaced by a release
// links that release; one replaced by a directory (--nri-patch's tree)
// links the release the tree was made from, not "(devel)".
func TestLinkedVersionOfAPatchedRelease(t *testing.T) {
	for _, tc := range []struct {
		d    debug.Module
		want string
	}{
		{debug.Module{Path: NRIModule, Version: "v0.12.3"}, "v0.12.3"},
		{debug.Module{Path: NRIModule, Version: "v0.12.3", Replace: &debug.Module{Path: NRIModule, Version: "v0.12.5"}}, "v0.12.5"},
		{debug.Module{Path: NRIModule, Version: "v0.12.3", Replace: &debug.Module{Path: "/cache/src/nri-v0.12.3-abc", Version: "(devel)"}}, "v0.12.3"},
	} {
		if got := linkedVersion(&tc.d); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.d, got, tc.want)
		}
	}
}
