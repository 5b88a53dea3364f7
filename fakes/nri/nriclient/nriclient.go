// Package nriclient is the typed access to a deployment of the fake NRI plugin
// (fakes/nri, deployed by fixtures/nri): its instances, the records
// each instance keeps of what the runtime sent it, the runtime's CRI view
// of a pod (the runtime-state container), and the pod annotations that make
// an instance fail. Everything goes through the API server (port-forwards
// to the pods' loopback, fakes/lib/podproxy), so it works on any cluster,
// not only kind.
//
//	plugins := client.New(pods, namespace)
//	pod.Annotations = client.Annotations(client.B.Fault("CreateContainer",
//		faults.Fault{Mode: faults.Error, Times: 1}))
//	events, err := plugins.On(node, client.B).Events(ctx, string(pod.UID))
package nriclient

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/e2e-framework/klient/wait"

	"github.com/faultline-k8s/faultline/fakes/lib/podproxy"
	"github.com/faultline-k8s/faultline/fakes/nri/faults"
	"github.com/faultline-k8s/faultline/fakes/nri/plugin"
	"github.com/faultline-k8s/faultline/fakes/nri/record"
	"github.com/faultline-k8s/faultline/fakes/nri/runtimestate"
)

// Selector selects the fake plugin's pods (one per node) of fixtures/nri.
const Selector = "app.kubernetes.io/name=fake-nri-plugin"

// Instance is one fake NRI plugin instance of the DaemonSet: a container
// of its pod, registered with the runtime as <Index>-<Name>, serving its
// record on Port.
type Instance struct {
	Name, Index string
	// Container of the DaemonSet pod, and its HTTP port.
	Container, Port string
	// FailRequest and KeepConnected are the failure policy the instance
	// declares when it registers (--fail-request, --keep-connected; NRI
	// v0.12.4 api.FailurePolicy); both false: it declares none.
	FailRequest, KeepConnected bool
}

// The instances of fixtures/nri, in the runtime's call order (by index).
// A, B and C declare no failure policy. P declares fail_request and
// keep_connected, K keep_connected alone; each sits between two instances
// without a policy, so a spec sees the plugins before and after it.
var (
	A = Instance{Name: "faultline-a", Index: "10", Container: "a", Port: "8080"}
	P = Instance{Name: "faultline-p", Index: "15", Container: "p", Port: "8084", FailRequest: true, KeepConnected: true}
	B = Instance{Name: "faultline-b", Index: "20", Container: "b", Port: "8081"}
	K = Instance{Name: "faultline-k", Index: "25", Container: "k", Port: "8085", KeepConnected: true}
	C = Instance{Name: "faultline-c", Index: "30", Container: "c", Port: "8082"}

	Instances = []Instance{A, P, B, K, C}
)

// The runtime-state container of the plugin's pod serves the runtime's CRI
// view of a pod (package runtimestate) on RuntimeStatePort.
const (
	RuntimeStateContainer = "runtime-state"
	RuntimeStatePort      = "8083"
)

// String is the name the runtime knows the instance by, <Index>-<Name>
// ("15-faultline-p"): NRI names a plugin so in its errors and logs.
func (i Instance) String() string { return i.Index + "-" + i.Name }

// Policy describes the failure policy the instance declares, for messages:
// "fail_request+keep_connected", "keep_connected", or "no failure policy".
func (i Instance) Policy() string {
	var fields []string
	if i.FailRequest {
		fields = append(fields, "fail_request")
	}
	if i.KeepConnected {
		fields = append(fields, "keep_connected")
	}
	if len(fields) == 0 {
		return "no failure policy"
	}
	return strings.Join(fields, "+")
}

// Key is the annotation key of the instance's fault in event: the pod
// annotation Key(event)="error;times=2" makes it fail event twice.
func (i Instance) Key(event string) string {
	return faults.Key(i.Name, event)
}

