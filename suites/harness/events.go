package harness

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	clientset "k8s.io/client-go/kubernetes"
)

// PodEvents lists the events about pod (by UID), oldest first.
func PodEvents(ctx context.Context, cs clientset.Interface, pod *v1.Pod) ([]v1.Event, error) {
	list, err := cs.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.uid", string(pod.UID)).String(),
	})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// FormatPodEvents renders events one per line, for messages.
func FormatPodEvents(events []v1.Event) string {
	var b strings.Builder
	for _, e := range events {
		fmt.Fprintf(&b, "  %s %s (x%d): %s\n", e.Type, e.Reason, max(e.Count, 1), e.Message)
	}
	return b.String()
}
