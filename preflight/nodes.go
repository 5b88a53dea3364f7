package preflight

import (
	"context"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilversion "k8s.io/apimachinery/pkg/util/version"

	"github.com/faultline-k8s/faultline/nodesetup"
	"github.com/faultline-k8s/faultline/vocab/needs"
	"github.com/faultline-k8s/faultline/vocab/runtimes"
)

// SlowHandler is the runtime handler (and RuntimeClass) of runc-slow that the
// CRI suite's specs need: nodesetup's, the one place it is named.
const SlowHandler = nodesetup.HandlerName

// runtimeInfo is the nodes' runtime, as vocab/runtimes knows it.
type runtimeInfo struct {
	runtimes.Runtime
	Version string
}

// nodes: usable nodes for the specs' test pods, the runtime they run, and
// whether it lists the faultline-slow handler.
func (c *checker) nodes(ctx context.Context) []Condition {
	lctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	list, err := c.cs.CoreV1().Nodes().List(lctx, metav1.ListOptions{})
	if err != nil {
		why := "list nodes: " + err.Error()
		return []Condition{{CondNodes, Unknown, why}, {CondRuntime, Unknown, why}, {needs.SlowHandler, Unknown, why}}
	}
	nodes := list.Items
	if len(nodes) == 0 {
		return []Condition{{CondNodes, Missing, "the cluster has no nodes"},
			{CondRuntime, Missing, "the cluster has no nodes"}, {needs.SlowHandler, Missing, "the cluster has no nodes"}}
	}
	sel := c.selector()
	selected := func(n *v1.Node) bool { return sel.Matches(labels.Set(n.Labels)) }
	c.testNode = suitesNode(nodes, selected)
	c.kubelets = map[string]*utilversion.Version{}
	for _, n := range nodes {
		if v, err := utilversion.ParseGeneric(n.Status.NodeInfo.KubeletVersion); err == nil {
			c.kubelets[n.Name] = v
		}
	}
	if c.testNode == "" {
		why := fmt.Sprintf("no node has the labels %s (the fakes' and the specs' node selector)", sel)
		return []Condition{{CondNodes, Missing, why}, c.nodeRuntime(nodes), {needs.SlowHandler, Missing, why}}
	}
	return []Condition{c.usableNodes(nodes, selected), c.nodeRuntime(nodes), c.slowHandler(nodes)}
}

// suitesNode is the node the suites run their node-level specs on, chosen
// as suites/harness SchedulableNode does: among the selected nodes, the
// first in the API's order neither cordoned nor tainted NoSchedule or
// NoExecute; else the first selected; "" if none is selected.
func suitesNode(nodes []v1.Node, selected func(*v1.Node) bool) string {
	first := ""
	for i := range nodes {
		if !selected(&nodes[i]) {
			continue
		}
		if first == "" {
			first = nodes[i].Name
		}
		if !nodes[i].Spec.Unschedulable && len(blockingTaints(&nodes[i])) == 0 {
			return nodes[i].Name
		}
	}
	return first
}

// selector is the nodes the fakes and the specs' pods go to: Linux, and
// the labels of the run's --faultline.node-selector.
func (c *checker) selector() labels.Selector {
	set := labels.Set{v1.LabelOSStable: "linux"}
	for k, v := range c.o.NodeSelector {
		set[k] = v
	}
	return labels.SelectorFromSet(set)
}

// blockingTaints are the taints that keep the specs' test pods off a node:
// they tolerate none (the fixtures' DaemonSets tolerate the control-plane
// taint, so those still run there).
func blockingTaints(n *v1.Node) []string {
	var out []string
	for _, t := range n.Spec.Taints {
		if t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute {
			out = append(out, t.Key+":"+string(t.Effect))
		}
	}
	return out
}

