package nodeimage

import (
	"fmt"
	"sort"
	"strings"

	"github.com/faultline-k8s/faultline/clusters/gomod"
	"github.com/faultline-k8s/faultline/vocab/runtimes"
	"github.com/faultline-k8s/faultline/vocab/versions"
)

// GoComponent is a set of binaries built from one Go module at a pinned version,
// or from a local source tree that stands in for it.
type GoComponent struct {
	Name     string
	Module   string
	Version  string
	Source   string   // local source tree; empty for the pinned module
	Packages []string // import paths of the main packages
	// Names, when set, are the binaries' names, one per package (go build would
	// call etcd's module-root main package "server").
	Names   []string
	CGO     bool
	Tags    []string
	LDFlags []string
	// StagingReplaces: the module is k8s.io/kubernetes and needs its staging
	// modules replaced by their published tags (or the local tree's staging dir).
	StagingReplaces bool
	// Replaces are extra replace directives of the throwaway module, and Env extra
	// environment of its go commands (both part of the key only when set).
	Replaces []gomod.Replace
	Env      []string
	// Patches are applied to the pinned release before it is built
	// (patched.go); their contents join the key.
	Patches []string
	// PatchedDeps are dependencies built from a patched copy of their
	// release (a replace to it); their patches join the key too.
	PatchedDeps []PatchedDep
	// CPrograms are C programs in the module's tree built beside the Go binaries
	// (CRI-O's pinns): binary name => directory of its .c files, relative to the module.
	CPrograms map[string]string
}

// Binaries returns the names of the binaries the component produces.
func (c GoComponent) Binaries() []string {
	if len(c.Names) > 0 {
		return c.Names
	}
	names := make([]string, len(c.Packages))
	for i, p := range c.Packages {
		names[i] = p[strings.LastIndex(p, "/")+1:]
	}
	return append(names, sortedKeys(c.CPrograms)...)
}

// Sources says where local source trees replace pinned modules, and which
// of the runtime's dependencies are swapped for other releases.
type Sources struct {
	Kubernetes string
	Containerd string
	// ContainerdVersion is a containerd release the module proxy serves,
	// built instead of the pinned one (CONTAINERD_VERSION); empty: the pin.
	ContainerdVersion string
	// NRI is a github.com/containerd/nri release the runtime is built with
	// instead of the one its go.mod requires (a replace in its build, so
	// newer or older); empty: its own.
	NRI string
	// KubernetesPatches are patch files (git diff format, relative to a
	// kubernetes checkout, staging included) applied in order to the pinned
	// release before it is built, as vendors carry patches.
	KubernetesPatches []string
	// RuntimePatches are applied the same way to the runtime's release
	// (containerd's or CRI-O's, whichever the node image has), NRIPatches
	// to the github.com/containerd/nri release it is built with (NRI, or
	// the one its go.mod requires).
	RuntimePatches []string
	NRIPatches     []string
}

// PatchedDep is a dependency of a component built from its release with
// patches applied; an empty Version is the one the component requires.
type PatchedDep struct {
	Module, Version string
	Patches         []string
}

// NRIModule is the module Sources.NRI swaps.
const NRIModule = "github.com/containerd/nri"

// runtimeRecipes are the Go build recipes of the runtimes vocab/runtimes
// describes, by name: the component that builds the runtime's binaries (every
// one of them goes into the node's /usr/local/bin). Everything else about a
// runtime's node is in its vocab/runtimes entry, but how to compile it is
// unavoidably here: a runtime added there needs its recipe here too
// (TestEveryRuntimeHasARecipe fails without it).
var runtimeRecipes = map[string]func(versions.Pins, Sources) GoComponent{
	"containerd": containerdComponent,
	"crio":       func(pins versions.Pins, _ Sources) GoComponent { return crioComponent(pins) },
}

// RuntimeComponents returns the Go components a node image of that runtime
// needs: the runtime's own, then etcd, CoreDNS and Kubernetes.
func RuntimeComponents(rt runtimes.Runtime, pins versions.Pins, src Sources) ([]GoComponent, error) {
	recipe, ok := runtimeRecipes[rt.Name]
	if !ok {
		return nil, fmt.Errorf("runtime %s has no build recipe in clusters/nodeimage (runtimeRecipes)", rt.Name)
	}
	own := recipe(pins, src)
	own.Patches = src.RuntimePatches
	switch {
	case len(src.NRIPatches) > 0:
		// The patched copy's replace stands for the release too.
		own.PatchedDeps = append(own.PatchedDeps, PatchedDep{Module: NRIModule, Version: src.NRI, Patches: src.NRIPatches})
	case src.NRI != "":
		own.Replaces = append(own.Replaces, gomod.Replace{Old: NRIModule, New: NRIModule, Version: src.NRI})
	}
	return append([]GoComponent{own}, sharedComponents(pins, src)...), nil
}

