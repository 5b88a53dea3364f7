package harness

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
)

// WaitForDaemonSets waits until every DaemonSet in namespace has all its pods
// scheduled, updated and Ready.
func WaitForDaemonSets(ctx context.Context, cs clientset.Interface, namespace string, timeout time.Duration) error {
	check := daemonSetsReadyCheck(namespace)
	var last string
	err := PollUntil(ctx, timeout, func() (bool, error) {
		ok, why, err := check(ctx, cs)
		if err != nil {
			return false, err
		}
		last = why
		return ok, nil
	})
	if err != nil {
		return fmt.Errorf("DaemonSets in %s not ready within %s (%s): %w", namespace, timeout, last, err)
	}
	return nil
}

func daemonSetReady(ds *appsv1.DaemonSet) bool {
	s := ds.Status
	return s.ObservedGeneration >= ds.Generation && s.DesiredNumberScheduled > 0 &&
		s.UpdatedNumberScheduled == s.DesiredNumberScheduled && s.NumberReady == s.DesiredNumberScheduled
}

// PollUntil polls done every second until it returns true, an error, or timeout
// passes. For waits outside a spec (suite setup), where gomega's Eventually is
// not available.
func PollUntil(ctx context.Context, timeout time.Duration, done func() (bool, error)) error {
	return pollUntil(ctx, time.Second, timeout, done)
}

func pollUntil(ctx context.Context, interval, timeout time.Duration, done func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		ok, err := done()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
		}
	}
}

// PodOnNode returns the pod of a DaemonSet-like set (selected by labelSelector)
// that runs on node.
func PodOnNode(ctx context.Context, cs clientset.Interface, namespace, labelSelector, node string) (*v1.Pod, error) {
	pods, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labelSelector, FieldSelector: "spec.nodeName=" + node,
	})
	if err != nil {
		return nil, err
	}
	for i := range pods.Items {
		if pods.Items[i].DeletionTimestamp == nil {
			return &pods.Items[i], nil
		}
	}
	return nil, fmt.Errorf("no pod %q in %s on node %s", labelSelector, namespace, node)
}

// ProxyGet reads an HTTP path of a pod through the API server's pod proxy, which
// works on any cluster whose API server reaches pods, not only kind.
func ProxyGet(ctx context.Context, cs clientset.Interface, pod *v1.Pod, port, path string, query map[string]string) ([]byte, error) {
	return cs.CoreV1().Pods(pod.Namespace).ProxyGet("http", pod.Name, port, path, query).DoRaw(ctx)
}

// OnFailure runs dump after the current spec if it failed, before the
// framework tears the namespace down: the place for a fake component's log of
// the objects the spec created.
func OnFailure(dump func(ctx context.Context)) {
	ginkgo.DeferCleanup(func(ctx context.Context) {
		if ginkgo.CurrentSpecReport().Failed() {
			dump(ctx)
		}
	})
}

// LogLinesMentioning returns the lines of a container's log that mention any of
// the given strings (an object's UID, its name), for failure dumps.
func LogLinesMentioning(ctx context.Context, cs clientset.Interface, pod *v1.Pod, container string, needles ...string) string {
	raw, err := cs.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &v1.PodLogOptions{Container: container}).DoRaw(ctx)
	if err != nil {
		return fmt.Sprintf("(logs of %s/%s %s: %v)", pod.Namespace, pod.Name, container, err)
	}
	var out []string
	for _, line := range strings.Split(string(raw), "\n") {
		for _, n := range needles {
			if n != "" && strings.Contains(line, n) {
				out = append(out, line)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}
