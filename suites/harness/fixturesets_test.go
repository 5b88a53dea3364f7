package harness

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	apimachinerywait "k8s.io/apimachinery/pkg/util/wait"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// fakeCluster is a fake cluster several registries (Ginkgo processes) share:
// the applier creates objects as the real one does (AlreadyExists for an
// object that exists), and a Namespace object makes the namespace exist.
type fakeCluster struct {
	mu       sync.Mutex
	cs       *fake.Clientset
	objects  map[string]bool
	creates  int
	deletes  int
	failWith error
}

func newFakeCluster() *fakeCluster {
	return &fakeCluster{cs: fake.NewClientset(), objects: map[string]bool{}}
}

func key(o *unstructured.Unstructured) string {
	return o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
}

func (c *fakeCluster) Create(ctx context.Context, objects []*unstructured.Unstructured) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failWith != nil {
		return c.failWith
	}
	for _, o := range objects {
		if c.objects[key(o)] {
			// as fixtures.Applier wraps it
			return fmt.Errorf("create %s %s: %w", o.GetKind(), o.GetName(),
				apierrors.NewAlreadyExists(schema.GroupResource{Resource: strings.ToLower(o.GetKind()) + "s"}, o.GetName()))
		}
		c.objects[key(o)] = true
		c.creates++
		switch o.GetKind() {
		case "Namespace":
			if _, err := c.cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.GetName()}}, metav1.CreateOptions{}); err != nil {
				return err
			}
		case "DaemonSet":
			// The controller's and the kubelet's work, done: one pod,
			// running and started.
			ds := fakeDaemonSet(o.GetNamespace(), o.GetName(), 1)
			if _, err := c.cs.AppsV1().DaemonSets(o.GetNamespace()).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
				return err
			}
			if _, err := c.cs.CoreV1().Pods(o.GetNamespace()).Create(ctx, startedPod(ds, o.GetName()+"-0"), metav1.CreateOptions{}); err != nil {
				return err
			}
		}
	}
	return nil
}

// fakeDaemonSet is a DaemonSet whose controller has seen it and wants
// desired pods, all updated and Ready.
func fakeDaemonSet(namespace, name string, desired int32) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Generation: 1, UID: types.UID("uid-" + name)},
		Status: appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: desired, UpdatedNumberScheduled: desired, NumberReady: desired}}
}

// startedPod is a pod of ds, running, its one container running and
// started, and Ready.
func startedPod(ds *appsv1.DaemonSet, name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ds.Namespace, Name: name,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: ptr.To(true)}}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}},
		Status: v1.PodStatus{Phase: v1.PodRunning,
			Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}},
			ContainerStatuses: []v1.ContainerStatus{{Name: "c", Ready: true, Started: ptr.To(true),
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}},
	}
}

func (c *fakeCluster) Delete(ctx context.Context, objects []*unstructured.Unstructured) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range objects {
		if !c.objects[key(o)] {
			continue
		}
		delete(c.objects, key(o))
		c.deletes++
		if o.GetKind() == "Namespace" {
			if err := c.cs.CoreV1().Namespaces().Delete(ctx, o.GetName(), metav1.DeleteOptions{}); err != nil {
				return err
			}
		}
	}
	return nil
}

// Deleted is done when none of the objects is left.
func (c *fakeCluster) Deleted(objects []*unstructured.Unstructured) apimachinerywait.ConditionWithContextFunc {
	return func(context.Context) (bool, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, o := range objects {
			if c.objects[key(o)] {
				return false, nil
			}
		}
		return true, nil
	}
}

func (c *fakeCluster) counts() (int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.creates, c.deletes
}

func render(set FixtureSet, extra map[string]string) ([]*unstructured.Unstructured, error) {
	obj := func(kind, ns, name string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{}
		o.SetKind(kind)
		o.SetNamespace(ns)
		o.SetName(name)
		return o
	}
	objects := []*unstructured.Unstructured{obj("Namespace", "", set.Namespace), obj("DaemonSet", set.Namespace, set.Name)}
	if socket := extra["CRISocket"]; socket != "" {
		objects = append(objects, obj("ConfigMap", set.Namespace, socket))
	}
	return objects, nil
}

