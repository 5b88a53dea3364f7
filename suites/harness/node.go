package harness

// The node under test: which runtime runs there, where its CRI socket is, and
// which node test pods land on.

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/test/e2e/framework"
)

// Runtime is a node's container runtime as the kubelet reports it.
type Runtime struct {
	// Name is "containerd", "cri-o", ...
	Name, Version string
}

func (r Runtime) String() string { return r.Name + " " + r.Version }

// NodeRuntime reads the node's runtime from its status
// (containerRuntimeVersion "containerd://2.4.2"). --faultline.runtime only
// names what the run expected; the node wins if they differ.
func NodeRuntime(ctx context.Context, cs clientset.Interface, node string) (Runtime, error) {
	n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return Runtime{}, err
	}
	name, version, _ := strings.Cut(n.Status.NodeInfo.ContainerRuntimeVersion, "://")
	rt := Runtime{Name: name, Version: version}
	if want := Flags.Runtime; want != "" && NormalizeRuntime(want) != NormalizeRuntime(name) {
		framework.Logf("--faultline.runtime=%s, but node %s runs %s; using the node's", want, node, rt)
	}
	return rt, nil
}

// NormalizeRuntime makes runtime names comparable: "cri-o", "CRI-O" and
// "crio" are all "crio".
func NormalizeRuntime(name string) string {
	return strings.ReplaceAll(strings.ToLower(name), "-", "")
}

// KubeletConfig is what the specs read of a kubelet's running configuration.
type KubeletConfig struct {
	ContainerRuntimeEndpoint string `json:"containerRuntimeEndpoint"`
	RuntimeRequestTimeout    string `json:"runtimeRequestTimeout"`
}

// ReadKubeletConfig reads the kubelet's configuration on node (/configz
// through the API server's node proxy).
func ReadKubeletConfig(ctx context.Context, cs clientset.Interface, node string) (KubeletConfig, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", "configz").DoRaw(ctx)
	if err != nil {
		return KubeletConfig{}, err
	}
	var cfg struct {
		KubeletConfig KubeletConfig `json:"kubeletconfig"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return KubeletConfig{}, fmt.Errorf("kubelet /configz on %s: %w", node, err)
	}
	return cfg.KubeletConfig, nil
}

// CRISocket returns the directory and file name of the node's CRI socket,
// from the kubelet's configuration (containerRuntimeEndpoint), else the
// runtime's default.
func CRISocket(ctx context.Context, cs clientset.Interface, node string) (dir, file string, err error) {
	cfg, err := ReadKubeletConfig(ctx, cs, node)
	if err == nil {
		if ep := strings.TrimPrefix(cfg.ContainerRuntimeEndpoint, "unix://"); strings.HasPrefix(ep, "/") {
			return path.Dir(ep), path.Base(ep), nil
		}
	}
	framework.Logf("cannot read the kubelet's containerRuntimeEndpoint on %s (%v); using the runtime's default socket", node, err)
	rt, rerr := NodeRuntime(ctx, cs, node)
	if rerr != nil {
		return "", "", rerr
	}
	switch NormalizeRuntime(rt.Name) {
	case "containerd":
		return "/run/containerd", "containerd.sock", nil
	case "crio":
		return "/var/run/crio", "crio.sock", nil
	}
	return "", "", fmt.Errorf("node %s runs %s: no known CRI socket", node, rt)
}

// CRISocketValues are the fixture values (.Extra.CRISocketDir,
// .Extra.CRISocket) of fixtures that mount node's CRI socket.
func CRISocketValues(ctx context.Context, cs clientset.Interface, node string) (map[string]string, error) {
	dir, file, err := CRISocket(ctx, cs, node)
	if err != nil {
		return nil, err
	}
	framework.Logf("CRI socket on node %s: %s/%s", node, dir, file)
	return map[string]string{"CRISocketDir": dir, "CRISocket": file}, nil
}

// SchedulableNode returns a node test pods can land on, for the deployment.
func SchedulableNode(ctx context.Context, cs clientset.Interface) (string, error) {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	for _, n := range nodes.Items {
		if !n.Spec.Unschedulable && !hasNoScheduleTaint(&n) {
			return n.Name, nil
		}
	}
	if len(nodes.Items) > 0 {
		return nodes.Items[0].Name, nil
	}
	return "", fmt.Errorf("the cluster has no nodes")
}

func hasNoScheduleTaint(n *v1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute {
			return true
		}
	}
	return false
}
