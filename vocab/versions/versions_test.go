package versions

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

func TestDefaultPinsAreComplete(t *testing.T) {
	p := Default()
	if p.Kubernetes() == "" || p.Get("CONTAINERD_VERSION") == "" {
		t.Fatalf("default pins incomplete: %v", p)
	}
	if got, want := StagingVersionOf("v1.36.3"), "v0.36.3"; got != want {
		t.Fatalf("StagingVersionOf = %s, want %s", got, want)
	}
	if got, want := StagingVersionOf("v1.37.0-rc.1"), "v0.37.0-rc.1"; got != want {
		t.Fatalf("StagingVersionOf = %s, want %s", got, want)
	}
}

func TestParseRejectsBadInput(t *testing.T) {
	valid := string(pinned)
	for _, tc := range []struct{ name, text, want string }{
		{"no equals", valid + "\nGARBAGE\n", "want KEY=VALUE"},
		{"duplicate", valid + "\nKIND_VERSION=v0.1.0\n", "set twice"},
		{"missing", strings.Replace(valid, "KIND_VERSION=", "#", 1), "missing pins: KIND_VERSION"},
		{"not a version", strings.Replace(valid, "KIND_VERSION=v", "KIND_VERSION=", 1), "KIND_VERSION"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestGoModFollowsPins keeps faultline's own go.mod on the pinned releases: the
// suites import the e2e framework of one of the Kubernetes releases they test
// (one test binary judges every release: client-side skew Kubernetes
// supports; the report names the framework), the plugin stub of the pinned
// NRI, the kind API of the pinned kind.
func TestGoModFollowsPins(t *testing.T) {
	data, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := Default()
	framework, err := FrameworkRelease(data)
	if err != nil {
		t.Fatal(err)
	}
	if framework != p.Kubernetes() {
		p, err = ForKubernetes(framework)
		if err != nil {
			t.Fatalf("go.mod's k8s.io/kubernetes %s is no pinned release (%v); run hack/update-replaces.sh", framework, err)
		}
	}
	want := map[string]string{
		"sigs.k8s.io/kind":          p.Get("KIND_VERSION"),
		"github.com/containerd/nri": p.Get("NRI_VERSION"),
	}
	for _, r := range f.Require {
		if v, ok := want[r.Mod.Path]; ok {
			if r.Mod.Version != v {
				t.Errorf("go.mod requires %s %s, versions.env pins %s", r.Mod.Path, r.Mod.Version, v)
			}
			delete(want, r.Mod.Path)
		}
	}
	for path := range want {
		t.Errorf("go.mod does not require %s", path)
	}
	for _, r := range f.Replace {
		if strings.HasPrefix(r.Old.Path, "k8s.io/") && r.New.Version != p.StagingVersion() {
			t.Errorf("replace %s => %s %s, want %s (run hack/update-replaces.sh)", r.Old.Path, r.New.Path, r.New.Version, p.StagingVersion())
		}
	}
}

// TestEveryKubernetesRelease: each release file gives complete pins that
// differ from the default only where a release may.
func TestEveryKubernetesRelease(t *testing.T) {
	list := Kubernetes()
	if len(list) < 2 || list[0] != Default().Kubernetes() {
		t.Fatalf("Kubernetes() = %v, want the default first and another", list)
	}
	for _, v := range list {
		p, err := ForKubernetes(v)
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if p.Kubernetes() != v {
			t.Errorf("ForKubernetes(%s) pins Kubernetes %s", v, p.Kubernetes())
		}
		for k, val := range Default() {
			if p[k] != val && !followKubernetes[k] {
				t.Errorf("%s changes %s", v, k)
			}
		}
	}
	if _, err := ForKubernetes("v1.20.0"); err == nil || !strings.Contains(err.Error(), "no pins") {
		t.Errorf("an unknown release: %v", err)
	}
	if _, err := Default().with("v1.99.0", Pins{"KUBERNETES_VERSION": "v1.99.0", "KIND_VERSION": "v0.1.0"}); err == nil {
		t.Error("a release file may not move a shared pin")
	}
	if _, err := Default().with("v1.99.0", Pins{"KUBERNETES_VERSION": "v1.98.0"}); err == nil {
		t.Error("a release file must pin its own release")
	}
}

// Each supported minor has its pins; another served patch of a pinned minor
// takes them with its own release, marked Patched; a minor without pins is
// refused.
func TestPinsPerMinorAndPatch(t *testing.T) {
	got := Kubernetes()
	if len(got) < 3 || got[0] != Default().Kubernetes() {
		t.Fatalf("Kubernetes() = %v: want the default first and a release per supported minor", got)
	}
	minors := map[string]bool{}
	for _, v := range got {
		if minors[Minor(v)] {
			t.Errorf("minor %s pinned twice in %v", Minor(v), got)
		}
		minors[Minor(v)] = true
		p, err := ForKubernetes(v)
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if p.Kubernetes() != v {
			t.Errorf("%s: pins of %s", v, p.Kubernetes())
		}
		if _, patched := p.Patched(); patched {
			t.Errorf("%s is pinned, yet Patched", v)
		}
	}
	pinned := got[1]
	other := "v" + Minor(pinned) + ".0"
	p, err := ForKubernetes(other)
	if err != nil {
		t.Fatal(err)
	}
	if from, patched := p.Patched(); !patched || from != pinned || p.Kubernetes() != other {
		t.Errorf("%s: Kubernetes %s, patched %v from %s; want its own release on %s's pins", other, p.Kubernetes(), patched, from, pinned)
	}
	base, _ := ForKubernetes(pinned)
	for _, k := range []string{"ETCD_IMAGE_TAG", "COREDNS_VERSION", "CRIO_VERSION", "CONTAINERD_VERSION"} {
		if p[k] != base[k] {
			t.Errorf("%s: %s=%s, want the minor's %s", other, k, p[k], base[k])
		}
	}
	for _, bad := range []string{"v1.20.1", "1.36.3", "v1.36", "latest"} {
		if _, err := ForKubernetes(bad); err == nil {
			t.Errorf("%q: pins given", bad)
		}
	}
}