// process is one Ginkgo process's registry on the fake cluster.
func (c *fakeCluster) process(t *testing.T, sets ...FixtureSet) (*registry, *strings.Builder) {
	t.Helper()
	var log strings.Builder
	r := newRegistry(func() (*setEnv, error) { return &setEnv{cs: c.cs, applier: c, render: render}, nil })
	r.poll = time.Millisecond
	r.logf = func(format string, args ...any) { fmt.Fprintf(&log, format+"\n", args...) }
	for _, s := range sets {
		if err := r.register(s); err != nil {
			t.Fatal(err)
		}
	}
	return r, &log
}

// flaky is a ReadyCheck that reports not ready for the next n calls.
type flaky struct {
	mu           sync.Mutex
	notReady     int
	calls        int
	unreadyCalls int
}

func (f *flaky) check(context.Context, clientset.Interface) (bool, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.notReady > 0 {
		f.notReady--
		f.unreadyCalls++
		return false, "plugin re-registering", nil
	}
	return true, "", nil
}

func (f *flaky) set(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notReady = n
}

func TestRequireDeploysOnceAndRemembersReady(t *testing.T) {
	ctx := context.Background()
	c := newFakeCluster()
	ready := &flaky{}
	set := FixtureSet{Name: "nri", Namespace: "faultline-nri", Ready: []ReadyCheck{ready.check},
		Values: func(context.Context, clientset.Interface) (map[string]string, error) {
			return map[string]string{"CRISocket": "containerd.sock"}, nil
		}}
	r, log := c.process(t, set)

	if err := r.require(ctx, "nri"); err != nil {
		t.Fatal(err)
	}
	if creates, _ := c.counts(); creates != 3 {
		t.Errorf("first Require created %d objects, want the set's 3 (with the Values' object)", creates)
	}
	if !strings.Contains(log.String(), "fixture set nri is ready") {
		t.Errorf("log:\n%s", log)
	}
	calls := ready.calls
	if err := r.require(ctx, "nri"); err != nil {
		t.Fatal(err)
	}
	if creates, _ := c.counts(); creates != 3 {
		t.Errorf("a second Require on the same process created objects again (%d creates)", creates)
	}
	if ready.calls != calls+1 {
		t.Errorf("a second Require must re-check readiness once: %d checks, want %d", ready.calls, calls+1)
	}
}

func TestRequireFromSeveralProcesses(t *testing.T) {
	ctx := context.Background()
	c := newFakeCluster()
	set := FixtureSet{Name: "dra", Namespace: "faultline-dra"}
	p1, _ := c.process(t, set)
	p2, _ := c.process(t, set)

	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, p := range []*registry{p1, p2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.require(ctx, "dra")
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("processes racing to deploy the same set must both succeed: %v", err)
	}
	if creates, _ := c.counts(); creates != 2 {
		t.Errorf("the set's 2 objects must be created once in all, got %d creates", creates)
	}
	// A third process joining later creates nothing and says nothing about
	// creating.
	p3, log3 := c.process(t, set)
	if err := p3.require(ctx, "dra"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log3.String(), "created") {
		t.Errorf("a process that found the set deployed must not claim to have created it:\n%s", log3)
	}
}

func TestRequireWaitsUntilReady(t *testing.T) {
	ctx := context.Background()
	c := newFakeCluster()
	ready := &flaky{notReady: 3}
	r, _ := c.process(t, FixtureSet{Name: "cri", Namespace: "faultline-cri", Ready: []ReadyCheck{ready.check}})
	if err := r.require(ctx, "cri"); err != nil {
		t.Fatal(err)
	}
	if ready.unreadyCalls != 3 {
		t.Errorf("Require returned after %d not-ready checks, want 3", ready.unreadyCalls)
	}
}

func TestRequireRechecksAfterADisturbance(t *testing.T) {
	ctx := context.Background()
	c := newFakeCluster()
	ready := &flaky{}
	r, log := c.process(t, FixtureSet{Name: "nri", Namespace: "faultline-nri", Ready: []ReadyCheck{ready.check}})
	if err := r.require(ctx, "nri"); err != nil {
		t.Fatal(err)
	}
	// Another spec restarted the runtime: the plugin re-registers.
	ready.set(2)
	if err := r.require(ctx, "nri"); err != nil {
		t.Fatal(err)
	}
	if ready.unreadyCalls != 2 {
		t.Errorf("Require must wait out the disturbance: %d not-ready checks, want 2", ready.unreadyCalls)
	}
	if !strings.Contains(log.String(), "fixture set nri is not ready (plugin re-registering)") ||
		!strings.Contains(log.String(), "fixture set nri is ready again") {
		t.Errorf("log:\n%s", log)
	}
	if creates, _ := c.counts(); creates != 2 {
		t.Errorf("re-checking must not deploy again: %d creates", creates)
	}
}

