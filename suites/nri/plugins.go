package nri

// The suite's glue to the fake NRI plugin deployment (fixtures/nri): its
// typed client (fakes/nri/nriclient: instances, records, runtime state,
// fault annotations) bound to the suite's namespace, and the dump of what
// the plugins and the runtime know about a pod when a spec fails.

import (
	"context"
	"encoding/json"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/test/e2e/framework"

	"github.com/faultline-k8s/faultline/fakes/nri/nriclient"
	"github.com/faultline-k8s/faultline/fakes/nri/record"
	"github.com/faultline-k8s/faultline/suites/harness"
)

// PluginNamespace is where the suite deploys the "nri" fixture set.
const PluginNamespace = "faultline-nri-plugins"

// Instance is one fake NRI plugin instance of the DaemonSet.
type Instance = nriclient.Instance

// The instances, in the runtime's call order (by index): A, P, B, K, C.
// P and K declare a failure policy (failure_policy.go); the others none.
var (
	A = nriclient.A
	P = nriclient.P
	B = nriclient.B
	K = nriclient.K
	C = nriclient.C

	Instances = nriclient.Instances
)

// plugins is the client of the suite's plugin deployment.
func plugins() *nriclient.Client {
	return nriclient.New(harness.FakePods(), PluginNamespace)
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
		c := plugins()
		for _, inst := range Instances {
			events, err := c.On(node, inst).Events(ctx, uid)
			if err != nil {
				framework.Logf("%s record of pod %s: %v", inst, uid, err)
				continue
			}
			framework.Logf("%s record of pod %s/%s (%s):\n%s", inst, pod.Namespace, pod.Name, uid, nriclient.FormatEvents(events))
			own, err := c.On(node, inst).OwnEvents(ctx)
			if err == nil {
				var mine []record.Event
				for _, e := range own {
					if e.PodUID == "" {
						mine = append(mine, e)
					}
				}
				framework.Logf("%s connection record:\n%s", inst, nriclient.FormatEvents(mine))
			}
		}
		if s, err := c.RuntimeState(ctx, node, uid); err != nil {
			framework.Logf("runtime state of pod %s: %v", uid, err)
		} else {
			raw, _ := json.MarshalIndent(s, "", "  ")
			framework.Logf("runtime state of pod %s:\n%s", uid, raw)
		}
		if pp, err := c.Pod(ctx, node); err == nil {
			for _, inst := range Instances {
				framework.Logf("%s log lines about the pod:\n%s", inst,
					harness.LogLinesMentioning(ctx, cs, pp, inst.Container, uid, pod.Name))
			}
		}
	})
}
