package harness

// The node under test: its kubelet's configuration, where its runtime's CRI
// socket is, and which node test pods land on. Which runtime it runs is a
// cluster fact (Cluster).

import (
	"context"
	"fmt"
	"path"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/test/e2e/framework"

	"github.com/faultline-k8s/faultline/fixtures"
	"github.com/faultline-k8s/faultline/vocab/kubelet"
)

// CRISocket returns the directory and file name of the node's CRI socket,
// from the kubelet's configuration (containerRuntimeEndpoint), else the
// runtime's default (vocab/runtimes).
func CRISocket(ctx context.Context, cs clientset.Interface, node string) (dir, file string, err error) {
	cfg, err := kubelet.ReadConfig(ctx, cs, node)
	if err == nil {
		if ep := strings.TrimPrefix(cfg.ContainerRuntimeEndpoint, "unix://"); strings.HasPrefix(ep, "/") {
			return path.Dir(ep), path.Base(ep), nil
		}
		err = fmt.Errorf("containerRuntimeEndpoint %q is no unix socket", cfg.ContainerRuntimeEndpoint)
	}
	if cluster == nil {
		return "", "", fmt.Errorf("the kubelet's containerRuntimeEndpoint on %s: %w (and the cluster's runtime is not known yet)", node, err)
	}
	rt := cluster.Runtime
	framework.Logf("cannot read the kubelet's containerRuntimeEndpoint on %s (%v); using %s's default socket %s", node, err, rt.Name, rt.CRISocket)
	socket := rt.SocketPath()
	return path.Dir(socket), path.Base(socket), nil
}

// CRISocketValues are the fixture values (.Extra.CRISocketDir,
// .Extra.CRISocket) of fixtures that mount the CRI socket of the node test
// pods land on: FixtureSet.Values of such sets.
func CRISocketValues(ctx context.Context, cs clientset.Interface) (map[string]string, error) {
	node, err := SchedulableNode(ctx, cs)
	if err != nil {
		return nil, err
	}
	dir, file, err := CRISocket(ctx, cs, node)
	if err != nil {
		return nil, err
	}
	framework.Logf("CRI socket on node %s: %s/%s", node, dir, file)
	return map[string]string{"CRISocketDir": dir, "CRISocket": file}, nil
}

// SchedulableNode returns a node test pods can land on, for the deployment.
func SchedulableNode(ctx context.Context, cs clientset.Interface) (string, error) {
	// Only nodes the fakes run on (--faultline.node-selector).
	sel := labels.SelectorFromSet(fixtures.NodeSelectorOf(Flags.NodeSelector))
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
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
	return "", fmt.Errorf("the cluster has no node with labels %s", sel)
}

func hasNoScheduleTaint(n *v1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute {
			return true
		}
	}
	return false
}
