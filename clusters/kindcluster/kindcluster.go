// Package kindcluster creates, reuses and deletes the kind clusters faultline
// runs on, through kind's Go API, from the checked-in config of a runtime
// (vocab/runtimes) plus the settings of one run, and records each cluster's
// facts (vocab/facts) in it.
package kindcluster

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"golang.org/x/mod/semver"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/kind/pkg/cluster/nodes"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"
	"sigs.k8s.io/kind/pkg/cmd"
	kindexec "sigs.k8s.io/kind/pkg/exec"
	"sigs.k8s.io/yaml"

	"github.com/faultline-k8s/faultline/vocab/facts"
	"github.com/faultline-k8s/faultline/vocab/runtimes"
	"github.com/faultline-k8s/faultline/vocab/versions"
)

// configs are the checked-in kind configs and run-config templates of the
// runtimes vocab/runtimes describes (KindConfig, RunConfig).
//
//go:embed configs
var configs embed.FS

// MaxWorkers is the most worker nodes a cluster may have beside its control
// plane.
const MaxWorkers = 10

// MinTimeout is the shortest runtime request and NRI timeout a cluster is
// made with. Below a second every CRI call of the kubelet, or every plugin
// call of the runtime, is cut short before a loaded node can answer, so the
// cluster fails late (after kind's minutes of waiting) or the suites judge
// a node that cannot work; a sub-second value is nearly always a missing
// unit (3ns for 3s).
const MinTimeout = time.Second

// CheckTimeout refuses a timeout no node can work with; 0 is the default.
func CheckTimeout(d time.Duration) error {
	switch {
	case d < 0:
		return fmt.Errorf("%s: want a positive duration (or 0 for the default)", d)
	case d > 0 && d < MinTimeout:
		return fmt.Errorf("%s: want at least %s (or 0 for the default)", d, MinTimeout)
	}
	return nil
}

// kind (v0.33, pkg/internal/apis/config) takes cluster names matching
// ^[a-z0-9.-]+$ and names the nodes <cluster>-control-plane,
// <cluster>-worker, <cluster>-worker2, ...: their container and host names,
// so their Kubernetes node names, which must be DNS labels (RFC 1123, at most
// 63 characters). A cluster name is kind's rule narrowed to what keeps every
// node name a DNS label: no '.', a letter or digit at both ends, and room
// for the longest node suffix.
var nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// MaxNameLength is the longest cluster name whose node names are DNS labels
// (faultline's kind configs have one control plane, and at most MaxWorkers
// workers).
var MaxNameLength = 63 - max(len("-control-plane"), len("-worker"+strconv.Itoa(MaxWorkers)))

// ValidateName checks a cluster name before anything uses it. An empty name
// is kind's default cluster ("kind"), which faultline did not make, and the
// name is a directory under faultline's state (stateDir).
func ValidateName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("empty cluster name (kind would take it for its default cluster %q)", cluster.DefaultName)
	case !nameRE.MatchString(name):
		return fmt.Errorf("cluster name %q: want lower-case letters, digits and '-', beginning and ending with a letter or digit", name)
	case len(name) > MaxNameLength:
		return fmt.Errorf("cluster name %q has %d characters: at most %d, so that its node names (<name>-control-plane) stay DNS labels of at most 63", name, len(name), MaxNameLength)
	}
	return nil
}

