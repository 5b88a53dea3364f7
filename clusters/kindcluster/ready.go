package kindcluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// waitReady waits until every node is Ready and every kube-system pod is Ready.
// kind's own wait only warns when it times out, and says nothing of the system
// pods the suites rely on (kube-proxy gives the fake driver its API server).
func waitReady(ctx context.Context, cs kubernetes.Interface, deadline time.Time) error {
	var notReady []string
	var err error
	for {
		notReady, err = notReadyObjects(ctx, cs)
		if err == nil && len(notReady) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("cluster not ready: %w", err)
			}
			return fmt.Errorf("cluster not ready in time, still waiting for: %s", strings.Join(notReady, ", "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func notReadyObjects(ctx context.Context, cs kubernetes.Interface) ([]string, error) {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range nodes.Items {
		if !conditionTrue(n.Status.Conditions, corev1.NodeReady) {
			out = append(out, "node "+n.Name)
		}
	}
	if len(nodes.Items) == 0 {
		out = append(out, "any node")
	}
	pods, err := cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, p := range pods.Items {
		ready := false
		for _, c := range p.Status.Conditions {
			ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
		}
		if !ready {
			out = append(out, fmt.Sprintf("pod kube-system/%s (%s)", p.Name, p.Status.Phase))
		}
	}
	sort.Strings(out)
	return out, nil
}

func conditionTrue(conditions []corev1.NodeCondition, t corev1.NodeConditionType) bool {
	for _, c := range conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
