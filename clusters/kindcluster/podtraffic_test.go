package kindcluster

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// fakeNodes plays the kubelets for checkPodTraffic: answering pods run with
// an IP of their node's subnet; a dialing pod succeeds unless one of its
// targets is unreachable. It records each dialing pod's node and targets.
type fakeNodes struct {
	mu          sync.Mutex
	unreachable string            // a target IP that never answers
	dialed      map[string]string // node: its dialing pod's --reach
	// late: a dialing pod that runs for this many reads before it succeeds.
	late      string
	lateReads int
}

func (f *fakeNodes) clientset(nodeNames ...string) *fake.Clientset {
	var objects []runtime.Object
	for _, n := range nodeNames {
		objects = append(objects, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	cs := fake.NewClientset(objects...)
	cs.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		pod := action.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		args := pod.Spec.Containers[0].Command
		f.mu.Lock()
		defer f.mu.Unlock()
		switch {
		case strings.HasPrefix(pod.Name, "answer-"):
			pod.Status.Phase, pod.Status.PodIP = corev1.PodRunning, "10.244."+strings.TrimPrefix(pod.Spec.NodeName, "node")+".5"
		case strings.HasPrefix(pod.Name, "dial-"):
			reach := args[indexOf(args, "--reach")+1]
			f.dialed[pod.Spec.NodeName] = reach
			pod.Status.Phase = corev1.PodSucceeded
			if f.unreachable != "" && strings.Contains(reach, f.unreachable) {
				pod.Status.Phase = corev1.PodFailed
			}
			if pod.Name == f.late {
				pod.Status.Phase = corev1.PodRunning
			}
		}
		return false, nil, nil // the tracker stores the pod with its status
	})
	cs.PrependReactor("get", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		get, ok := action.(k8stesting.GetAction) // a log read is not one
		if !ok || get.GetName() != f.late {
			return false, nil, nil
		}
		name := get.GetName()
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.lateReads > 0 {
			f.lateReads--
			return false, nil, nil
		}
		obj, err := cs.Tracker().Get(action.GetResource(), action.GetNamespace(), name)
		if err != nil {
			return true, nil, err
		}
		pod := obj.(*corev1.Pod).DeepCopy()
		pod.Status.Phase = corev1.PodSucceeded
		return true, pod, nil
	})
	return cs
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

func TestCheckPodTrafficDialsEveryOtherNode(t *testing.T) {
	f := &fakeNodes{dialed: map[string]string{}}
	cs := f.clientset("node0", "node1", "node2")
	if err := checkPodTraffic(context.Background(), cs, "fakes:test"); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"node0": fmt.Sprintf("10.244.1.5:%d,10.244.2.5:%d", podTrafficPort, podTrafficPort),
		"node1": fmt.Sprintf("10.244.0.5:%d,10.244.2.5:%d", podTrafficPort, podTrafficPort),
		"node2": fmt.Sprintf("10.244.0.5:%d,10.244.1.5:%d", podTrafficPort, podTrafficPort),
	}
	if !reflect.DeepEqual(f.dialed, want) {
		t.Errorf("dialing pods' targets %v, want %v", f.dialed, want)
	}
	// The namespace goes with the check.
	if _, err := cs.CoreV1().Namespaces().Get(context.Background(), podTrafficNamespace, metav1.GetOptions{}); err == nil {
		t.Errorf("namespace %s is left after the check", podTrafficNamespace)
	}
}

func TestCheckPodTrafficNamesTheFailingNode(t *testing.T) {
	// node2's dialing pod finishes two polls after the others.
	f := &fakeNodes{dialed: map[string]string{}, unreachable: "10.244.2.5", late: "dial-2", lateReads: 2}
	cs := f.clientset("node0", "node1", "node2")
	err := checkPodTraffic(context.Background(), cs, "fakes:test")
	if err == nil || !strings.Contains(err.Error(), "from node0") || !strings.Contains(err.Error(), "from node1") || strings.Contains(err.Error(), "from node2") {
		t.Fatalf("error %v; want the dialing pods of node0 and node1 named, not node2's", err)
	}
	// Each failed pod's log is read once, after every dialing pod finished,
	// not at each poll while node2's still ran.
	logs := 0
	for _, a := range cs.Actions() {
		if a.GetVerb() == "get" && a.GetResource().Resource == "pods" && a.GetSubresource() == "log" {
			logs++
		}
	}
	if logs != 2 {
		t.Errorf("%d reads of a pod's log, want 2 (the two failed pods)", logs)
	}
}

func TestCheckPodTrafficOneNodeNeedsNothing(t *testing.T) {
	f := &fakeNodes{dialed: map[string]string{}}
	cs := f.clientset("node0")
	if err := checkPodTraffic(context.Background(), cs, "fakes:test"); err != nil {
		t.Fatal(err)
	}
	if len(cs.Actions()) != 1 { // the node list
		t.Errorf("a one-node cluster got %d API calls, want only the node list: %v", len(cs.Actions()), cs.Actions())
	}
}

func TestPodTrafficPodIsRestricted(t *testing.T) {
	pod := podTrafficPod("answer-0", "node0", "fakes:test", "--serve", ":8080")
	sc, c := pod.Spec.SecurityContext, pod.Spec.Containers[0]
	if pod.Spec.HostNetwork || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.SeccompProfile == nil ||
		c.SecurityContext.AllowPrivilegeEscalation == nil || *c.SecurityContext.AllowPrivilegeEscalation ||
		!reflect.DeepEqual(c.SecurityContext.Capabilities.Drop, []corev1.Capability{"ALL"}) || pod.Spec.NodeName != "node0" {
		t.Errorf("pod %+v is not pinned and restricted", pod.Spec)
	}
}