// Settings are what one run chooses on top of the checked-in config.
type Settings struct {
	Name string
	// Runtime is the nodes' runtime (required: the node image decides it,
	// so there is no default to fall back on).
	Runtime   runtimes.Runtime
	NodeImage string
	// RuntimeRequestTimeout is the kubelet's runtimeRequestTimeout: how long it
	// waits for a CRI call (RunPodSandbox gets twice that). 0 means
	// facts.DefaultRuntimeRequestTimeout, the default the suites assume too.
	RuntimeRequestTimeout time.Duration
	// NRIRequestTimeout and NRIRegistrationTimeout are the runtime's NRI plugin
	// timeouts, always written into the node's runtime config. 0 means
	// facts.DefaultNRIRequestTimeout and facts.DefaultNRIRegistrationTimeout.
	NRIRequestTimeout      time.Duration
	NRIRegistrationTimeout time.Duration
	// KubeletSyncFrequency is the kubelet's syncFrequency. 0 means
	// facts.DefaultKubeletSyncFrequency.
	KubeletSyncFrequency time.Duration
	// Workers is the number of worker nodes beside the control plane (0: a
	// one-node cluster). Pods reach each other across nodes through the node
	// image's faultline-podnet (routes from the nodes' podCIDRs).
	Workers int
	// FeatureGates are set on every Kubernetes component (kind's
	// featureGates), over the runtime's kind config: a vendor's gates, or a
	// patched release's own (--kubernetes-patch).
	FeatureGates map[string]bool
	// KubernetesVersion is the node image's release ("v1.35.8"), when known:
	// the kind config's own gates that an older release refuses are left
	// out for it (configGatesSince).
	KubernetesVersion string
	// NRIVersion is the containerd/nri release the node image's runtime was
	// built with, when known: recorded in the facts, for the specs that
	// depend on it.
	NRIVersion string
	// Variant names what the node image changed on the pinned releases
	// (vocab/facts Facts.Variant).
	Variant string
	// FakeModes are the misbehaviours the suites run the fakes with
	// (vocab/facts Facts.FakeModes); a kept cluster is reused only for the
	// same ones.
	FakeModes []string
	// CgroupV1 hosts need failCgroupV1: false, or Kubernetes 1.35+ kubelets refuse to start.
	CgroupV1 bool
	// Retain keeps the nodes of a failed create, to look inside them.
	Retain bool
}

// Resolve checks the settings and fills every unset timeout with its
// default from vocab/facts.
func (s Settings) Resolve() (Settings, error) {
	if s.Runtime.Name == "" {
		return s, fmt.Errorf("cluster %q: no runtime given", s.Name)
	}
	if s.Workers < 0 || s.Workers > MaxWorkers {
		return s, fmt.Errorf("workers %d: want 0 to %d", s.Workers, MaxWorkers)
	}
	for _, t := range []struct {
		name string
		d    time.Duration
	}{
		{"runtime request timeout", s.RuntimeRequestTimeout},
		{"NRI request timeout", s.NRIRequestTimeout},
		{"NRI registration timeout", s.NRIRegistrationTimeout},
		{"kubelet sync frequency", s.KubeletSyncFrequency},
	} {
		if err := CheckTimeout(t.d); err != nil {
			return s, fmt.Errorf("%s %w", t.name, err)
		}
	}
	f := s.FactSettings()
	s.RuntimeRequestTimeout, s.NRIRequestTimeout, s.NRIRegistrationTimeout = f.RuntimeRequestTimeout, f.NRIRequestTimeout, f.NRIRegistrationTimeout
	s.KubeletSyncFrequency = f.KubeletSyncFrequency
	return s, nil
}

// FactSettings are the facts (vocab/facts) a cluster of these settings
// has: what Create records and Reuse checks. The facts name the runtime as
// text: they are stored in the cluster.
func (s Settings) FactSettings() facts.Settings {
	return facts.Settings{
		Runtime: s.Runtime.Name, NodeImage: s.NodeImage, RuntimeRequestTimeout: s.RuntimeRequestTimeout,
		NRIRequestTimeout: s.NRIRequestTimeout, NRIRegistrationTimeout: s.NRIRegistrationTimeout,
		KubeletSyncFrequency: s.KubeletSyncFrequency, FeatureGates: s.FeatureGates,
	}.WithDefaults()
}

