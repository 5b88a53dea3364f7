// Package kindcluster creates and deletes the kind clusters faultline runs on,
// through kind's Go API, from the checked-in config of a runtime plus the
// settings of one run.
package kindcluster

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/kind/pkg/cluster/nodes"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"
	"sigs.k8s.io/kind/pkg/cmd"
	kindexec "sigs.k8s.io/kind/pkg/exec"
	"sigs.k8s.io/yaml"
)

//go:embed configs/containerd.yaml
var containerdConfig []byte

//go:embed configs/crio.yaml
var crioConfig []byte

// CRIOSocket is where CRI-O serves the CRI in faultline's crio nodes.
const CRIOSocket = "unix:///var/run/crio/crio.sock"

// Settings are what one run chooses on top of the checked-in config.
type Settings struct {
	Name      string
	Runtime   string // containerd (the default) or crio
	NodeImage string
	// RuntimeRequestTimeout is the kubelet's runtimeRequestTimeout: how long it
	// waits for a CRI call (RunPodSandbox gets twice that). 0 keeps the default.
	RuntimeRequestTimeout time.Duration
	// NRIRequestTimeout and NRIRegistrationTimeout are the runtime's NRI plugin
	// timeouts. 0 keeps the image's defaults.
	NRIRequestTimeout      time.Duration
	NRIRegistrationTimeout time.Duration
	// CgroupV1 hosts need failCgroupV1: false, or Kubernetes 1.35+ kubelets refuse to start.
	CgroupV1 bool
	// Retain keeps the nodes of a failed create, to look inside them.
	Retain bool
}

// Config renders the kind cluster config for these settings.
func Config(s Settings) (*v1alpha4.Cluster, error) {
	var raw []byte
	switch s.Runtime {
	case "", "containerd":
		raw = containerdConfig
	case "crio":
		raw = crioConfig
	default:
		return nil, fmt.Errorf("unknown runtime %q (known: containerd, crio)", s.Runtime)
	}
	cfg := &v1alpha4.Cluster{}
	if err := yaml.UnmarshalStrict(raw, cfg); err != nil {
		return nil, fmt.Errorf("checked-in kind config: %w", err)
	}
	if kubelet := kubeletPatch(s); kubelet != "" {
		cfg.KubeadmConfigPatches = append(cfg.KubeadmConfigPatches, kubelet)
	}
	if s.Runtime == "crio" {
		// kind patches /etc/containerd/config.toml only; a crio node gets its run
		// settings as a CRI-O drop-in mounted from the host (written by Create).
		if crioRunConfig(s) != "" {
			for i := range cfg.Nodes {
				cfg.Nodes[i].ExtraMounts = append(cfg.Nodes[i].ExtraMounts, v1alpha4.Mount{
					HostPath: crioRunConfigPath(s.Name), ContainerPath: "/etc/crio/crio.conf.d/20-faultline-run.conf", Readonly: true,
				})
			}
		}
	} else if nri := nriPatch(s); nri != "" {
		cfg.ContainerdConfigPatches = append(cfg.ContainerdConfigPatches, nri)
	}
	for i := range cfg.Nodes {
		cfg.Nodes[i].Image = s.NodeImage
	}
	v1alpha4.SetDefaultsCluster(cfg)
	return cfg, nil
}

func kubeletPatch(s Settings) string {
	var lines []string
	if s.CgroupV1 {
		lines = append(lines, "failCgroupV1: false")
	}
	if s.RuntimeRequestTimeout > 0 {
		lines = append(lines, fmt.Sprintf("runtimeRequestTimeout: %s", s.RuntimeRequestTimeout))
	}
	if len(lines) == 0 {
		return ""
	}
	return "kind: KubeletConfiguration\n" + strings.Join(lines, "\n") + "\n"
}

func nriPatch(s Settings) string {
	var lines []string
	if s.NRIRequestTimeout > 0 {
		lines = append(lines, fmt.Sprintf("  plugin_request_timeout = '%s'", s.NRIRequestTimeout))
	}
	if s.NRIRegistrationTimeout > 0 {
		lines = append(lines, fmt.Sprintf("  plugin_registration_timeout = '%s'", s.NRIRegistrationTimeout))
	}
	if len(lines) == 0 {
		return ""
	}
	return "[plugins.'io.containerd.nri.v1.nri']\n" + strings.Join(lines, "\n") + "\n"
}

