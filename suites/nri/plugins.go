package nri

// What the specs need from the fake NRI plugin deployment (fixtures/nri):
// its instances, their event records, the runtime's state for a pod, and
// waiting for an instance to be registered with the runtime again.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/test/e2e/framework"

	"github.com/faultline-k8s/faultline/drivers/fake/nri/faults"
	"github.com/faultline-k8s/faultline/drivers/fake/nri/plugin"
	"github.com/faultline-k8s/faultline/drivers/fake/nri/record"
	"github.com/faultline-k8s/faultline/drivers/fake/nri/runtimestate"
	"github.com/faultline-k8s/faultline/suites/harness"
)

// PluginNamespace is where the suite deploys the "nri" fixture set.
const PluginNamespace = "faultline-nri-plugins"

// pluginSelector selects the fake plugin's pods (one per node).
const pluginSelector = "app.kubernetes.io/name=fake-nri-plugin"

// Instance is one fake NRI plugin instance of the DaemonSet.
type Instance struct {
	Name, Index string
	// Container of the DaemonSet pod, and its HTTP port.
	Container, Port string
}

// The instances, in the runtime's call order (by index).
var (
	A = Instance{Name: "faultline-a", Index: "10", Container: "a", Port: "8080"}
	B = Instance{Name: "faultline-b", Index: "20", Container: "b", Port: "8081"}
	C = Instance{Name: "faultline-c", Index: "30", Container: "c", Port: "8082"}

	Instances = []Instance{A, B, C}
)

// runtimeStateContainer serves the runtime's CRI view of a pod (package
// runtimestate) on runtimeStatePort.
const (
	runtimeStateContainer = "runtime-state"
	runtimeStatePort      = "8083"
)

func (i Instance) String() string { return i.Index + "-" + i.Name }

// Key is the annotation key of the instance's fault in event: the pod
// annotation Key(event)="error;times=2" makes it fail event twice.
func (i Instance) Key(event string) string {
	return faults.Key(i.Name, event)
}

// ErrorText is the message of the error the instance returns for an
// "error" fault in event for pod (and container, for container events).
func (i Instance) ErrorText(event string, pod *v1.Pod, container string) string {
	return plugin.Message(i.Name, i.Index, plugin.InjectedError, event, pod.Namespace, pod.Name, container)
}

// PluginPod returns the fake plugin's pod on node.
func PluginPod(ctx context.Context, cs clientset.Interface, node string) (*v1.Pod, error) {
	return harness.PodOnNode(ctx, cs, PluginNamespace, pluginSelector, node)
}

// Events returns what the instance on node recorded about the pod with
// podUID, in arrival order.
func Events(ctx context.Context, cs clientset.Interface, node string, inst Instance, podUID string) ([]record.Event, error) {
	return readEvents(ctx, cs, node, inst, map[string]string{"podUID": podUID})
}

// OwnEvents returns what the instance recorded about itself (PluginStart,
// Synchronize, Disconnected, Shutdown) and every pod.
func OwnEvents(ctx context.Context, cs clientset.Interface, node string, inst Instance) ([]record.Event, error) {
	return readEvents(ctx, cs, node, inst, nil)
}

func readEvents(ctx context.Context, cs clientset.Interface, node string, inst Instance, query map[string]string) ([]record.Event, error) {
	pod, err := PluginPod(ctx, cs, node)
	if err != nil {
		return nil, err
	}
	raw, err := harness.ProxyGet(ctx, cs, pod, inst.Port, "events", query)
	if err != nil {
		return nil, fmt.Errorf("GET /events of %s on %s: %w", inst, node, err)
	}
	var out []record.Event
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("GET /events of %s on %s: %w: %.200s", inst, node, err, raw)
	}
	return out, nil
}