// Fault is the pod annotation that makes the instance inject f into event
// (faults.Annotation: built next to the plugin's parser).
func (i Instance) Fault(event string, f faults.Fault) Annotation {
	key, value := faults.Annotation(i.Name, event, f)
	return Annotation{Key: key, Value: value}
}

// ErrorText is the message of the error the instance returns for an
// "error" fault in event for pod (and container, for container events).
func (i Instance) ErrorText(event string, pod *v1.Pod, container string) string {
	return plugin.Message(i.Name, i.Index, plugin.InjectedError, event, pod.Namespace, pod.Name, container)
}

// Annotation is one pod annotation.
type Annotation struct {
	Key, Value string
}

// Annotations collects annotations into the map a pod carries; nil for
// none.
func Annotations(annotations ...Annotation) map[string]string {
	if len(annotations) == 0 {
		return nil
	}
	m := make(map[string]string, len(annotations))
	for _, a := range annotations {
		m[a.Key] = a.Value
	}
	return m
}

// Client reaches one deployment of the fake plugin (fixtures/nri in
// namespace).
type Client struct {
	pods      *podproxy.Pods
	cs        kubernetes.Interface
	namespace string
}

// New returns the client of the deployment in namespace.
func New(pods *podproxy.Pods, namespace string) *Client {
	return &Client{pods: pods, cs: pods.ClientSet(), namespace: namespace}
}

// Namespace is where the deployment runs.
func (c *Client) Namespace() string { return c.namespace }

// Pod returns the fake plugin's pod on node.
func (c *Client) Pod(ctx context.Context, node string) (*v1.Pod, error) {
	return podproxy.PodOnNode(ctx, c.cs, c.namespace, Selector, node)
}