// crioRunConfig is the CRI-O drop-in with the run's NRI timeouts ("" if none).
func crioRunConfig(s Settings) string {
	var lines []string
	if s.NRIRequestTimeout > 0 {
		lines = append(lines, fmt.Sprintf("nri_plugin_request_timeout = %q", s.NRIRequestTimeout.String()))
	}
	if s.NRIRegistrationTimeout > 0 {
		lines = append(lines, fmt.Sprintf("nri_plugin_registration_timeout = %q", s.NRIRegistrationTimeout.String()))
	}
	if len(lines) == 0 {
		return ""
	}
	return "# faultline: this run's settings (clusters/kindcluster)\n[crio.nri]\n" + strings.Join(lines, "\n") + "\n"
}

// crioRunConfigPath is where the host keeps a cluster's CRI-O drop-in; it must
// live as long as the cluster (its nodes mount it).
func crioRunConfigPath(cluster string) string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "faultline", "clusters", cluster, "crio-run.conf")
}

// HostIsCgroupV1 reports whether this host mounts cgroup v1 (no unified hierarchy at the root).
func HostIsCgroupV1() bool {
	_, err := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	return err != nil
}

func provider() *cluster.Provider {
	return cluster.NewProvider(cluster.ProviderWithDocker(), cluster.ProviderWithLogger(cmd.NewLogger()))
}

// Create creates the cluster, writes its kubeconfig to kubeconfigPath, and waits
// (up to wait from the start) for its nodes and system pods to be Ready.
func Create(ctx context.Context, s Settings, kubeconfigPath string, wait time.Duration) error {
	cfg, err := Config(s)
	if err != nil {
		return err
	}
	if content := crioRunConfig(s); s.Runtime == "crio" && content != "" {
		path := crioRunConfigPath(s.Name)
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
		if err := waitReady(ctx, kubeconfigPath, deadline); err != nil {
			return fmt.Errorf("cluster %q: %w (the nodes' logs: faultline export-logs)", s.Name, err)
		}
	case <-ctx.Done():
		// kind's API cannot be cancelled; remove what it made so far.
		_ = Delete(s.Name, kubeconfigPath)
		return ctx.Err()
	}
	return nil
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
	return provider().ExportKubeConfig(name, path, false)
}

// Delete deletes the cluster; a missing cluster is not an error.
func Delete(name, kubeconfigPath string) error {
	if err := provider().Delete(name, kubeconfigPath); err != nil {
		return err
	}
	// the CRI-O drop-in its nodes mounted, if any
	return os.RemoveAll(filepath.Dir(crioRunConfigPath(name)))
}

// ExportLogs collects the nodes' logs (journal, containers, pods) into dir.
func ExportLogs(name, dir string) error {
	return provider().CollectLogs(name, dir)
}

// LoadImages copies local Docker images into every node's runtime: containerd's
// store through kind (ctr import), or, on a node that runs CRI-O, its
// containers/storage through skopeo.
func LoadImages(ctx context.Context, name string, images ...string) error {
	nodeList, err := provider().ListInternalNodes(name)
	if err != nil {
		return err
	}
	if len(nodeList) == 0 {
		return fmt.Errorf("cluster %q has no nodes", name)
	}
	var archive bytes.Buffer
	save := exec.CommandContext(ctx, "docker", append([]string{"save"}, images...)...)
	save.Stdout = &archive
	var stderr bytes.Buffer
	save.Stderr = &stderr
	if err := save.Run(); err != nil {
		return fmt.Errorf("docker save %v: %v: %s", images, err, stderr.String())
	}
	for _, node := range nodeList {
		load := nodeutils.LoadImageArchive
		if nodeRunsCRIO(node) {
			load = func(n nodes.Node, r io.Reader) error { return loadIntoCRIO(n, r, images) }
		}
		if err := load(node, bytes.NewReader(archive.Bytes())); err != nil {
			return fmt.Errorf("load %v into node %s: %w", images, node.String(), err)
		}
	}
	return nil
}

// nodeRunsCRIO reports whether the node serves CRI-O's socket.
func nodeRunsCRIO(node nodes.Node) bool {
	return node.Command("test", "-S", strings.TrimPrefix(CRIOSocket, "unix://")).Run() == nil
}

// loadIntoCRIO copies a docker save archive into the node and has skopeo put
// each image of it into CRI-O's containers/storage (CRI-O sees it at once).
func loadIntoCRIO(node nodes.Node, archive io.Reader, images []string) error {
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
