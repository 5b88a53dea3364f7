// Package deploy runs node-setup (nodesetup/cmd/node-setup) on a cluster's nodes for
// `faultline node-setup install|remove`: it renders the node-setup fixture
// set (fixtures/nodesetup) for the selected nodes, applies it, waits until
// the pod on each of them is done (ready: the runtime answers again) or has
// failed, and reads from each pod's log the report of what it did. After a
// remove it deletes the set again; after an install the DaemonSet stays, so
// that a node that joins later gets the handler too.
package deploy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/faultline-k8s/faultline/fixtures"
	"github.com/faultline-k8s/faultline/nodesetup"
	"github.com/faultline-k8s/faultline/vocab/runtimes"
)

const (
	// FixtureSet is node-setup's directory under fixtures/.
	FixtureSet = "nodesetup"
	// Namespace holds the DaemonSet.
	Namespace = "faultline-node-setup"
	// DaemonSet is its name, and its container's.
	DaemonSet = "node-setup"
	podLabels = "app.kubernetes.io/name=node-setup"
	// DefaultTimeout bounds the wait for every node's pod (an image pull,
	// the runtime's restart) and, on remove, for the set to be gone.
	DefaultTimeout = 5 * time.Minute
)

// Options of a run.
type Options struct {
	// Image is the fakes image, with /usr/local/bin/node-setup and
	// /usr/local/bin/runc-slow.
	Image string
	// PullPolicy of Image ("": IfNotPresent).
	PullPolicy string
	// NodeSelector selects the nodes besides kubernetes.io/os: linux.
	NodeSelector map[string]string
	// Timeout bounds each wait (0: DefaultTimeout).
	Timeout time.Duration
	// Progress gets a line per step (nil: none).
	Progress io.Writer
	// Poll is the interval of the waits (0: 2s).
	Poll time.Duration
}

// NodeResult is one node's outcome.
type NodeResult struct {
	Node string
	// Runtime is the node's, from its status (runtime://version).
	Runtime string
	// Report is what node-setup did there (when Err is nil).
	Report nodesetup.Report
	// Err says why node-setup did not finish there.
	Err error
}

// Cluster runs node-setup on one cluster.
type Cluster struct {
	cs      kubernetes.Interface
	applier fixtures.ObjectApplier
	// logs reads a pod's container log (previous: the last terminated
	// container's).
	logs func(ctx context.Context, pod *corev1.Pod, previous bool) ([]byte, error)
}

// New connects to the cluster of config.
func New(config *rest.Config) (*Cluster, error) {
	cs, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	applier, err := fixtures.NewApplier(config)
	if err != nil {
		return nil, err
	}
	c := &Cluster{cs: cs, applier: applier}
	c.logs = func(ctx context.Context, pod *corev1.Pod, previous bool) ([]byte, error) {
		return cs.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: DaemonSet, Previous: previous}).DoRaw(ctx)
	}
	return c, nil
}

// Run runs node-setup in mode (nodesetup.ModeInstall or ModeRemove) on the
// selected nodes. It returns each node's result, sorted by node, and an
// error when node-setup did not finish on every one of them (or could not
// start).
func (c *Cluster) Run(ctx context.Context, mode string, opts Options) ([]NodeResult, error) {
	if mode != nodesetup.ModeInstall && mode != nodesetup.ModeRemove {
		return nil, fmt.Errorf("mode %q: want %s or %s", mode, nodesetup.ModeInstall, nodesetup.ModeRemove)
	}
	if opts.Image == "" {
		return nil, errors.New("no image: node-setup runs from the fakes image")
	}
	if opts.PullPolicy == "" {
		opts.PullPolicy = string(corev1.PullIfNotPresent)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Poll <= 0 {
		opts.Poll = 2 * time.Second
	}
	progress := func(format string, args ...any) {
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, format+"\n", args...)
		}
	}

	selector := labels.SelectorFromSet(fixtures.NodeSelectorOf(opts.NodeSelector))
	nodes, runtimeArg, err := c.selectNodes(ctx, selector)
	if err != nil {
		return nil, err
	}
	objects, err := fixtures.Render(FixtureSet, fixtures.Values{
		Namespace: Namespace, Image: opts.Image, PullPolicy: opts.PullPolicy, NodeSelector: opts.NodeSelector,
		Extra: map[string]string{"Mode": mode, "Runtime": runtimeArg},
	})
	if err != nil {
		return nil, err
	}

	// A DaemonSet of an earlier run (an install's, which stays) goes first:
	// its pods would answer for this run.
	if _, err := c.cs.CoreV1().Namespaces().Get(ctx, Namespace, metav1.GetOptions{}); err == nil {
		progress("removing the node-setup DaemonSet of an earlier run (namespace %s); the nodes keep what it did", Namespace)
		if err := c.remove(ctx, objects, opts); err != nil {
			return nil, err
		}
	} else if !apierrors.IsNotFound(err) {
		return nil, err
	}

	progress("node-setup %s on %d node(s) (%s), image %s", mode, len(nodes), selector, opts.Image)
	if err := c.applier.Create(ctx, objects); err != nil {
		return nil, fmt.Errorf("deploy node-setup: %w", err)
	}
	results, err := c.wait(ctx, nodes, opts, progress)
	var failed []string
	for _, r := range results {
		if r.Err != nil {
			failed = append(failed, r.Node)
		}
	}
	if err != nil || len(failed) > 0 {
		// A failed pod would be restarted by the kubelet, and with it the
		// node's runtime, again and again: the DaemonSet goes (its logs are
		// in the results), also when the wait was interrupted.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.Timeout)
		defer cancel()
		if rerr := c.remove(cctx, objects, opts); rerr != nil {
			progress("could not delete the node-setup DaemonSet: %v", rerr)
		} else {
			progress("deleted the node-setup DaemonSet and namespace %s, so that no pod retries; the nodes keep what it did (`faultline node-setup remove` undoes it)", Namespace)
		}
	}
	if err != nil {
		return results, err
	}
	if len(failed) > 0 {
		return results, fmt.Errorf("node-setup %s failed on %d of %d node(s): %s", mode, len(failed), len(results), strings.Join(failed, ", "))
	}
	if mode == nodesetup.ModeRemove {
		progress("deleting the node-setup DaemonSet and namespace %s", Namespace)
		if err := c.remove(ctx, objects, opts); err != nil {
			return results, err
		}
	}
	return results, nil
}