// Config renders the kind cluster config for these settings: the runtime's
// checked-in config (vocab/runtimes KindConfig), the kubelet's settings,
// and the runtime's run config with the NRI timeouts.
func Config(s Settings) (*v1alpha4.Cluster, error) {
	s, err := s.Resolve()
	if err != nil {
		return nil, err
	}
	rt := s.Runtime
	raw, err := configs.ReadFile(path.Join("configs", rt.KindConfig))
	if err != nil {
		return nil, fmt.Errorf("runtime %s: its kind config: %w", rt.Name, err)
	}
	cfg := &v1alpha4.Cluster{}
	if err := yaml.UnmarshalStrict(raw, cfg); err != nil {
		return nil, fmt.Errorf("checked-in kind config %s: %w", rt.KindConfig, err)
	}
	for i := 0; i < s.Workers; i++ {
		cfg.Nodes = append(cfg.Nodes, v1alpha4.Node{Role: v1alpha4.WorkerRole})
	}
	dropGatesBefore(cfg.FeatureGates, s.KubernetesVersion)
	if len(s.FeatureGates) > 0 && cfg.FeatureGates == nil {
		cfg.FeatureGates = map[string]bool{}
	}
	maps.Copy(cfg.FeatureGates, s.FeatureGates)
	cfg.KubeadmConfigPatches = append(cfg.KubeadmConfigPatches, kubeletPatch(s))
	run, err := runConfig(s)
	if err != nil {
		return nil, err
	}
	if rt.RunConfigPath == "" {
		// kind merges it into /etc/containerd/config.toml.
		cfg.ContainerdConfigPatches = append(cfg.ContainerdConfigPatches, run)
	} else {
		// kind patches containerd's config only: the node reads its run settings
		// from a drop-in mounted from the host (written by Create).
		hostPath, err := runConfigPath(s.Name, rt)
		if err != nil {
			return nil, err
		}
		for i := range cfg.Nodes {
			cfg.Nodes[i].ExtraMounts = append(cfg.Nodes[i].ExtraMounts, v1alpha4.Mount{
				HostPath: hostPath, ContainerPath: rt.RunConfigPath, Readonly: true,
			})
		}
	}
	for i := range cfg.Nodes {
		cfg.Nodes[i].Image = s.NodeImage
	}
	v1alpha4.SetDefaultsCluster(cfg)
	return cfg, nil
}

// kubeletPatch sets the kubelet's run settings (s resolved).
func kubeletPatch(s Settings) string {
	lines := []string{"kind: KubeletConfiguration"}
	if s.CgroupV1 {
		lines = append(lines, "failCgroupV1: false")
	}
	lines = append(lines, fmt.Sprintf("runtimeRequestTimeout: %s", s.RuntimeRequestTimeout),
		fmt.Sprintf("syncFrequency: %s", s.KubeletSyncFrequency))
	return strings.Join(lines, "\n") + "\n"
}

// runConfig renders the runtime's run config (s resolved).
func runConfig(s Settings) (string, error) {
	rt := s.Runtime
	raw, err := configs.ReadFile(path.Join("configs", rt.RunConfig))
	if err != nil {
		return "", fmt.Errorf("runtime %s: its run config: %w", rt.Name, err)
	}
	tmpl, err := template.New(rt.RunConfig).Option("missingkey=error").Parse(string(raw))
	if err != nil {
		return "", fmt.Errorf("run config %s: %w", rt.RunConfig, err)
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, s); err != nil {
		return "", fmt.Errorf("run config %s: %w", rt.RunConfig, err)
	}
	return out.String(), nil
}

// stateRoot holds the state of every cluster faultline made: in the user's
// own cache, never in a shared temporary directory, where another user
// could put a link at its place for Delete to follow.
func stateRoot() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no place for the clusters' state (set HOME or XDG_CACHE_HOME): %w", err)
	}
	return filepath.Join(dir, "faultline", "clusters"), nil
}

// stateDir is where the host keeps what a cluster's nodes mount from it; it
// must live as long as the cluster. Delete removes it, so besides
// ValidateName it proves the name is one path element below stateRoot:
// neither stateRoot itself (".") nor anything outside it.
func stateDir(cluster string) (string, error) {
	if err := ValidateName(cluster); err != nil {
		return "", err
	}
	root, err := stateRoot()
	if err != nil {
		return "", err
	}
	if !filepath.IsLocal(cluster) || cluster == "." || filepath.Base(cluster) != cluster {
		return "", fmt.Errorf("cluster name %q is not a directory name inside %s", cluster, root)
	}
	return filepath.Join(root, cluster), nil
}

