package deploy

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	apimachinerywait "k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/faultline-k8s/faultline/fixtures"
	"github.com/faultline-k8s/faultline/nodesetup"
)

func renderDaemonSet(t *testing.T, v fixtures.Values) *unstructured.Unstructured {
	t.Helper()
	objects, err := fixtures.Render(FixtureSet, v)
	if err != nil {
		t.Fatal(err)
	}
	var ds *unstructured.Unstructured
	kinds := map[string]bool{}
	for _, o := range objects {
		kinds[o.GetKind()] = true
		if o.GetKind() == "DaemonSet" {
			ds = o
		}
		if o.GetLabels()["app.kubernetes.io/part-of"] != "faultline" {
			t.Errorf("%s %s lacks the part-of label faultline cleanup finds it by", o.GetKind(), o.GetName())
		}
	}
	for _, k := range []string{"Namespace", "NetworkPolicy", "DaemonSet"} {
		if !kinds[k] {
			t.Errorf("no %s among %v", k, kinds)
		}
	}
	if ds == nil || ds.GetName() != DaemonSet || ds.GetNamespace() != v.Namespace {
		t.Fatalf("DaemonSet %v", ds)
	}
	return ds
}

func TestDaemonSet(t *testing.T) {
	ds := renderDaemonSet(t, fixtures.Values{Namespace: Namespace, Image: "faultline/fakes:abc", PullPolicy: "IfNotPresent",
		NodeSelector: map[string]string{"pool": "faultline"}, Extra: map[string]string{"Mode": "remove", "Runtime": "crio"}})
	spec, _, _ := unstructured.NestedMap(ds.Object, "spec", "template", "spec")
	if sel, _, _ := unstructured.NestedStringMap(spec, "nodeSelector"); len(sel) != 2 || sel["kubernetes.io/os"] != "linux" || sel["pool"] != "faultline" {
		t.Errorf("nodeSelector %v", sel)
	}
	if hostPID, _, _ := unstructured.NestedBool(spec, "hostPID"); !hostPID {
		t.Error("hostPID: node-setup proves the restart by the runtime's PID")
	}
	if token, found, _ := unstructured.NestedBool(spec, "automountServiceAccountToken"); !found || token {
		t.Error("the pod needs no service account token")
	}
	tolerations, _, _ := unstructured.NestedSlice(spec, "tolerations")
	if len(tolerations) != 1 || tolerations[0].(map[string]any)["key"] != "node-role.kubernetes.io/control-plane" {
		t.Errorf("tolerations %v", tolerations)
	}
	containers, _, _ := unstructured.NestedSlice(spec, "containers")
	c := containers[0].(map[string]any)
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	if len(args) < 2 || args[0] != "remove" || args[1] != "--runtime=crio" || !slices.Contains(args, "--root=/host") {
		t.Errorf("args %v", args)
	}
	if p, _, _ := unstructured.NestedBool(c, "securityContext", "privileged"); !p {
		t.Error("privileged")
	}
	probe, _, _ := unstructured.NestedStringSlice(c, "readinessProbe", "exec", "command")
	if len(probe) < 2 || probe[0] != "/usr/local/bin/node-setup" || probe[1] != "ready" {
		t.Errorf("readiness probe %v", probe)
	}
	if ports, found, _ := unstructured.NestedSlice(c, "ports"); found {
		t.Errorf("nothing listens, so no ports: %v", ports)
	}
	volumes, _, _ := unstructured.NestedSlice(spec, "volumes")
	if p, _, _ := unstructured.NestedString(volumes[0].(map[string]any), "hostPath", "path"); p != "/" {
		t.Errorf("the host volume is %q, want the node's /", p)
	}
}

// Without Mode and Runtime (faultline cleanup renders every set so) the
// DaemonSet installs, each pod finding its node's runtime.
func TestDaemonSetDefaults(t *testing.T) {
	ds := renderDaemonSet(t, fixtures.Values{Namespace: "faultline-test", Image: "faultline/fakes:abc", PullPolicy: "IfNotPresent"})
	containers, _, _ := unstructured.NestedSlice(ds.Object, "spec", "template", "spec", "containers")
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	if len(args) < 2 || args[0] != "install" || args[1] != "--runtime=auto" {
		t.Errorf("args %v", args)
	}
	if sel, _, _ := unstructured.NestedStringMap(ds.Object, "spec", "template", "spec", "nodeSelector"); len(sel) != 1 || sel["kubernetes.io/os"] != "linux" {
		t.Errorf("nodeSelector %v", sel)
	}
}

