package harness

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	clientset "k8s.io/client-go/kubernetes"
	"sigs.k8s.io/e2e-framework/klient/wait"
)

// WaitForDaemonSets waits until every DaemonSet in namespace has all its pods
// scheduled, updated and Ready (daemonSetReady), polling every second with
// e2e-framework's wait.For.
func WaitForDaemonSets(ctx context.Context, cs clientset.Interface, namespace string, timeout time.Duration) error {
	check := daemonSetsReadyCheck(namespace)
	var last string
	err := wait.For(func(ctx context.Context) (bool, error) {
		ok, why, err := check(ctx, cs)
		if err != nil {
			return false, err
		}
		last = why
		return ok, nil
	}, wait.WithContext(ctx), wait.WithTimeout(timeout), wait.WithInterval(time.Second), wait.WithImmediate())
	if err != nil {
		return fmt.Errorf("DaemonSets in %s not ready within %s (%s): %w", namespace, timeout, last, err)
	}
	return nil
}

// daemonSetReady reports whether the DaemonSet controller has seen ds's
// current spec and every pod it wants is scheduled, updated and Ready.
//
// Not e2e-framework's conditions.DaemonSetReady: that one compares the
// status counts only, so a DaemonSet the controller has not looked at yet
// (right after its creation every count is 0) or that wants no pod counts
// as ready, which would let a fixture set pass as ready before its pods
// exist. Nor does it say why a DaemonSet is not ready, which a wait that
// times out reports.
func daemonSetReady(ds *appsv1.DaemonSet) bool {
	s := ds.Status
	return s.ObservedGeneration >= ds.Generation && s.DesiredNumberScheduled > 0 &&
		s.UpdatedNumberScheduled == s.DesiredNumberScheduled && s.NumberReady == s.DesiredNumberScheduled
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