// runConfigPath is the host file of a cluster's run config drop-in.
func runConfigPath(cluster string, rt runtimes.Runtime) (string, error) {
	dir, err := stateDir(cluster)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, rt.Name+"-run.conf"), nil
}

// deleteKubeconfig is the kubeconfig kind removes a deleted cluster's entry
// from: the file faultline wrote it to (given), else one in the cluster's
// state directory. kind reads an empty path as the user's own kubeconfig
// ($KUBECONFIG, else ~/.kube/config: pkg/cluster/internal/kubeconfig), which
// faultline never wrote; a file that does not exist it leaves alone.
func deleteKubeconfig(stateDir, given string) string {
	if given != "" {
		return given
	}
	return filepath.Join(stateDir, "kubeconfig")
}

// HostIsCgroupV1 reports whether this host mounts cgroup v1 (no unified hierarchy at the root).
func HostIsCgroupV1() bool {
	_, err := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	return err != nil
}

func provider() *cluster.Provider {
	return cluster.NewProvider(cluster.ProviderWithDocker(), cluster.ProviderWithLogger(cmd.NewLogger()))
}

// Create creates the cluster, writes its kubeconfig to kubeconfigPath, waits
// (up to wait from the start) for its nodes and system pods to be Ready, and
// records its facts (vocab/facts) in it.
func Create(ctx context.Context, s Settings, kubeconfigPath string, wait time.Duration) error {
	s, err := s.Resolve()
	if err != nil {
		return err
	}
	if err := ValidateName(s.Name); err != nil {
		return err
	}
	if kubeconfigPath == "" {
		// kind would merge the cluster into the user's default kubeconfig.
		return fmt.Errorf("cluster %q: no kubeconfig path to write its kubeconfig to", s.Name)
	}
	cfg, err := Config(s)
	if err != nil {
		return err
	}
	if s.Runtime.RunConfigPath != "" {
		content, err := runConfig(s)
		if err != nil {
			return err
		}
		path, err := runConfigPath(s.Name, s.Runtime)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(wait)
	done := make(chan error, 1)
	go func() {
		done <- provider().Create(s.Name,
			cluster.CreateWithV1Alpha4Config(cfg),
			cluster.CreateWithKubeconfigPath(kubeconfigPath),
			cluster.CreateWithWaitForReady(wait),
			cluster.CreateWithRetain(s.Retain),
			cluster.CreateWithDisplayUsage(false),
			cluster.CreateWithDisplaySalutation(false))
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("kind could not create cluster %q: %w%s", s.Name, err, commandOutput(err))
		}
	case <-ctx.Done():
		// kind's API cannot be cancelled; remove what it made so far.
		_ = Delete(s.Name, kubeconfigPath)
		return ctx.Err()
	}
	cs, err := clientset(s.Name)
	if err != nil {
		return fmt.Errorf("cluster %q: %w", s.Name, err)
	}
	if err := waitReady(ctx, cs, deadline); err != nil {
		return fmt.Errorf("cluster %q: %w (the nodes' logs: faultline export-logs)", s.Name, err)
	}
	if err := routePodNetworks(ctx, cs, s.Name, deadline); err != nil {
		return fmt.Errorf("cluster %q: pod network across nodes: %w", s.Name, err)
	}
	if _, err := recordFacts(ctx, cs, s); err != nil {
		return fmt.Errorf("cluster %q: %w", s.Name, err)
	}
	return nil
}