func TestRequireTimesOutNamingWhy(t *testing.T) {
	ctx := context.Background()
	c := newFakeCluster()
	ready := &flaky{notReady: 1 << 30}
	r, _ := c.process(t, FixtureSet{Name: "nri", Namespace: "faultline-nri", Ready: []ReadyCheck{ready.check}, Timeout: 30 * time.Millisecond})
	err := r.require(ctx, "nri")
	if err == nil || !strings.Contains(err.Error(), "not ready within 30ms (plugin re-registering)") {
		t.Errorf("want a timeout naming the last reason, got %v", err)
	}
	// Not remembered as ready: the next Require deploys (AlreadyExists) and waits again.
	if r.state["nri"].ready {
		t.Error("a set that never became ready must not be remembered as ready")
	}
}

func TestRequireErrors(t *testing.T) {
	ctx := context.Background()
	c := newFakeCluster()
	r, _ := c.process(t, FixtureSet{Name: "dra", Namespace: "faultline-dra"})
	if err := r.require(ctx, "nri"); err == nil || !strings.Contains(err.Error(), `unknown fixture set "nri"`) {
		t.Errorf("unknown set: %v", err)
	}
	c.failWith = apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "faultline-dra", errors.New("no"))
	if err := r.require(ctx, "dra"); err == nil || !apierrors.IsForbidden(err) {
		t.Errorf("a failing create must fail Require: %v", err)
	}
}