// RuntimeState returns the sandboxes and containers the runtime of node
// holds for the pod with podUID, as its CRI API lists them.
func RuntimeState(ctx context.Context, cs clientset.Interface, node, podUID string) (*runtimestate.State, error) {
	pod, err := PluginPod(ctx, cs, node)
	if err != nil {
		return nil, err
	}
	raw, err := harness.ProxyGet(ctx, cs, pod, runtimeStatePort, "runtime", map[string]string{"podUID": podUID})
	if err != nil {
		return nil, fmt.Errorf("GET /runtime on %s: %w", node, err)
	}
	var s runtimestate.State
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("GET /runtime on %s: %w: %.200s", node, err, raw)
	}
	return &s, nil
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

// InstanceReady reports whether the instance's container on node is Ready,
// i.e. registered with the runtime (its readiness probe is /healthz).
func InstanceReady(ctx context.Context, cs clientset.Interface, node string, inst Instance) (bool, string, error) {
	pod, err := PluginPod(ctx, cs, node)
	if err != nil {
		return false, "", err
	}
	for _, st := range pod.Status.ContainerStatuses {
		if st.Name == inst.Container {
			return st.Ready, fmt.Sprintf("%s: ready=%v restarts=%d state=%s", inst, st.Ready, st.RestartCount, containerState(st.State)), nil
		}
	}
	return false, fmt.Sprintf("%s: no status for container %q yet", inst, inst.Container), nil
}

// WaitInstancesReady waits until every given instance on node is registered
// with the runtime again, e.g. after a spec made the runtime drop one.
func WaitInstancesReady(ctx context.Context, cs clientset.Interface, node string, timeout time.Duration, insts ...Instance) error {
	var last []string
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		last = last[:0]
		for _, inst := range insts {
			ok, why, err := InstanceReady(ctx, cs, node, inst)
			if err != nil {
				why = err.Error()
			}
			if !ok {
				last = append(last, why)
			}
		}
		return len(last) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("plugin instances on %s not registered with the runtime within %s: %s: %w", node, timeout, strings.Join(last, "; "), err)
	}
	return nil
}

func containerState(s v1.ContainerState) string {
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

// DumpOnFailure registers a dump of everything the plugins and the runtime
// know about pod, for when the spec fails: every instance's record of the
// pod, the runtime's sandboxes and containers, and the plugin log lines
// that mention the pod. The framework dumps the namespace's events and pods.
func DumpOnFailure(cs clientset.Interface, pod *v1.Pod) {
	harness.OnFailure(func(ctx context.Context) {
		uid := string(pod.UID)
		node := pod.Spec.NodeName
		if node == "" {
			if p, err := cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{}); err == nil {
				node = p.Spec.NodeName
			}
		}
		if node == "" {
			framework.Logf("pod %s/%s was never scheduled: nothing to dump from the plugins", pod.Namespace, pod.Name)
			return
		}
		for _, inst := range Instances {
			events, err := Events(ctx, cs, node, inst, uid)
			if err != nil {
				framework.Logf("%s record of pod %s: %v", inst, uid, err)
				continue
			}
			framework.Logf("%s record of pod %s/%s (%s):\n%s", inst, pod.Namespace, pod.Name, uid, FormatEvents(events))
			own, err := OwnEvents(ctx, cs, node, inst)
			if err == nil {
				var mine []record.Event
				for _, e := range own {
					if e.PodUID == "" {
						mine = append(mine, e)
					}
				}
				framework.Logf("%s connection record:\n%s", inst, FormatEvents(mine))
			}
		}
		if s, err := RuntimeState(ctx, cs, node, uid); err != nil {
			framework.Logf("runtime state of pod %s: %v", uid, err)
		} else {
			raw, _ := json.MarshalIndent(s, "", "  ")
			framework.Logf("runtime state of pod %s:\n%s", uid, raw)
		}
		if pp, err := PluginPod(ctx, cs, node); err == nil {
			for _, inst := range Instances {
				framework.Logf("%s log lines about the pod:\n%s", inst,
					harness.LogLinesMentioning(ctx, cs, pp, inst.Container, uid, pod.Name))
			}
		}
	})
}
