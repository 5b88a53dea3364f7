// Package runtimes is the one description of each container runtime faultline
// knows: its names, where it serves the CRI, its process on the node, its kind
// config, and how it departs from the NRI design. The image builder, the cluster
// code and the suites ask here; adding a runtime is one entry below plus its
// config files.
package runtimes

import (
	"fmt"
	"strings"

	"github.com/faultline-k8s/faultline/vocab/versions"
)

// Runtime describes one container runtime.
type Runtime struct {
	// Name is faultline's name for it: flags, artifacts (<artifacts>/<Name>),
	// cluster names (<cluster>-<Name>), node image tags.
	Name string
	// Aliases are other spellings users and nodes use ("cri-o").
	Aliases []string
	// NodeName is how the node reports it: the scheme of the node status'
	// containerRuntimeVersion ("containerd://2.4.2", "cri-o://1.36.2").
	NodeName string
	// CRISocket is the runtime's default CRI endpoint.
	CRISocket string
	// Process is the runtime's process name on the node (restarted by the CRI
	// suite's Disruptive spec).
	Process string
	// KindConfig is the checked-in kind config, under clusters/kindcluster/configs.
	KindConfig string
	// VersionPin is the vocab/versions pin of the runtime's release.
	VersionPin string
	// ReleasesFollowKubernetes: the runtime's minor releases pair with
	// Kubernetes minors (CRI-O 1.36 for Kubernetes 1.36); another pairing is
	// version skew, which a report names (Skew).
	ReleasesFollowKubernetes bool
	// CreateContainerRunsOCICreate: CreateContainer runs the OCI runtime's
	// create, so runc-slow can slow it. containerd runs it only at start; its
	// CreateContainer is slowed through the fake NRI plugin instead.
	CreateContainerRunsOCICreate bool

	// RunConfig is the template (under clusters/kindcluster/configs, rendered
	// with the cluster's settings) of the runtime config that carries a
	// cluster's NRI timeouts.
	RunConfig string
	// RunConfigPath is where the node reads RunConfig: a drop-in the cluster
	// code writes on the host and mounts into every node. Empty: RunConfig is
	// a containerd config patch kind applies itself (kind patches only
	// containerd's config).
	RunConfigPath string
	// Images says how images get into the runtime's store, in the node
	// image and in a running cluster.
	Images ImageLoad

	// The node image (clusters/nodeimage). Its Go build recipe lives there, by
	// Name. The fields below are part of the node image's key: editing one
	// rebuilds the node image's assembly.

	// NodePackages are the Debian packages its node needs beyond every
	// node's base (in this order: the base image's key lists them).
	NodePackages []string
	// NodeFilesDir is the directory of its own node files, under
	// clusters/nodeimage/runtimes, rooted at / like nodefs (a file there
	// replaces nodefs' file of the same path). Empty: nodefs is its own
	// (containerd, nodefs' default runtime).
	NodeFilesDir string
	// NodeLeavesOut are nodefs files (paths relative to nodefs) its node
	// leaves out: they belong to nodefs' default runtime.
	NodeLeavesOut []string
	// NodeUnits are the systemd units its node enables besides the kubelet's.
	NodeUnits []string
	// NodeCommands are faultline's own commands (cmd/<name>) its node carries
	// in /usr/local/bin besides runc-slow, which every node has.
	NodeCommands []string
	// HostBuildPackages are the Debian packages the build host needs to build
	// its node image (cgo libraries), beyond a C compiler.
	HostBuildPackages []string
}

// ImageLoad is how images reach a runtime's store.
type ImageLoad string

const (
	// ImagesThroughKind: containerd's store. The node image has the images
	// preloaded (ctr import at build), and kind loads images into a running
	// cluster.
	ImagesThroughKind ImageLoad = "kind"
	// ImagesThroughSkopeo: containers/storage. The node image ships the images
	// as archives in /kind/images that a unit of its own loads at boot (the
	// build container's overlayfs root cannot hold overlay layers), and skopeo
	// copies images into a running cluster's nodes.
	ImagesThroughSkopeo ImageLoad = "skopeo"
)