// Pods lists the fake plugin's pods, one per node (also those being
// deleted).
func (c *Client) Pods(ctx context.Context) ([]v1.Pod, error) {
	list, err := c.cs.CoreV1().Pods(c.namespace).List(ctx, metav1.ListOptions{LabelSelector: Selector})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// On is the instance inst on node.
func (c *Client) On(node string, inst Instance) Plugin {
	return Plugin{c: c, Node: node, Instance: inst}
}

// RuntimeState returns the sandboxes and containers the runtime of node
// holds for the pod with podUID, as its CRI API lists them.
func (c *Client) RuntimeState(ctx context.Context, node, podUID string) (*runtimestate.State, error) {
	pod, err := c.Pod(ctx, node)
	if err != nil {
		return nil, err
	}
	var s runtimestate.State
	if err := c.pods.GetJSON(ctx, pod, RuntimeStatePort, "/runtime", map[string]string{"podUID": podUID}, &s); err != nil {
		return nil, fmt.Errorf("runtime state on %s: %w", node, err)
	}
	return &s, nil
}

// WaitReady waits until every given instance on node is registered with
// the runtime again, e.g. after a spec made the runtime drop one (polling
// every second with e2e-framework's wait.For).
func (c *Client) WaitReady(ctx context.Context, node string, timeout time.Duration, insts ...Instance) error {
	var last []string
	err := wait.For(func(ctx context.Context) (bool, error) {
		last = last[:0]
		for _, inst := range insts {
			ok, why, err := c.On(node, inst).Ready(ctx)
			if err != nil {
				why = err.Error()
			}
			if !ok {
				last = append(last, why)
			}
		}
		return len(last) == 0, nil
	}, wait.WithContext(ctx), wait.WithTimeout(timeout), wait.WithInterval(time.Second), wait.WithImmediate())
	if err != nil {
		return fmt.Errorf("plugin instances on %s not registered with the runtime within %s: %s: %w", node, timeout, strings.Join(last, "; "), err)
	}
	return nil
}

// Plugin is one instance of the fake plugin on one node.
type Plugin struct {
	c        *Client
	Node     string
	Instance Instance
}

func (p Plugin) String() string { return p.Instance.String() + " on " + p.Node }

// Events returns what the instance recorded about the pod with podUID, in
// arrival order.
func (p Plugin) Events(ctx context.Context, podUID string) ([]record.Event, error) {
	return p.events(ctx, map[string]string{"podUID": podUID})
}

// OwnEvents returns what the instance recorded about itself (PluginStart,
// Synchronize, Disconnected, Shutdown) and every pod.
func (p Plugin) OwnEvents(ctx context.Context) ([]record.Event, error) {
	return p.events(ctx, nil)
}

func (p Plugin) events(ctx context.Context, query map[string]string) ([]record.Event, error) {
	pod, err := p.c.Pod(ctx, p.Node)
	if err != nil {
		return nil, err
	}
	var out []record.Event
	if err := p.c.pods.GetJSON(ctx, pod, p.Instance.Port, "/events", query, &out); err != nil {
		return nil, fmt.Errorf("record of %s: %w", p, err)
	}
	return out, nil
}

// Ready reports whether the instance is registered with the runtime: its
// container runs and its /healthz (what its readiness probe asks) answers
// now. Not the container's Ready condition, which lags by up to a probe
// period; and describes its state.
func (p Plugin) Ready(ctx context.Context) (bool, string, error) {
	pod, err := p.c.Pod(ctx, p.Node)
	if err != nil {
		return false, "", err
	}
	inst := p.Instance
	for _, st := range pod.Status.ContainerStatuses {
		if st.Name != inst.Container {
			continue
		}
		state := fmt.Sprintf("%s: restarts=%d state=%s", inst, st.RestartCount, ContainerState(st.State))
		if st.State.Running == nil {
			return false, state, nil
		}
		ok, why, err := p.c.pods.Probe(ctx, pod, inst.Port, "/healthz")
		if err != nil || !ok {
			return false, state + ": " + why, err
		}
		return true, state + ", registered", nil
	}
	return false, fmt.Sprintf("%s: no status for container %q yet", inst, inst.Container), nil
}

// ContainerState renders a container's state for messages.
func ContainerState(s v1.ContainerState) string {
	switch {
	case s.Running != nil:
		return "running"
	case s.Waiting != nil:
		return "waiting (" + s.Waiting.Reason + ")"
	case s.Terminated != nil:
		return fmt.Sprintf("terminated (%s, exit %d)", s.Terminated.Reason, s.Terminated.ExitCode)
	}
	return "unknown"
}

// Only returns the records of one event.
func Only(events []record.Event, event string) []record.Event {
	var out []record.Event
	for _, e := range events {
		if e.Event == event {
			out = append(out, e)
		}
	}
	return out
}

// Results lists the results of the records of one event, in arrival order.
func Results(events []record.Event, event string) []record.Result {
	out := []record.Result{}
	for _, e := range Only(events, event) {
		out = append(out, e.Result)
	}
	return out
}

// FormatEvents renders records one per line, for messages and dumps.
func FormatEvents(events []record.Event) string {
	var b strings.Builder
	for _, e := range events {
		fmt.Fprintf(&b, "  #%d boot %d %s %s", e.Seq, e.Boot, e.Event, e.Result)
		if e.ContainerName != "" {
			fmt.Fprintf(&b, " container %s", e.ContainerName)
		}
		if e.ContainerID != "" {
			fmt.Fprintf(&b, " id %.12s", e.ContainerID)
		}
		if e.PodSandboxID != "" {
			fmt.Fprintf(&b, " sandbox %.12s", e.PodSandboxID)
		}
		if e.Fault != "" {
			fmt.Fprintf(&b, " fault %q", e.Fault)
		}
		if e.Interrupted {
			b.WriteString(" interrupted")
		}
		if !e.End.IsZero() {
			fmt.Fprintf(&b, " took %s", e.End.Sub(e.Start).Round(time.Millisecond))
		}
		if e.Message != "" {
			fmt.Fprintf(&b, ": %s", e.Message)
		}
		b.WriteString("\n")
	}
	return b.String()
}
