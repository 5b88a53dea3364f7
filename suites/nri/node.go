package nri

// The node side: which runtime runs there, where its CRI socket is, how long
// its mechanisms take (the timeouts the specs wait with), and the runtime
// behaviours known to depart from the NRI design.

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/test/e2e/framework"

	"github.com/faultline-k8s/faultline/suites/harness"
)

// The mechanisms the specs wait for, and how long each takes at most.
const (
	// kubeletRetry is how long the kubelet's pod worker waits before it
	// syncs a pod again after a failed sync (a failed RunPodSandbox,
	// CreateContainer, resize...): backOffPeriod 10 s plus up to 50 % jitter.
	kubeletRetry = 15 * time.Second
	// podStart bounds starting a pod whose image is on the node already
	// (the fakes image is loaded or pulled once by the DaemonSet).
	podStart = time.Minute
	// podDeletion bounds the kubelet stopping a pod deleted without grace
	// period and the API server dropping it.
	podDeletion = time.Minute
	// containerGCPeriod is the kubelet's garbage collection period: dead
	// containers and sandboxes of deleted pods are removed by it.
	containerGCPeriod = time.Minute
	// registrationTimeout is the runtime's NRI registration timeout
	// (containerd plugin_registration_timeout, default 5 s).
	registrationTimeout = 5 * time.Second
	// reconnectMax is the fake plugin's longest wait between reconnects.
	reconnectMax = 5 * time.Second
	// crashLoopBackOff is the kubelet's first restart back-off of a
	// crashed container; it doubles with each crash.
	crashLoopBackOff = 10 * time.Second
	// readinessPeriod is the plugin containers' readiness probe period.
	readinessPeriod = 2 * time.Second
)

// retryTimeout bounds a pod whose first failures CRI requests fail: each
// failure costs a kubelet retry, then the pod starts.
func retryTimeout(failures int) time.Duration {
	return time.Duration(failures)*(kubeletRetry+harness.Flags.NRIRequestTimeout) + podStart
}

// reregisterTimeout bounds an instance's return after the runtime dropped
// it: its reconnect back-off, registration, then the readiness probe.
func reregisterTimeout() time.Duration {
	return reconnectMax + registrationTimeout + 2*readinessPeriod + harness.Flags.NRIRequestTimeout + 15*time.Second
}

// restartTimeout bounds an instance's return after it crashed: the
// kubelet's restart back-off (the suite crashes an instance at most twice),
// then re-registration.
func restartTimeout() time.Duration {
	return 2*crashLoopBackOff + reregisterTimeout()
}

// deletionTimeout bounds the complete removal of a deleted pod from the
// runtime: its containers and sandbox go with the kubelet's garbage
// collection, which runs every containerGCPeriod.
func deletionTimeout() time.Duration {
	return 2*containerGCPeriod + 30*time.Second
}

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
	if want := harness.Flags.Runtime; want != "" && normalizeRuntime(want) != normalizeRuntime(name) {
		framework.Logf("--faultline.runtime=%s, but node %s runs %s; using the node's", want, node, rt)
	}
	return rt, nil
}

func normalizeRuntime(name string) string {
	return strings.ReplaceAll(strings.ToLower(name), "-", "")
}

// knownDiscrepancies are the runtime behaviours known to depart from what
// the NRI design implies ("if a plugin returns an error for a request, NRI
// ... returns the error to the runtime, and the runtime fails the pod or
// container operation"), by runtime and requirement. A spec that sees one
// fails with its text, so the report names it instead of hiding it.
var knownDiscrepancies = map[string]map[string]string{
	"containerd": {
		"StopPodSandbox": "StopPodSandbox plugin errors are only logged " +
			`("NRI sandbox stop notification failed", internal/cri/server/sandbox_stop.go); the CRI StopPodSandbox request succeeds`,
	},
	"cri-o": {
		"StartContainer": "StartContainer plugin errors are only logged as a warning; the container starts",
	},
}

// Discrepancy is the failure message for a runtime that departs from the
// NRI design for requirement: "known discrepancy <runtime>: ..." when the
// departure is known, else "discrepancy <runtime> (not known before): ...".
func Discrepancy(rt Runtime, requirement, observed string) string {
	if known, ok := knownDiscrepancies[normalizeKnown(rt.Name)][requirement]; ok {
		return fmt.Sprintf("known discrepancy %s: %s (runtime %s; observed: %s)", rt.Name, known, rt, observed)
	}
	return fmt.Sprintf("discrepancy %s (not known before): %s (runtime %s)", rt.Name, observed, rt)
}

func normalizeKnown(name string) string {
	if normalizeRuntime(name) == "crio" {
		return "cri-o"
	}
	return name
}

// criSocket returns the directory and file name of the node's CRI socket,
// from the kubelet's configuration (containerRuntimeEndpoint), else the
// runtime's default.
func criSocket(ctx context.Context, cs clientset.Interface, node string) (dir, file string, err error) {
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
	switch normalizeRuntime(rt.Name) {
	case "containerd":
		return "/run/containerd", "containerd.sock", nil
	case "crio":
		return "/var/run/crio", "crio.sock", nil
	}
	return "", "", fmt.Errorf("node %s runs %s: no known CRI socket", node, rt)
}

// schedulableNode returns a node test pods can land on, for the deployment.
func schedulableNode(ctx context.Context, cs clientset.Interface) (string, error) {
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