// all is every runtime faultline knows, in the order runs take them.
var all = []Runtime{
	{
		Name:                         "containerd",
		NodeName:                     "containerd",
		CRISocket:                    "unix:///run/containerd/containerd.sock",
		Process:                      "containerd",
		KindConfig:                   "containerd.yaml",
		VersionPin:                   "CONTAINERD_VERSION",
		CreateContainerRunsOCICreate: false,
		RunConfig:                    "containerd-run.toml.tmpl",
		Images:                       ImagesThroughKind,
		NodeUnits:                    []string{"containerd.service"},
	},
	{
		Name:                         "crio",
		Aliases:                      []string{"cri-o"},
		NodeName:                     "cri-o",
		CRISocket:                    "unix:///var/run/crio/crio.sock",
		Process:                      "crio",
		KindConfig:                   "crio.yaml",
		VersionPin:                   "CRIO_VERSION",
		ReleasesFollowKubernetes:     true,
		CreateContainerRunsOCICreate: true,
		RunConfig:                    "crio-run.conf.tmpl",
		RunConfigPath:                "/etc/crio/crio.conf.d/20-faultline-run.conf",
		Images:                       ImagesThroughSkopeo,
		// CRI-O runs containers through conmon; skopeo loads its images (and
		// brings containers-common: /etc/containers/policy.json, registries.conf).
		NodePackages:  []string{"conmon", "skopeo"},
		NodeFilesDir:  "crio",
		NodeLeavesOut: []string{"etc/containerd/config.toml.tmpl", "etc/systemd/system/containerd.service"},
		// crio-preload loads the kubeadm images into containers/storage at boot.
		NodeUnits: []string{"crio.service", "crio-preload.service"},
		// CRI-O has no restrict_oom_score_adj and gives privileged containers
		// every capability: its runtime is runc-restrict, in front of runc.
		NodeCommands: []string{"runc-restrict"},
		// CRI-O builds with cgo against libseccomp and gpgme.
		HostBuildPackages: []string{"libseccomp-dev", "libgpgme-dev", "pkg-config"},
	},
}

// Default is the runtime of a run that names none.
const Default = "containerd"

// All returns every known runtime.
func All() []Runtime { return append([]Runtime(nil), all...) }

// Names returns the known runtimes' names.
func Names() []string {
	names := make([]string, len(all))
	for i, r := range all {
		names[i] = r.Name
	}
	return names
}

// Lookup finds a runtime by its name, an alias or its node name, in any case;
// "" is the default runtime.
func Lookup(name string) (Runtime, error) {
	want := strings.ToLower(strings.TrimSpace(name))
	if want == "" {
		want = Default
	}
	for _, r := range all {
		for _, n := range append([]string{r.Name, r.NodeName}, r.Aliases...) {
			if n == want {
				return r, nil
			}
		}
	}
	return Runtime{}, fmt.Errorf("unknown runtime %q (known: %s)", name, strings.Join(Names(), ", "))
}

// MustLookup is Lookup for names written in the code.
func MustLookup(name string) Runtime {
	r, err := Lookup(name)
	if err != nil {
		panic(err)
	}
	return r
}

// FromNode reads a node status' containerRuntimeVersion ("cri-o://1.36.2")
// into the runtime and its version.
func FromNode(containerRuntimeVersion string) (Runtime, string, error) {
	name, version, ok := strings.Cut(containerRuntimeVersion, "://")
	if !ok || strings.TrimSpace(name) == "" {
		return Runtime{}, "", fmt.Errorf("container runtime version %q is not <runtime>://<version>", containerRuntimeVersion)
	}
	r, err := Lookup(name)
	return r, version, err
}

// Parse reads a run's runtime list: names and aliases, comma-separated or
// repeated, "all" for every runtime. Duplicates collapse; order follows All.
func Parse(values ...string) ([]Runtime, error) {
	seen := map[string]bool{}
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				return nil, fmt.Errorf("empty runtime name in %q", v)
			}
			if strings.EqualFold(part, "all") {
				for _, r := range all {
					seen[r.Name] = true
				}
				continue
			}
			r, err := Lookup(part)
			if err != nil {
				return nil, fmt.Errorf("unknown runtime %q (known: %s, or all)", part, strings.Join(Names(), ", "))
			}
			seen[r.Name] = true
		}
	}
	if len(seen) == 0 {
		seen[Default] = true
	}
	var out []Runtime
	for _, r := range all {
		if seen[r.Name] {
			out = append(out, r)
		}
	}
	return out, nil
}

// SocketPath is the CRI socket's file path (the endpoint without unix://).
func (r Runtime) SocketPath() string { return strings.TrimPrefix(r.CRISocket, "unix://") }

func (r Runtime) String() string { return r.Name }

// Skew says how a runtime's release and the kubelet's are out of step, for a
// runtime whose releases follow Kubernetes ("CRI-O 1.36 with Kubernetes
// 1.37"); "" when they match or cannot be read.
func (r Runtime) Skew(runtimeVersion, kubeletVersion string) string {
	if !r.ReleasesFollowKubernetes {
		return ""
	}
	rm, km := versions.Minor(runtimeVersion), versions.Minor(kubeletVersion)
	if rm == "" || km == "" || rm == km {
		return ""
	}
	return fmt.Sprintf("version skew: %s %s with Kubernetes %s", r.Name, rm, km)
}