type fakeApplier struct {
	created, deleted int
}

func (f *fakeApplier) Create(context.Context, []*unstructured.Unstructured) error {
	f.created++
	return nil
}

func (f *fakeApplier) Delete(context.Context, []*unstructured.Unstructured) error {
	f.deleted++
	return nil
}

func (f *fakeApplier) Deleted([]*unstructured.Unstructured) apimachinerywait.ConditionWithContextFunc {
	return func(context.Context) (bool, error) { return true, nil }
}

func testNode(name, runtime string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/os": "linux"}},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status:     corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{ContainerRuntimeVersion: runtime}},
	}
}

func daemonSet(desired int32) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: DaemonSet, Namespace: Namespace, Generation: 1},
		Status:     appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: desired, CurrentNumberScheduled: desired},
	}
}

func pod(node string, ready bool, status ...corev1.ContainerStatus) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "node-setup-" + node, Namespace: Namespace, Labels: map[string]string{"app.kubernetes.io/name": "node-setup"}},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: status},
	}
	if ready {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	return p
}

func cluster(logs map[string]string, objects ...runtimeObject) (*Cluster, *fakeApplier) {
	cs := fake.NewClientset(toRuntime(objects)...)
	a := &fakeApplier{}
	return &Cluster{cs: cs, applier: a, logs: func(_ context.Context, pod *corev1.Pod, previous bool) ([]byte, error) {
		key := pod.Spec.NodeName
		if previous {
			key += "/previous"
		}
		log, ok := logs[key]
		if !ok {
			return nil, errors.New("no log")
		}
		return []byte(log), nil
	}}, a
}

func reportLine(node string, changes ...nodesetup.Change) string {
	return nodesetup.Report{Node: node, Mode: nodesetup.ModeInstall, Handler: nodesetup.HandlerListed, Restarted: len(changes) > 0,
		RestartReason: "its configuration changed", Result: nodesetup.Result{Runtime: "containerd", Changes: changes}}.Line()
}

var quick = Options{Image: "faultline/fakes:abc", Timeout: 2 * time.Second, Poll: 10 * time.Millisecond}

func TestInstall(t *testing.T) {
	c, a := cluster(map[string]string{
		"cp":     "node-setup: installing\n" + reportLine("cp", nodesetup.Change{Path: nodesetup.RuncSlowPath, Action: nodesetup.Created}) + "\nready\n",
		"worker": reportLine("worker"),
	}, testNode("worker", "containerd://2.4.2"), testNode("cp", "containerd://2.4.2"), daemonSet(2), pod("cp", true), pod("worker", true))
	results, err := c.Run(context.Background(), nodesetup.ModeInstall, quick)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 || results[0].Node != "cp" || results[1].Node != "worker" {
		t.Fatalf("results %+v", results)
	}
	if s := results[0].Summary(); !strings.Contains(s, "cp (containerd://2.4.2): created "+nodesetup.RuncSlowPath) || !strings.Contains(s, "restarted containerd") {
		t.Errorf("summary %q", s)
	}
	if s := results[1].Summary(); !strings.Contains(s, "nothing changed") {
		t.Errorf("summary %q", s)
	}
	if a.created != 1 || a.deleted != 0 {
		t.Errorf("install: %d creates, %d deletes; the DaemonSet must stay", a.created, a.deleted)
	}
}

func TestRemoveDeletesTheSetAfterwards(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	c, a := cluster(map[string]string{"n": reportLine("n")}, ns, testNode("n", "cri-o://1.36.2"), daemonSet(1), pod("n", true))
	if _, err := c.Run(context.Background(), nodesetup.ModeRemove, quick); err != nil {
		t.Fatal(err)
	}
	// The install's DaemonSet first, then the remove's own.
	if a.created != 1 || a.deleted != 2 {
		t.Errorf("remove: %d creates, %d deletes", a.created, a.deleted)
	}
}