// crioComponent builds CRI-O's daemon. CRI-O's go.mod requires k8s.io/cri-api,
// cri-client and cri-streaming at v0.36.0-rc.0; the proxy serves no zips of the
// latter two at that version, and cri-api v0.36.3 changed a type CRI-O uses, hence
// the replaces; the checksum database has no rc.0 entries (GONOSUMDB).
func crioComponent(pins versions.Pins) GoComponent {
	v := pins.Get("CRIO_VERSION")
	return GoComponent{
		Name:     "crio",
		Module:   "github.com/cri-o/cri-o",
		Version:  v,
		Packages: []string{"github.com/cri-o/cri-o/cmd/crio"},
		CGO:      true,
		Tags:     []string{"containers_image_openpgp", "seccomp", "exclude_graphdriver_btrfs", "exclude_graphdriver_devicemapper"},
		Replaces: []gomod.Replace{
			{Old: "k8s.io/cri-api", New: "k8s.io/cri-api", Version: "v0.36.0-rc.0"},
			{Old: "k8s.io/cri-client", New: "k8s.io/cri-client", Version: "v0.36.3"},
			{Old: "k8s.io/cri-streaming", New: "k8s.io/cri-streaming", Version: "v0.36.3"},
		},
		Env: []string{"GONOSUMDB=k8s.io"},
		// CRI-O pins a pod's namespaces with pinns, a small static C program.
		CPrograms: map[string]string{"pinns": "pinns/src"},
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Components returns the Go components a containerd node image needs.
func Components(pins versions.Pins, src Sources) []GoComponent {
	return append([]GoComponent{containerdComponent(pins, src)}, sharedComponents(pins, src)...)
}

// containerdComponent builds containerd, its runc shim and ctr.
func containerdComponent(pins versions.Pins, src Sources) GoComponent {
	return GoComponent{
		Name:    "containerd",
		Module:  "github.com/containerd/containerd/v2",
		Version: pins.Get("CONTAINERD_VERSION"),
		Source:  src.Containerd,
		Packages: []string{
			"github.com/containerd/containerd/v2/cmd/containerd",
			"github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2",
			"github.com/containerd/containerd/v2/cmd/ctr",
		},
		CGO:  true,
		Tags: []string{"no_btrfs", "no_devmapper", "no_zfs", "no_aufs"},
		LDFlags: []string{
			"-X github.com/containerd/containerd/v2/version.Version=" + pins.Get("CONTAINERD_VERSION"),
		},
	}
}

// sharedComponents are what every node has, whatever its runtime: etcd,
// CoreDNS and Kubernetes.
func sharedComponents(pins versions.Pins, src Sources) []GoComponent {
	kube := pins.Kubernetes()
	major, minor := kubeMajorMinor(kube)
	return []GoComponent{
		{
			Name:     "etcd",
			Module:   "go.etcd.io/etcd/server/v3",
			Version:  pins.Get("ETCD_VERSION"),
			Packages: []string{"go.etcd.io/etcd/server/v3"},
			Names:    []string{"etcd"},
		},
		{
			Name:     "coredns",
			Module:   "github.com/coredns/coredns",
			Version:  pins.Get("COREDNS_VERSION"),
			Packages: []string{"github.com/coredns/coredns"},
		},
		{
			Name:    "kubernetes",
			Module:  "k8s.io/kubernetes",
			Version: kube,
			Source:  src.Kubernetes,
			Patches: src.KubernetesPatches,
			Packages: []string{
				"k8s.io/kubernetes/cmd/kubelet", "k8s.io/kubernetes/cmd/kubeadm", "k8s.io/kubernetes/cmd/kubectl",
				"k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes/cmd/kube-controller-manager",
				"k8s.io/kubernetes/cmd/kube-scheduler", "k8s.io/kubernetes/cmd/kube-proxy",
			},
			LDFlags: []string{
				// Without these the binaries report v0.0.0, and kubeadm refuses to work.
				"-X k8s.io/component-base/version.gitVersion=" + kube,
				"-X k8s.io/component-base/version.gitMajor=" + major,
				"-X k8s.io/component-base/version.gitMinor=" + minor,
				"-X k8s.io/component-base/version.gitTreeState=clean",
			},
			StagingReplaces: true,
		},
	}
}

func kubeMajorMinor(v string) (string, string) {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return "1", "0"
	}
	return parts[0], parts[1]
}

// ControlPlaneImage is an image kubeadm pulls, made locally from one binary.
type ControlPlaneImage struct {
	Ref        string   // exactly as kubeadm names it
	Binary     string   // binary copied into /usr/local/bin
	Component  string   // GoComponent (or "pause") that builds it
	OnBase     bool     // needs the Debian base (kube-proxy needs iptables)
	Entrypoint []string // image entrypoint, if the manifest does not name a command
}

// ControlPlaneImages lists the images kubeadm expects at the pinned release.
func ControlPlaneImages(pins versions.Pins) []ControlPlaneImage {
	kube := pins.Kubernetes()
	img := func(name, tag string) string { return fmt.Sprintf("registry.k8s.io/%s:%s", name, tag) }
	return []ControlPlaneImage{
		{Ref: img("kube-apiserver", kube), Binary: "kube-apiserver", Component: "kubernetes"},
		{Ref: img("kube-controller-manager", kube), Binary: "kube-controller-manager", Component: "kubernetes"},
		{Ref: img("kube-scheduler", kube), Binary: "kube-scheduler", Component: "kubernetes"},
		{Ref: img("kube-proxy", kube), Binary: "kube-proxy", Component: "kubernetes", OnBase: true},
		{Ref: img("etcd", pins.Get("ETCD_IMAGE_TAG")), Binary: "etcd", Component: "etcd"},
		{Ref: img("coredns/coredns", pins.Get("COREDNS_IMAGE_TAG")), Binary: "coredns", Component: "coredns", Entrypoint: []string{"/usr/local/bin/coredns"}},
		{Ref: PauseImage(pins), Binary: "pause", Component: "pause", Entrypoint: []string{"/usr/local/bin/pause"}},
	}
}

// PauseImage is the sandbox image kubeadm and the runtime must agree on.
func PauseImage(pins versions.Pins) string {
	return "registry.k8s.io/pause:" + pins.Get("PAUSE_IMAGE_TAG")
}
