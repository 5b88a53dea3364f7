package podproxy_test

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/faultline-k8s/faultline/fakes/lib/podproxy"
)

// ScheduledPods leaves out pods that are not placed yet or on their way
// out: a spec asks the one that serves its node now.
func TestScheduledPods(t *testing.T) {
	pod := func(name, node string, deleting bool, labels map[string]string) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: labels}, Spec: v1.PodSpec{NodeName: node}}
		if deleting {
			now := metav1.Now()
			p.DeletionTimestamp = &now
			p.Finalizers = []string{"keep"}
		}
		return p
	}
	mine := map[string]string{"app": "fake"}
	cs := fake.NewClientset(
		pod("running", "node-1", false, mine),
		pod("pending", "", false, mine),
		pod("leaving", "node-2", true, mine),
		pod("other", "node-1", false, map[string]string{"app": "other"}),
	)
	pods, err := podproxy.ScheduledPods(context.Background(), cs, "ns", "app=fake")
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 1 || pods[0].Name != "running" {
		t.Errorf("got %v, want only the running pod", pods)
	}
}