func TestDaemonSetsMustBeReady(t *testing.T) {
	ctx := context.Background()
	c := newFakeCluster()
	set := FixtureSet{Name: "dra", Namespace: "faultline-dra", Timeout: 30 * time.Millisecond}
	r, _ := c.process(t, set)
	if err := r.require(ctx, "dra"); err != nil {
		t.Fatal(err)
	}
	// Not Ready yet (the kubelet probes rarely): the set is ready all the
	// same, its probes are asked directly.
	ds, err := c.cs.AppsV1().DaemonSets("faultline-dra").Get(ctx, "dra", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ds.Status.NumberReady = 0
	if _, err := c.cs.AppsV1().DaemonSets("faultline-dra").UpdateStatus(ctx, ds, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := r.require(ctx, "dra"); err != nil {
		t.Errorf("a DaemonSet whose pods run and started must count as ready without the Ready condition: %v", err)
	}
	// Its container restarting: not ready.
	pod, err := c.cs.CoreV1().Pods("faultline-dra").Get(ctx, "dra-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.ContainerStatuses[0].Started = ptr.To(false)
	if _, err := c.cs.CoreV1().Pods("faultline-dra").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := r.require(ctx, "dra"); err == nil ||
		!strings.Contains(err.Error(), "DaemonSet dra: 1 desired, 1 updated, 0 pods running and started (pod dra-0: container c not started)") {
		t.Errorf("a DaemonSet whose pod has not started must keep the set from being ready: %v", err)
	}
}

// The DaemonSet check counts the DaemonSet's own pods that run with every
// container started, not the Ready condition, which lags a probe period
// behind (probesPassCheck asks the probes now).
func TestDaemonSetsReadyCheck(t *testing.T) {
	ctx := context.Background()
	const ns = "faultline-x"
	ds := fakeDaemonSet(ns, "fake", 2)
	other := fakeDaemonSet(ns, "other", 1)
	type change func(ds *appsv1.DaemonSet, pods []*v1.Pod) []*v1.Pod
	for _, tc := range []struct {
		name   string
		change change
		why    string // "" ready
	}{
		{name: "running and started", change: func(_ *appsv1.DaemonSet, pods []*v1.Pod) []*v1.Pod { return pods }},
		{name: "running and started but not Ready", change: func(ds *appsv1.DaemonSet, pods []*v1.Pod) []*v1.Pod {
			ds.Status.NumberReady = 0
			for _, p := range pods {
				p.Status.Conditions[0].Status = v1.ConditionFalse
				p.Status.ContainerStatuses[0].Ready = false
			}
			return pods
		}},
		{name: "another DaemonSet's pod besides", change: func(_ *appsv1.DaemonSet, pods []*v1.Pod) []*v1.Pod {
			return append(pods, startedPod(other, "other-0"))
		}},
		{name: "Started nil", why: "DaemonSet fake: 2 desired, 2 updated, 1 pods running and started (pod fake-1: container c not started)",
			change: func(_ *appsv1.DaemonSet, pods []*v1.Pod) []*v1.Pod {
				pods[1].Status.ContainerStatuses[0].Started = nil
				return pods
			}},
		{name: "Started false", why: "(pod fake-0: container c not started)", change: func(_ *appsv1.DaemonSet, pods []*v1.Pod) []*v1.Pod {
			pods[0].Status.ContainerStatuses[0].Started = ptr.To(false)
			return pods
		}},
		{name: "container waiting", why: "(pod fake-0: container c not running)", change: func(_ *appsv1.DaemonSet, pods []*v1.Pod) []*v1.Pod {
			pods[0].Status.ContainerStatuses[0].State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
			return pods
		}},
		{name: "container without status", why: "(pod fake-0: container d has no status)", change: func(_ *appsv1.DaemonSet, pods []*v1.Pod) []*v1.Pod {
			pods[0].Spec.Containers = append(pods[0].Spec.Containers, v1.Container{Name: "d"})
			return pods
		}},
		{name: "pending", why: "(pod fake-1: phase Pending)", change: func(_ *appsv1.DaemonSet, pods []*v1.Pod) []*v1.Pod {
			pods[1].Status.Phase = v1.PodPending
			return pods
		}},
		{name: "being deleted", why: "(pod fake-0: being deleted)", change: func(_ *appsv1.DaemonSet, pods []*v1.Pod) []*v1.Pod {
			pods[0].DeletionTimestamp = &metav1.Time{Time: time.Now()}
			pods[0].Finalizers = []string{"test"} // the fake keeps the object
			return pods
		}},
		{name: "missing", why: "DaemonSet fake: 2 desired, 2 updated, 1 pods running and started", change: func(_ *appsv1.DaemonSet, pods []*v1.Pod) []*v1.Pod {
			return pods[:1]
		}},
		{name: "missing, another DaemonSet's pod in its place", why: "1 pods running and started", change: func(_ *appsv1.DaemonSet, pods []*v1.Pod) []*v1.Pod {
			return append(pods[:1], startedPod(other, "other-0"))
		}},
		{name: "one too many", why: "3 pods running and started", change: func(ds *appsv1.DaemonSet, pods []*v1.Pod) []*v1.Pod {
			return append(pods, startedPod(ds, "fake-2"))
		}},
		{name: "generation not observed", why: "DaemonSet fake: generation 2 not observed yet (observed 1)", change: func(ds *appsv1.DaemonSet, pods []*v1.Pod) []*v1.Pod {
			ds.Generation = 2
			return pods
		}},
		{name: "not updated", why: "DaemonSet fake: 2 desired, 1 updated", change: func(ds *appsv1.DaemonSet, pods []*v1.Pod) []*v1.Pod {
			ds.Status.UpdatedNumberScheduled = 1
			return pods
		}},
		{name: "no pod desired", why: "DaemonSet fake: 0 desired, 0 updated", change: func(ds *appsv1.DaemonSet, _ []*v1.Pod) []*v1.Pod {
			ds.Status.DesiredNumberScheduled, ds.Status.UpdatedNumberScheduled, ds.Status.NumberReady = 0, 0, 0
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := ds.DeepCopy()
			pods := tc.change(ds, []*v1.Pod{startedPod(ds, "fake-0"), startedPod(ds, "fake-1")})
			cs := fake.NewClientset(ds)
			for _, p := range pods {
				if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			ok, why, err := daemonSetsReadyCheck(ns)(ctx, cs)
			if err != nil {
				t.Fatal(err)
			}
			if tc.why == "" {
				if !ok {
					t.Errorf("want ready, got not ready: %s", why)
				}
				return
			}
			if ok || !strings.Contains(why, tc.why) {
				t.Errorf("want not ready because %q, got ready=%v %q", tc.why, ok, why)
			}
		})
	}
	if ok, why, err := daemonSetsReadyCheck("empty")(ctx, fake.NewClientset()); ok || err != nil || why != "no DaemonSets in empty" {
		t.Errorf("a namespace without DaemonSets: %v %q %v", ok, why, err)
	}
}

func TestAwaitAndRemoveOnlyDeployedSets(t *testing.T) {
	ctx := context.Background()
	c := newFakeCluster()
	ready := &flaky{}
	nri := FixtureSet{Name: "nri", Namespace: "faultline-nri", Ready: []ReadyCheck{ready.check}}
	dra := FixtureSet{Name: "dra", Namespace: "faultline-dra", Timeout: 20 * time.Millisecond}
	p1, _ := c.process(t, nri, dra)
	p2, _ := c.process(t, nri, dra)
	if err := p2.require(ctx, "nri"); err != nil {
		t.Fatal(err)
	}
	// Process 1 waits for what any process deployed (nri), not for dra,
	// which nobody deployed and would never become ready.
	ready.set(2)
	if err := p1.await(ctx); err != nil {
		t.Fatalf("await: %v", err)
	}
	if ready.unreadyCalls != 2 {
		t.Errorf("await must wait for the deployed set: %d not-ready checks", ready.unreadyCalls)
	}

	// Process 1 removes what process 2 deployed, and only that.
	if err := p1.removeDeployed(ctx, "deployed by this run"); err != nil {
		t.Fatal(err)
	}
	if _, deletes := c.counts(); deletes != 2 {
		t.Errorf("removal deleted %d objects, want nri's 2", deletes)
	}
	if exists, _ := namespaceExists(ctx, c.cs, "faultline-nri"); exists {
		t.Error("the nri namespace must be gone")
	}
	if err := p1.removeDeployed(ctx, "again"); err != nil {
		t.Fatal(err)
	}
	if _, deletes := c.counts(); deletes != 2 {
		t.Errorf("nothing deployed, nothing to remove: %d deletes", deletes)
	}
}

func TestRegisterRejectsClashes(t *testing.T) {
	r := newRegistry(nil)
	if err := r.register(FixtureSet{Name: "nri", Namespace: "a"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []FixtureSet{{Name: "nri", Namespace: "b"}, {Name: "cri", Namespace: "a"}, {Name: "x"}} {
		if err := r.register(s); err == nil {
			t.Errorf("register %+v: want an error", s)
		}
	}
	if got := r.sets["nri"].Timeout; got != DefaultFixtureTimeout {
		t.Errorf("default timeout %s", got)
	}
}

func TestLoopbackProbe(t *testing.T) {
	exec := func(cmd ...string) *v1.Probe {
		return &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: cmd}}}
	}
	if port, path, ok := loopbackProbe(exec("/usr/local/bin/probe", "http://127.0.0.1:8081/healthz")); !ok || port != "8081" || path != "/healthz" {
		t.Errorf("got %q %q %v", port, path, ok)
	}
	for _, p := range []*v1.Probe{nil, exec("/bin/true"), exec("/usr/local/bin/probe", "http://10.0.0.1:80/"),
		{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}}} {
		if _, _, ok := loopbackProbe(p); ok {
			t.Errorf("%+v taken for a loopback probe", p)
		}
	}
}

func TestProbesPassCheckSkipsPodsThatDoNotRun(t *testing.T) {
	ctx := context.Background()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a", ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{
			HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}}}}},
		Status: v1.PodStatus{Phase: v1.PodPending}}
	cs := fake.NewClientset(pod)
	ok, why, err := probesPassCheck("ns")(ctx, cs)
	if !ok || err != nil {
		t.Errorf("a pending pod is the DaemonSet check's business: %v %q %v", ok, why, err)
	}
}

// A check that client-go's rate limiter cut short (its wait would pass the
// deadline) knows nothing: the timeout names the reason before it.
func TestRequireTimeoutKeepsTheReasonBeforeTheDeadline(t *testing.T) {
	ctx := context.Background()
	c := newFakeCluster()
	checks := 0
	check := func(ctx context.Context, _ clientset.Interface) (bool, string, error) {
		checks++
		if checks == 1 {
			return false, "dra.faultline.k8s.io on node n: 0 of 8 devices published", nil
		}
		return false, "", errors.New("client rate limiter Wait returned an error: rate: Wait(n=1) would exceed context deadline")
	}
	r, _ := c.process(t, FixtureSet{Name: "dra", Namespace: "faultline-dra-driver", Ready: []ReadyCheck{check}, Timeout: 30 * time.Millisecond})
	err := r.require(ctx, "dra")
	if err == nil || !strings.Contains(err.Error(), "(dra.faultline.k8s.io on node n: 0 of 8 devices published)") {
		t.Errorf("want a timeout naming the reason before the rate limiter's error, got %v", err)
	}
	if checks < 2 {
		t.Errorf("%d checks, want the rate limiter's error after the reason", checks)
	}
}