// recordFacts writes the facts of a new cluster (s resolved): what it was
// configured with, and the versions its nodes report. It fails when the nodes
// contradict the settings (a node image of another runtime, a kubelet that did
// not take its runtimeRequestTimeout), so the facts are never false.
func recordFacts(ctx context.Context, cs kubernetes.Interface, s Settings) (facts.Facts, error) {
	rt := s.Runtime
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	seen, err := facts.FromNodes(ctx, cs)
	if err != nil {
		return facts.Facts{}, fmt.Errorf("read the nodes' versions: %w", err)
	}
	if seen.Runtime != rt.Name {
		return facts.Facts{}, fmt.Errorf("its nodes run %s, not %s: is %s a %s node image?", seen.Runtime, rt.Name, s.NodeImage, rt.Name)
	}
	if seen.RuntimeRequestTimeout != 0 && time.Duration(seen.RuntimeRequestTimeout) != s.RuntimeRequestTimeout {
		return facts.Facts{}, fmt.Errorf("its kubelet runs with runtimeRequestTimeout %s, not the %s it was configured with", seen.RuntimeRequestTimeout, s.RuntimeRequestTimeout)
	}
	if seen.KubeletSyncFrequency != 0 && time.Duration(seen.KubeletSyncFrequency) != s.KubeletSyncFrequency {
		return facts.Facts{}, fmt.Errorf("its kubelet runs with syncFrequency %s, not the %s it was configured with", seen.KubeletSyncFrequency, s.KubeletSyncFrequency)
	}
	f := facts.Facts{
		Cluster:                s.Name,
		Runtime:                rt.Name,
		RuntimeVersion:         seen.RuntimeVersion,
		KubernetesVersion:      seen.KubernetesVersion,
		NodeImage:              s.NodeImage,
		RuntimeRequestTimeout:  facts.Duration(s.RuntimeRequestTimeout),
		NRIRequestTimeout:      facts.Duration(s.NRIRequestTimeout),
		NRIRegistrationTimeout: facts.Duration(s.NRIRegistrationTimeout),
		KubeletSyncFrequency:   facts.Duration(s.KubeletSyncFrequency),
		NRIVersion:             s.NRIVersion,
		Workers:                s.Workers,
		Variant:                s.Variant,
		FakeModes:              s.FakeModes,
		FeatureGates:           s.FeatureGates,
		CreatedBy:              facts.CreatedByFaultline,
	}
	return f, facts.Write(ctx, cs, f)
}

// Reuse takes an existing cluster for a run: it writes the cluster's
// kubeconfig to kubeconfigPath and returns its facts, and fails when
// faultline did not make the cluster (it has no facts) or made it with other
// settings than s asks for (each difference named), or when it is not Ready.
func Reuse(ctx context.Context, s Settings, kubeconfigPath string) (facts.Facts, error) {
	s, err := s.Resolve()
	if err != nil {
		return facts.Facts{}, err
	}
	exists, err := Exists(s.Name)
	if err != nil {
		return facts.Facts{}, err
	}
	if !exists {
		return facts.Facts{}, fmt.Errorf("cluster %q does not exist", s.Name)
	}
	if err := WriteKubeconfig(s.Name, kubeconfigPath); err != nil {
		return facts.Facts{}, fmt.Errorf("cluster %q: write its kubeconfig: %w", s.Name, err)
	}
	cs, err := clientset(s.Name)
	if err != nil {
		return facts.Facts{}, fmt.Errorf("cluster %q: %w", s.Name, err)
	}
	f, err := checkFacts(ctx, cs, s)
	if err != nil {
		return facts.Facts{}, err
	}
	if err := waitReady(ctx, cs, time.Now().Add(time.Minute)); err != nil {
		return facts.Facts{}, fmt.Errorf("cluster %q: %w", s.Name, err)
	}
	return f, nil
}

// checkFacts reads the facts of cluster s.Name and compares them with s.
func checkFacts(ctx context.Context, cs kubernetes.Interface, s Settings) (facts.Facts, error) {
	f, found, err := facts.Read(ctx, cs)
	if err != nil {
		return facts.Facts{}, fmt.Errorf("cluster %q: %w", s.Name, err)
	}
	if !found || f.CreatedBy != facts.CreatedByFaultline {
		return facts.Facts{}, fmt.Errorf("cluster %q was not made by faultline: it has no ConfigMap %s/%s with the facts faultline records when it creates a cluster, "+
			"so its runtime and settings are unknown (delete it, or use another cluster name)", s.Name, facts.Namespace, facts.Name)
	}
	lines := f.Mismatch(s.FactSettings())
	// Zero workers asks for a one-node cluster, so it is compared too.
	if f.Workers != s.Workers {
		lines = append(lines, fmt.Sprintf("workers: the cluster has %d, the run asks for %d", f.Workers, s.Workers))
	}
	// So are the fake modes: none asks for a cluster without any.
	if !slices.Equal(f.FakeModes, s.FakeModes) {
		lines = append(lines, fmt.Sprintf("fake modes: the cluster has %q, the run asks for %q", f.FakeModes, s.FakeModes))
	}
	if len(lines) > 0 {
		return f, fmt.Errorf("cluster %q was made with other settings than this run asks for:\n  %s", s.Name, strings.Join(lines, "\n  "))
	}
	return f, nil
}

