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

// CRISocket returns the directory and file name of the node's CRI socket,
// from the kubelet's configuration (containerRuntimeEndpoint), else the
// runtime's default.
func CRISocket(ctx context.Context, cs clientset.Interface, node string) (dir, file string, err error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", "configz").DoRaw(ctx)
	if err == nil {
		var cfg struct {
			KubeletConfig struct {
				ContainerRuntimeEndpoint string `json:"containerRuntimeEndpoint"`
			} `json:"kubeletconfig"`
		}
		if json.Unmarshal(raw, &cfg) == nil {
			if ep := strings.TrimPrefix(cfg.KubeletConfig.ContainerRuntimeEndpoint, "unix://"); strings.HasPrefix(ep, "/") {
				return path.Dir(ep), path.Base(ep), nil
			}
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
