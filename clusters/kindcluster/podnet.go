package kindcluster

// Pod networking across the nodes of a multi-node cluster, without a CNI image:
// each node's faultline-podnet unit (the node image) sets its bridge subnet to
// the node's podCIDR; routes between the subnets are set here, from the host,
// because a kubelet may read its own Node only. routePodNetworks then checks
// each node's CNI config; CheckPodTraffic (podtraffic.go) proves with traffic
// that pods reach each other across nodes before the suites get the cluster.

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/kind/pkg/cluster/nodes"
)

// cniConfig is the node image's CNI config, which faultline-podnet edits.
const cniConfig = "/etc/cni/net.d/10-faultline.conflist"

// podRoute is one route a node needs: another node's pod subnet via that node.
type podRoute struct {
	node, cidr, via, owner string
}

// podRoutes lists, for every node, the routes to the other nodes' pod
// subnets; a node without podCIDR or InternalIP yet is an error.
func podRoutes(list []corev1.Node) ([]podRoute, error) {
	type subnet struct{ name, cidr, ip string }
	var subnets []subnet
	for _, n := range list {
		ip := ""
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				ip = a.Address
				break
			}
		}
		if n.Spec.PodCIDR == "" || ip == "" {
			return nil, fmt.Errorf("node %s has no podCIDR or InternalIP yet", n.Name)
		}
		subnets = append(subnets, subnet{n.Name, n.Spec.PodCIDR, ip})
	}
	var out []podRoute
	for _, n := range subnets {
		for _, other := range subnets {
			if other.name != n.name {
				out = append(out, podRoute{node: n.name, cidr: other.cidr, via: other.ip, owner: other.name})
			}
		}
	}
	return out, nil
}

// routePodNetworks routes every node's pod subnet to every other node and
// waits until each node's CNI config carries its own podCIDR. One node
// needs neither.
func routePodNetworks(ctx context.Context, cs kubernetes.Interface, name string, deadline time.Time) error {
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	if len(list.Items) < 2 {
		return nil
	}
	routes, err := podRoutes(list.Items)
	if err != nil {
		return err
	}
	kindNodes, err := provider().ListNodes(name)
	if err != nil {
		return err
	}
	byName := map[string]nodes.Node{}
	for _, n := range kindNodes {
		byName[n.String()] = n
	}
	for _, r := range routes {
		n, ok := byName[r.node]
		if !ok {
			return fmt.Errorf("node %s is no node container of cluster %q", r.node, name)
		}
		if err := n.Command("ip", "route", "replace", r.cidr, "via", r.via).Run(); err != nil {
			return fmt.Errorf("node %s: route %s via %s (%s): %w", r.node, r.cidr, r.via, r.owner, err)
		}
	}
	for _, node := range list.Items {
		want := fmt.Sprintf("%q: %q", "subnet", node.Spec.PodCIDR)
		for {
			var out bytes.Buffer
			err := byName[node.Name].Command("cat", cniConfig).SetStdout(&out).Run()
			if err == nil && strings.Contains(out.String(), want) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("node %s: its CNI config %s does not carry its podCIDR %s (faultline-podnet: journalctl -u faultline-podnet on the node)", node.Name, cniConfig, node.Spec.PodCIDR)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Second):
			}
		}
	}
	return nil
}