func ready(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func (c *checker) usableNodes(nodes []v1.Node, selected func(*v1.Node) bool) Condition {
	var off []string
	kubelets := map[string]bool{}
	for i := range nodes {
		n := &nodes[i]
		var why []string
		if !selected(n) {
			why = append(why, "not "+c.selector().String())
		}
		if !ready(n) {
			why = append(why, "not Ready")
		}
		if n.Spec.Unschedulable {
			why = append(why, "cordoned")
		}
		if taints := blockingTaints(n); len(taints) > 0 {
			why = append(why, "taint "+strings.Join(taints, ","))
		}
		if len(why) > 0 {
			off = append(off, n.Name+" ("+strings.Join(why, ", ")+")")
			continue
		}
		c.usable = append(c.usable, n.Name)
		kubelets[n.Status.NodeInfo.KubeletVersion] = true
	}
	versions := keys(kubelets)
	reason := fmt.Sprintf("%d of %d nodes take test pods: %s; kubelet %s; the suites pick %s",
		len(c.usable), len(nodes), strings.Join(c.usable, ", "), strings.Join(versions, ", "), c.testNode)
	if len(off) > 0 {
		reason += "; not: " + strings.Join(off, "; ")
	}
	if len(c.usable) == 0 {
		return Condition{CondNodes, Missing, fmt.Sprintf("no Ready node with %s, untainted and not cordoned (test pods tolerate no taint): %s", c.selector(), strings.Join(off, "; "))}
	}
	return Condition{CondNodes, OK, reason}
}

// nodeRuntime: the suites read the runtime from the cluster's facts, else
// from the nodes (vocab/facts FromNodes), which fails on a runtime
// vocab/runtimes does not know and on nodes with different runtimes.
func (c *checker) nodeRuntime(nodes []v1.Node) Condition {
	found := map[string]string{}
	var unknown []string
	for _, n := range nodes {
		crv := n.Status.NodeInfo.ContainerRuntimeVersion
		rt, version, err := runtimes.FromNode(crv)
		if err != nil {
			unknown = append(unknown, fmt.Sprintf("%s (%q)", n.Name, crv))
			continue
		}
		found[rt.Name] = rt.Name + " " + version
		if c.runtime == nil {
			c.runtime = &runtimeInfo{Runtime: rt, Version: version}
		}
	}
	switch {
	case len(unknown) > 0:
		c.runtime = nil
		return Condition{CondRuntime, Missing, fmt.Sprintf("runtime not known to vocab/runtimes (%s) on %s: the suites' setup fails unless --faultline.runtime names one",
			strings.Join(runtimes.Names(), ", "), strings.Join(unknown, ", "))}
	case len(found) > 1:
		c.runtime = nil
		return Condition{CondRuntime, Missing, "the nodes run different runtimes (" + strings.Join(values(found), ", ") + "): the suites' setup refuses mixed nodes"}
	}
	reason := fmt.Sprintf("%s (node status containerRuntimeVersion, vocab/runtimes %q)", values(found)[0], c.runtime.Name)
	if c.faultlineMade() && c.facts.Runtime != c.runtime.Name {
		return Condition{CondRuntime, Missing, fmt.Sprintf("the cluster's facts say %s, the nodes %s", c.facts.Runtime, values(found)[0])}
	}
	return Condition{CondRuntime, OK, reason}
}

// slowHandler looks at the node the suites pick: the CRI suite asks that
// node's runtime (CRI Status) and skips without the handler. The kubelet
// copies the runtime's handlers into node.status.runtimeHandlers (>= 1.30).
func (c *checker) slowHandler(nodes []v1.Node) Condition {
	var node *v1.Node
	for i := range nodes {
		if nodes[i].Name == c.testNode {
			node = &nodes[i]
		}
	}
	handlers := make([]string, 0, len(node.Status.RuntimeHandlers))
	for _, h := range node.Status.RuntimeHandlers {
		if h.Name == SlowHandler {
			return Condition{needs.SlowHandler, OK, fmt.Sprintf("node %s lists runtime handler %q (node.status.runtimeHandlers)", node.Name, SlowHandler)}
		}
		name := h.Name
		if name == "" {
			name = "(default)"
		}
		handlers = append(handlers, name)
	}
	if len(handlers) == 0 {
		return Condition{needs.SlowHandler, Unknown, fmt.Sprintf("node %s reports no runtime handlers (kubelet %s; < 1.30 or a runtime that lists none): the CRI suite asks the runtime and skips without %q",
			node.Name, node.Status.NodeInfo.KubeletVersion, SlowHandler)}
	}
	return Condition{needs.SlowHandler, Missing, fmt.Sprintf("node %s's runtime lists %s, not %q (runc-slow): the CRI suite skips; see the README's \"An existing cluster\"",
		node.Name, strings.Join(handlers, ", "), SlowHandler)}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func values(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}