// clientset reaches the cluster's API server from this host.
func clientset(name string) (kubernetes.Interface, error) {
	raw, err := provider().KubeConfig(name, false)
	if err != nil {
		return nil, fmt.Errorf("its kubeconfig: %w", err)
	}
	config, err := clientcmd.RESTConfigFromKubeConfig([]byte(raw))
	if err != nil {
		return nil, fmt.Errorf("its kubeconfig: %w", err)
	}
	config.Timeout = 30 * time.Second
	return kubernetes.NewForConfig(config)
}

// Exists reports whether a cluster of that name is there.
func Exists(name string) (bool, error) {
	names, err := provider().List()
	if err != nil {
		return false, err
	}
	for _, n := range names {
		if n == name {
			return true, nil
		}
	}
	return false, nil
}

// WriteKubeconfig writes an existing cluster's kubeconfig to path.
func WriteKubeconfig(name, path string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if path == "" {
		// kind would merge the cluster into the user's default kubeconfig.
		return fmt.Errorf("cluster %q: no kubeconfig path to write its kubeconfig to", name)
	}
	return provider().ExportKubeConfig(name, path, false)
}

// Delete deletes the cluster; a missing cluster is not an error. kind
// removes the cluster's entry from kubeconfigPath, the file faultline wrote
// the cluster's kubeconfig to; with "" it edits no kubeconfig of the user's
// (deleteKubeconfig). A name ValidateName refuses deletes nothing.
func Delete(name, kubeconfigPath string) error {
	dir, err := stateDir(name)
	if err != nil {
		return err
	}
	if err := provider().Delete(name, deleteKubeconfig(dir, kubeconfigPath)); err != nil {
		return err
	}
	// what its nodes mounted from the host (a run config drop-in), if anything
	return os.RemoveAll(dir)
}

// ExportLogs collects the nodes' logs (journal, containers, pods) into dir.
// kind collects node by node and part by part; a part that fails (crictl is
// not in faultline's node images) leaves the rest, which is said on log.
func ExportLogs(name, dir string, log io.Writer) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	err := provider().CollectLogs(name, dir)
	if err != nil {
		if entries, _ := os.ReadDir(dir); len(entries) > 0 {
			if onlyNoCrictl.MatchString(err.Error()) {
				fmt.Fprintf(log, "node logs are in %s (all but kind's image list: faultline's node images have no crictl)\n", dir)
				return nil
			}
			fmt.Fprintf(log, "some node logs could not be collected (%v); the rest is in %s\n", err, dir)
			return nil
		}
	}
	return err
}

// onlyNoCrictl matches kind's error when its "crictl images" on each node
// was all that failed: exec exits 126 when the command is not there.
var onlyNoCrictl = regexp.MustCompile(`^(\[)?(command "docker exec --privileged [a-z0-9.-]+ crictl images" failed with error: exit status 126(, )?)+(\])?$`)

// LoadImages copies local Docker images into every node's runtime (LoadArchive).
func LoadImages(ctx context.Context, name string, images ...string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if len(images) == 0 {
		return fmt.Errorf("no images to load")
	}
	var archive bytes.Buffer
	save := exec.CommandContext(ctx, "docker", append([]string{"save"}, images...)...)
	save.Stdout = &archive
	var stderr bytes.Buffer
	save.Stderr = &stderr
	if err := save.Run(); err != nil {
		return fmt.Errorf("docker save %v: %w: %s", images, err, stderr.String())
	}
	return loadArchive(name, archive.Bytes(), images)
}