// selectNodes lists the selected nodes, and the --runtime their pods get:
// the runtime's name when they all run the same, else auto (each pod finds
// its node's).
func (c *Cluster) selectNodes(ctx context.Context, selector labels.Selector) ([]corev1.Node, string, error) {
	list, err := c.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, "", fmt.Errorf("list the nodes: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, "", fmt.Errorf("no node matches %s", selector)
	}
	nodes := list.Items
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	seen := map[string]bool{}
	for _, n := range nodes {
		rt, _, err := runtimes.FromNode(n.Status.NodeInfo.ContainerRuntimeVersion)
		if err != nil {
			return nil, "", fmt.Errorf("node %s: %w: node-setup configures only %s", n.Name, err, strings.Join(runtimes.Names(), " and "))
		}
		seen[rt.Name] = true
	}
	if len(seen) == 1 {
		for name := range seen {
			return nodes, name, nil
		}
	}
	return nodes, "auto", nil
}

// nodeState is where a node's pod is.
type nodeState struct {
	pod   *corev1.Pod
	done  bool
	err   error
	where string // what it waits for
}

// wait waits until the pod on each node is ready or has failed, then reads
// the reports.
func (c *Cluster) wait(ctx context.Context, nodes []corev1.Node, opts Options, progress func(string, ...any)) ([]NodeResult, error) {
	deadline := time.Now().Add(opts.Timeout)
	var states map[string]*nodeState
	for {
		var err error
		states, err = c.observe(ctx, nodes)
		if err == nil {
			pending := 0
			for _, s := range states {
				if !s.done {
					pending++
				}
			}
			if pending == 0 {
				break
			}
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if time.Now().After(deadline) {
			var lines []string
			for _, n := range nodes {
				if s := states[n.Name]; s != nil && !s.done {
					lines = append(lines, n.Name+": "+s.where)
				}
			}
			if err != nil {
				lines = append(lines, err.Error())
			}
			return nil, fmt.Errorf("node-setup not done within %s:\n  %s", opts.Timeout, strings.Join(lines, "\n  "))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(opts.Poll):
		}
	}
	var results []NodeResult
	for _, n := range nodes {
		s := states[n.Name]
		r := NodeResult{Node: n.Name, Runtime: n.Status.NodeInfo.ContainerRuntimeVersion, Err: s.err}
		if s.pod != nil {
			log, lerr := c.logs(ctx, s.pod, restarted(s.pod))
			switch {
			case s.err != nil:
				if lerr == nil {
					r.Err = fmt.Errorf("%w\n%s", s.err, tail(log, 15))
				}
			case lerr != nil:
				r.Err = fmt.Errorf("pod %s is ready, but its log cannot be read: %w", s.pod.Name, lerr)
			default:
				report, ok := nodesetup.ParseReport(log)
				if !ok {
					r.Err = fmt.Errorf("pod %s is ready, but its log has no report line:\n%s", s.pod.Name, tail(log, 15))
				}
				r.Report = report
			}
		}
		results = append(results, r)
	}
	return results, nil
}

// observe reads the DaemonSet and its pods once.
func (c *Cluster) observe(ctx context.Context, nodes []corev1.Node) (map[string]*nodeState, error) {
	states := map[string]*nodeState{}
	for _, n := range nodes {
		states[n.Name] = &nodeState{where: "no node-setup pod yet"}
	}
	ds, err := c.cs.AppsV1().DaemonSets(Namespace).Get(ctx, DaemonSet, metav1.GetOptions{})
	if err != nil {
		return states, fmt.Errorf("DaemonSet %s/%s: %w", Namespace, DaemonSet, err)
	}
	pods, err := c.cs.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{LabelSelector: podLabels})
	if err != nil {
		return states, fmt.Errorf("pods of %s/%s: %w", Namespace, DaemonSet, err)
	}
	withPod := 0
	for i := range pods.Items {
		pod := &pods.Items[i]
		s, ok := states[pod.Spec.NodeName]
		if !ok || pod.DeletionTimestamp != nil {
			continue
		}
		withPod++
		s.pod = pod
		s.where, s.err = podState(pod)
		s.done = s.err != nil || s.where == "ready"
	}
	if scheduledAll(ds) && int32(withPod) >= ds.Status.DesiredNumberScheduled {
		// The controller has placed every pod it will: a selected node
		// without one does not tolerate one of its taints.
		for _, n := range nodes {
			if s := states[n.Name]; s.pod == nil {
				s.done = true
				s.err = fmt.Errorf("no node-setup pod was scheduled on it: it has a taint the DaemonSet does not tolerate (it tolerates node-role.kubernetes.io/control-plane only)%s", taints(n))
			}
		}
	}
	return states, nil
}

