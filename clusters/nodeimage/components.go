package nodeimage

import (
	"fmt"
	"strings"

	"github.com/faultline-k8s/faultline/clusters/versions"
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
	return names
}

// Sources says where local source trees replace pinned modules.
type Sources struct {
	Kubernetes string
	Containerd string
}

// Components returns the Go components a containerd node image needs.
func Components(pins versions.Pins, src Sources) []GoComponent {
	kube := pins.Kubernetes()
	major, minor := kubeMajorMinor(kube)
	return []GoComponent{
		{
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
		},
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