// LoadArchive copies the images refs of a docker archive (a file: docker
// save, or clusters/images without an engine) into every node's runtime, the
// way the node's runtime takes them (vocab/runtimes Images): containerd's
// store through kind (ctr import), containers/storage (CRI-O) through skopeo.
func LoadArchive(ctx context.Context, name, archive string, refs ...string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	data, err := os.ReadFile(archive)
	if err != nil {
		return err
	}
	return loadArchive(name, data, refs)
}

func loadArchive(name string, archive []byte, images []string) error {
	nodeList, err := provider().ListInternalNodes(name)
	if err != nil {
		return err
	}
	if len(nodeList) == 0 {
		return fmt.Errorf("cluster %q has no nodes", name)
	}
	for _, node := range nodeList {
		rt, err := nodeRuntime(node)
		if err != nil {
			return err
		}
		var load func(nodes.Node, io.Reader) error
		switch rt.Images {
		case runtimes.ImagesThroughKind:
			load = nodeutils.LoadImageArchive
		case runtimes.ImagesThroughSkopeo:
			load = func(n nodes.Node, r io.Reader) error { return loadWithSkopeo(n, r, images) }
		default:
			return fmt.Errorf("node %s runs %s: no way to load images %q", node.String(), rt.Name, rt.Images)
		}
		if err := load(node, bytes.NewReader(archive)); err != nil {
			return fmt.Errorf("load %v into node %s (%s): %w", images, node.String(), rt.Name, err)
		}
	}
	return nil
}

// nodeRuntime finds the runtime whose CRI socket the node serves.
func nodeRuntime(node nodes.Node) (runtimes.Runtime, error) {
	var sockets []string
	for _, rt := range runtimes.All() {
		if node.Command("test", "-S", rt.SocketPath()).Run() == nil {
			return rt, nil
		}
		sockets = append(sockets, rt.SocketPath())
	}
	return runtimes.Runtime{}, fmt.Errorf("node %s serves none of the known runtimes' sockets (%s)", node.String(), strings.Join(sockets, ", "))
}

// loadWithSkopeo copies a docker save archive into the node and has skopeo put
// each image of it into the runtime's containers/storage (CRI-O sees it at once).
func loadWithSkopeo(node nodes.Node, archive io.Reader, images []string) error {
	const tmp = "/var/tmp/faultline-images.tar"
	if err := node.Command("sh", "-c", "cat > "+tmp).SetStdin(archive).Run(); err != nil {
		return fmt.Errorf("copy the archive into the node: %w%s", err, commandOutput(err))
	}
	defer node.Command("rm", "-f", tmp).Run() //nolint:errcheck // best effort cleanup
	for _, ref := range images {
		copyImage := node.Command("skopeo", "copy", "--quiet", "docker-archive:"+tmp+":"+ref, "containers-storage:"+ref)
		if err := copyImage.Run(); err != nil {
			return fmt.Errorf("skopeo copy %s: %w%s", ref, err, commandOutput(err))
		}
	}
	return nil
}

// commandOutput digs the output of a failed node command (kubeadm init, say) out
// of kind's error, where it would otherwise stay hidden.
func commandOutput(err error) string {
	runErr := kindexec.RunErrorForError(err)
	if runErr == nil || len(runErr.Output) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(runErr.Output), "\n"), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return "\n--- last lines of its output ---\n" + strings.Join(lines, "\n")
}

// configGatesSince are the kind configs' gates by the first minor whose
// components accept them as set: 1.35 has DRADeviceTaintRules, but alpha and
// needing DRADeviceTaints, which is off there (beta and on from 1.36), so a
// 1.35 control plane refuses to start with it.
var configGatesSince = map[string]string{"DRADeviceTaintRules": "1.36"}

// dropGatesBefore leaves out of gates those release kubernetes refuses; an
// unknown release keeps them all.
func dropGatesBefore(gates map[string]bool, kubernetes string) {
	minor := versions.Minor(kubernetes)
	if minor == "" {
		return
	}
	for gate, since := range configGatesSince {
		if semver.Compare("v"+minor, "v"+since) < 0 {
			delete(gates, gate)
		}
	}
}