func scheduledAll(ds *appsv1.DaemonSet) bool {
	return ds.Status.ObservedGeneration >= ds.Generation && ds.Status.DesiredNumberScheduled == ds.Status.CurrentNumberScheduled
}

func taints(n corev1.Node) string {
	var out []string
	for _, t := range n.Spec.Taints {
		out = append(out, t.ToString())
	}
	if len(out) == 0 {
		return ""
	}
	return ": " + strings.Join(out, ", ")
}

// podState says where a node-setup pod is: "ready", something to wait for,
// or (an error) why it failed.
func podState(pod *corev1.Pod) (string, error) {
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
			return "ready", nil
		}
	}
	for _, st := range pod.Status.ContainerStatuses {
		if st.Name != DaemonSet {
			continue
		}
		if t := st.State.Terminated; t != nil && t.ExitCode != 0 {
			return "", fmt.Errorf("node-setup exited %d (%s) in pod %s", t.ExitCode, t.Reason, pod.Name)
		}
		if t := st.LastTerminationState.Terminated; t != nil && t.ExitCode != 0 {
			return "", fmt.Errorf("node-setup exited %d (%s) in pod %s, %d restart(s)", t.ExitCode, t.Reason, pod.Name, st.RestartCount)
		}
		if w := st.State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError", "CreateContainerError", "RunContainerError":
				return "", fmt.Errorf("pod %s cannot start node-setup: %s: %s", pod.Name, w.Reason, w.Message)
			}
			return "container waiting (" + w.Reason + ")", nil
		}
		if st.State.Running != nil {
			return "node-setup running (installing or removing, restarting the runtime)", nil
		}
	}
	return "pod " + string(pod.Status.Phase), nil
}

// restarted reports whether the pod's node-setup container waits to be
// started again after it failed: its log is the previous container's.
func restarted(pod *corev1.Pod) bool {
	for _, st := range pod.Status.ContainerStatuses {
		if st.Name == DaemonSet && st.State.Waiting != nil && st.LastTerminationState.Terminated != nil {
			return true
		}
	}
	return false
}

// tail is the last n lines of a log, indented.
func tail(log []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(log), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    | " + strings.Join(lines, "\n    | ")
}

// remove deletes the set's objects and waits until they are gone.
func (c *Cluster) remove(ctx context.Context, objects []*unstructured.Unstructured, opts Options) error {
	if err := c.applier.Delete(ctx, objects); err != nil {
		return err
	}
	gone := c.applier.Deleted(objects)
	deadline := time.Now().Add(opts.Timeout)
	var last error
	for {
		done, err := gone(ctx)
		if err == nil && done {
			return nil
		}
		if err != nil {
			last = err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node-setup's objects (namespace %s) not gone within %s (last error: %v)", Namespace, opts.Timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(opts.Poll):
		}
	}
}

// Summary is a node's result in one paragraph.
func (r NodeResult) Summary() string {
	head := r.Node
	if r.Runtime != "" {
		head += " (" + r.Runtime + ")"
	}
	if r.Err != nil {
		return head + ": FAILED: " + r.Err.Error()
	}
	return head + ": " + r.Report.Summary()
}
