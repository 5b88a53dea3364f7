package kindcluster

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func podNode(name, cidr, ip string) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{PodCIDR: cidr}}
	if ip != "" {
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}, {Type: corev1.NodeInternalIP, Address: ip}}
	}
	return n
}

func TestPodRoutes(t *testing.T) {
	got, err := podRoutes([]corev1.Node{
		podNode("cp", "10.244.0.0/24", "172.18.0.2"),
		podNode("w1", "10.244.1.0/24", "172.18.0.3"),
		podNode("w2", "10.244.2.0/24", "172.18.0.4"),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []podRoute{
		{"cp", "10.244.1.0/24", "172.18.0.3", "w1"}, {"cp", "10.244.2.0/24", "172.18.0.4", "w2"},
		{"w1", "10.244.0.0/24", "172.18.0.2", "cp"}, {"w1", "10.244.2.0/24", "172.18.0.4", "w2"},
		{"w2", "10.244.0.0/24", "172.18.0.2", "cp"}, {"w2", "10.244.1.0/24", "172.18.0.3", "w1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("routes %+v\nwant %+v", got, want)
	}
	for _, bad := range [][]corev1.Node{
		{podNode("cp", "10.244.0.0/24", "172.18.0.2"), podNode("w1", "", "172.18.0.3")},
		{podNode("cp", "10.244.0.0/24", "172.18.0.2"), podNode("w1", "10.244.1.0/24", "")},
	} {
		if _, err := podRoutes(bad); err == nil {
			t.Errorf("a node without podCIDR or InternalIP: no error for %+v", bad)
		}
	}
}
