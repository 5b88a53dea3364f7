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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/test/e2e/framework"

	"github.com/faultline-k8s/faultline/fixtures"
)

// Deployment is a fixture set applied to the cluster.
type Deployment struct {
	Namespace string
	objects   []*unstructured.Unstructured
	applier   *fixtures.Applier
}

// Deploy renders a fixture set ("dra", "nri") into namespace with the fakes image
// and creates it, after removing what a killed earlier run may have left. Call it
// from SynchronizedBeforeSuite, then WaitForDaemonSets; Remove it from
// SynchronizedAfterSuite.
func Deploy(ctx context.Context, set, namespace string, extra map[string]string) (*Deployment, error) {
	config, err := framework.LoadConfig()
	if err != nil {
		return nil, err
	}
	objects, err := fixtures.Render(set, fixtures.Values{
		Namespace: namespace, Image: Flags.FakesImage, PullPolicy: Flags.PullPolicy, Extra: extra,
	})
	if err != nil {
		return nil, err
	}
	applier, err := fixtures.NewApplier(config)
	if err != nil {
		return nil, err
	}
	d := &Deployment{Namespace: namespace, objects: objects, applier: applier}
	// A previous run that was killed may have left the set behind.
	if err := d.Remove(ctx); err != nil {
		return nil, err
	}
	if err := applier.Create(ctx, objects); err != nil {
		return nil, err
	}
	return d, nil
}

// Remove deletes the set and waits for its namespace to be gone.
func (d *Deployment) Remove(ctx context.Context) error {
	if err := d.applier.Delete(ctx, d.objects); err != nil {
		return err
	}
	cs, err := framework.LoadClientset()
	if err != nil {
		return err
	}
	return PollUntil(ctx, 2*time.Minute, func() (bool, error) {
		_, err := cs.CoreV1().Namespaces().Get(ctx, d.Namespace, metav1.GetOptions{})
		return err != nil, nil
	})
}

// WaitForDaemonSets waits until every DaemonSet in namespace has all its pods
// scheduled, updated and Ready.
func WaitForDaemonSets(ctx context.Context, cs clientset.Interface, namespace string, timeout time.Duration) error {
	var last string
	err := PollUntil(ctx, timeout, func() (bool, error) {
		list, err := cs.AppsV1().DaemonSets(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		if len(list.Items) == 0 {
			last = "no DaemonSets"
			return false, nil
		}
		for _, ds := range list.Items {
			if !daemonSetReady(&ds) {
				last = fmt.Sprintf("DaemonSet %s: %d desired, %d updated, %d ready", ds.Name,
					ds.Status.DesiredNumberScheduled, ds.Status.UpdatedNumberScheduled, ds.Status.NumberReady)
				return false, nil
			}
		}
		return true, nil
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
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(time.Second)
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