func TestFailures(t *testing.T) {
	crashed := corev1.ContainerStatus{Name: DaemonSet, RestartCount: 2,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}
	pull := corev1.ContainerStatus{Name: DaemonSet, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "not found"}}}
	taint := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	c, a := cluster(map[string]string{"crash/previous": "node-setup install on node crash: /etc/containerd/config.toml: version 1 is not supported\n", "fine": reportLine("fine")},
		testNode("crash", "containerd://2.4.2"), testNode("pull", "containerd://2.4.2"), testNode("tainted", "containerd://2.4.2", taint), testNode("fine", "containerd://2.4.2"),
		daemonSet(3), pod("crash", false, crashed), pod("pull", false, pull), pod("fine", true))
	results, err := c.Run(context.Background(), nodesetup.ModeRemove, quick)
	if err == nil || !strings.Contains(err.Error(), "failed on 3 of 4 node(s): crash, pull, tainted") {
		t.Fatalf("err = %v", err)
	}
	want := map[string]string{
		"crash":   "version 1 is not supported",
		"pull":    "ImagePullBackOff: not found",
		"tainted": "dedicated=gpu:NoSchedule",
	}
	for _, r := range results {
		if w, ok := want[r.Node]; ok && (r.Err == nil || !strings.Contains(r.Err.Error(), w)) {
			t.Errorf("%s: %v, want %q", r.Node, r.Err, w)
		}
		if r.Node == "fine" && r.Err != nil {
			t.Errorf("fine: %v", r.Err)
		}
	}
	if a.deleted == 0 {
		t.Error("a failed remove must delete its DaemonSet: the kubelet would restart its failed pods, and the runtime with them")
	}
}

func TestSelectNodes(t *testing.T) {
	for name, tc := range map[string]struct {
		nodes   []*corev1.Node
		runtime string
		err     string
	}{
		"one runtime": {[]*corev1.Node{testNode("a", "cri-o://1.36.2"), testNode("b", "cri-o://1.36.2")}, "crio", ""},
		"mixed":       {[]*corev1.Node{testNode("a", "cri-o://1.36.2"), testNode("b", "containerd://2.4.2")}, "auto", ""},
		"unknown":     {[]*corev1.Node{testNode("a", "docker://28.0")}, "", "node a: unknown runtime \"docker\""},
		"none":        {nil, "", "no node matches kubernetes.io/os=linux"},
	} {
		t.Run(name, func(t *testing.T) {
			var objs []runtimeObject
			for _, n := range tc.nodes {
				objs = append(objs, n)
			}
			c, _ := cluster(nil, objs...)
			_, rt, err := c.selectNodes(context.Background(), labelsOS())
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || rt != tc.runtime {
				t.Errorf("runtime %q, %v; want %q", rt, err, tc.runtime)
			}
		})
	}
}

func TestReadyPodWithoutReport(t *testing.T) {
	c, _ := cluster(map[string]string{"n": "no report here\n"}, testNode("n", "containerd://2.4.2"), daemonSet(1), pod("n", true))
	results, err := c.Run(context.Background(), nodesetup.ModeInstall, quick)
	if err == nil || len(results) != 1 || results[0].Err == nil || !strings.Contains(results[0].Err.Error(), "no report line") {
		t.Errorf("%v, %+v", err, results)
	}
}

func TestTimeoutSaysWhatItWaitsFor(t *testing.T) {
	running := corev1.ContainerStatus{Name: DaemonSet, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	c, _ := cluster(nil, testNode("slow", "containerd://2.4.2"), daemonSet(1), pod("slow", false, running))
	opts := quick
	opts.Timeout = 50 * time.Millisecond
	_, err := c.Run(context.Background(), nodesetup.ModeInstall, opts)
	if err == nil || !strings.Contains(err.Error(), "slow: node-setup running") {
		t.Errorf("err = %v", err)
	}
}

func TestBadOptions(t *testing.T) {
	c, _ := cluster(nil)
	if _, err := c.Run(context.Background(), "upgrade", quick); err == nil {
		t.Error("an unknown mode must be an error")
	}
	if _, err := c.Run(context.Background(), nodesetup.ModeInstall, Options{}); err == nil {
		t.Error("no image must be an error")
	}
}

type runtimeObject = k8sruntime.Object

func toRuntime(objs []runtimeObject) []k8sruntime.Object { return objs }

func labelsOS() labels.Selector { return labels.SelectorFromSet(fixtures.NodeSelectorOf(nil)) }
