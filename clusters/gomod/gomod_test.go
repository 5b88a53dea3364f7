package gomod

import (
	"strings"
	"testing"
)

const releaseGoMod = `module k8s.io/kubernetes

go 1.26.0

require (
	github.com/spf13/cobra v1.10.0
	k8s.io/api v0.0.0
	k8s.io/client-go v0.0.0
	k8s.io/klog/v2 v2.130.1
)

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/client-go => ./staging/src/k8s.io/client-go
)
`

func TestStagingReplacesFromRelease(t *testing.T) {
	got, err := StagingReplaces([]byte(releaseGoMod), "v1.36.3", "")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"k8s.io/api => k8s.io/api v0.36.3", "k8s.io/client-go => k8s.io/client-go v0.36.3"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Fatalf("replace %d = %s, want %s", i, got[i], want[i])
		}
	}
}

func TestStagingReplacesIntoLocalCheckout(t *testing.T) {
	got, err := StagingReplaces([]byte(releaseGoMod), "v1.36.3", "/src/kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	if got[0].String() != "k8s.io/api => /src/kubernetes/staging/src/k8s.io/api" {
		t.Fatalf("got %s", got[0])
	}
}

func TestStagingReplacesRejectsOtherModules(t *testing.T) {
	if _, err := StagingReplaces([]byte("module example.com/x\n"), "v1.36.3", ""); err == nil {
		t.Fatal("want an error for a go.mod that is not Kubernetes'")
	}
	if _, err := StagingReplaces([]byte("module k8s.io/kubernetes\nrequire k8s.io/api v0.36.0\n"), "v1.36.3", ""); err == nil {
		t.Fatal("want an error when no staging module is at v0.0.0")
	}
}

func TestModuleGoMod(t *testing.T) {
	pinned, err := Module{Require: "github.com/containerd/containerd/v2", Version: "v2.4.2"}.GoMod("1.26.0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(pinned), "require github.com/containerd/containerd/v2 v2.4.2") {
		t.Fatalf("pinned go.mod:\n%s", pinned)
	}
	local, err := Module{Require: "github.com/containerd/containerd/v2", Source: "/src/containerd"}.GoMod("1.26.0")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"require github.com/containerd/containerd/v2 v2.0.0-00010101000000-000000000000",
		"replace github.com/containerd/containerd/v2 => /src/containerd",
	} {
		if !strings.Contains(string(local), want) {
			t.Fatalf("local go.mod lacks %q:\n%s", want, local)
		}
	}
}

func TestRequiredVersion(t *testing.T) {
	v, err := RequiredVersion("../../go.mod", "k8s.io/kubernetes")
	if err != nil || !strings.HasPrefix(v, "v1.") {
		t.Errorf("RequiredVersion(go.mod, k8s.io/kubernetes) = %q, %v", v, err)
	}
	if _, err := RequiredVersion("../../go.mod", "example.com/none"); err == nil {
		t.Error("no error for a module go.mod does not require")
	}
}

// TestModuleAlsoRequires: a dependency a directory replace stands for is
// required at the release the directory was made from.
func TestModuleAlsoRequires(t *testing.T) {
	m := Module{Require: "github.com/containerd/containerd/v2", Version: "v2.4.2",
		Replaces: []Replace{{Old: "github.com/containerd/nri", New: "/cache/src/nri-v0.12.5-abc"}},
		Also:     map[string]string{"github.com/containerd/nri": "v0.12.5"}}
	data, err := m.GoMod("1.24")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"github.com/containerd/nri v0.12.5", "github.com/containerd/nri => /cache/src/nri-v0.12.5-abc"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("go.mod lacks %q:\n%s", want, data)
		}
	}
}
