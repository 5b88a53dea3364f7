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
// scheduled, updated, running and started (daemonSetReady), and every
// readiness probe of those pods passes when asked now (probesPassCheck: the
// fakes' health endpoints through a port-forward, not the kubelet's last
// probe, which is up to a probe period old), polling every second with
// e2e-framework's wait.For.
func WaitForDaemonSets(ctx context.Context, cs clientset.Interface, namespace string, timeout time.Duration) error {
	checks := []ReadyCheck{daemonSetsReadyCheck(namespace), probesPassCheck(namespace)}
	var last string
	err := wait.For(func(ctx context.Context) (bool, error) {
		for _, check := range checks {
			ok, why, err := check(ctx, cs)
			if err != nil {
				return false, err
			}
			if !ok {
				last = why
				return false, nil
			}
		}
		return true, nil
	}, wait.WithContext(ctx), wait.WithTimeout(timeout), wait.WithInterval(time.Second), wait.WithImmediate())
	if err != nil {
		return fmt.Errorf("DaemonSets in %s not ready within %s (%s): %w", namespace, timeout, last, err)
	}
	return nil
}

// daemonSetReady reports whether the DaemonSet controller has seen ds's
// current spec, every pod it wants is scheduled and updated, and of pods
// (its namespace's) exactly that many are ds's (ownerReferences), not being
// deleted, running, with every container running and started; if not, why.
//
// Not the pods' Ready condition (status.numberReady): that is the kubelet's
// last readiness probe, up to a probe period old, and the fakes' exec probes
// are rare (each is a runc exec on the node; fixtures/*/daemonset.yaml.tmpl).
// Whether the fakes are healthy now is asked of them directly
// (probesPassCheck), after this check.
//
// Nor e2e-framework's conditions.DaemonSetReady: that one compares the
// status counts only, so a DaemonSet the controller has not looked at yet
// (right after its creation every count is 0) or that wants no pod counts
// as ready, which would let a fixture set pass as ready before its pods
// exist. Nor does it say why a DaemonSet is not ready, which a wait that
// times out reports.
func daemonSetReady(ds *appsv1.DaemonSet, pods []v1.Pod) (bool, string) {
	s := ds.Status
	if s.ObservedGeneration < ds.Generation {
		return false, fmt.Sprintf("DaemonSet %s: generation %d not observed yet (observed %d)", ds.Name, ds.Generation, s.ObservedGeneration)
	}
	if s.DesiredNumberScheduled == 0 || s.UpdatedNumberScheduled != s.DesiredNumberScheduled {
		return false, fmt.Sprintf("DaemonSet %s: %d desired, %d updated", ds.Name, s.DesiredNumberScheduled, s.UpdatedNumberScheduled)
	}
	started, first := 0, ""
	for i := range pods {
		pod := &pods[i]
		if !ownedBy(pod, ds) {
			continue
		}
		if why := podNotStarted(pod); why != "" {
			if first == "" {
				first = fmt.Sprintf(" (pod %s: %s)", pod.Name, why)
			}
			continue
		}
		started++
	}
	if int32(started) != s.DesiredNumberScheduled {
		return false, fmt.Sprintf("DaemonSet %s: %d desired, %d updated, %d pods running and started%s", ds.Name,
			s.DesiredNumberScheduled, s.UpdatedNumberScheduled, started, first)
	}
	return true, ""
}

// ownedBy says whether ds is among pod's owners.
func ownedBy(pod *v1.Pod, ds *appsv1.DaemonSet) bool {
	for _, ref := range pod.OwnerReferences {
		if ref.UID == ds.UID {
			return true
		}
	}
	return false
}

// podNotStarted says why a pod does not count as running and started, or
// "" if it does: it is not being deleted, it is in phase Running, and each
// of its containers has a status that is running and started (Started nil
// counts as not started).
func podNotStarted(pod *v1.Pod) string {
	if pod.DeletionTimestamp != nil {
		return "being deleted"
	}
	if pod.Status.Phase != v1.PodRunning {
		return "phase " + string(pod.Status.Phase)
	}
	statuses := map[string]*v1.ContainerStatus{}
	for i := range pod.Status.ContainerStatuses {
		st := &pod.Status.ContainerStatuses[i]
		statuses[st.Name] = st
	}
	for _, c := range pod.Spec.Containers {
		st := statuses[c.Name]
		switch {
		case st == nil:
			return "container " + c.Name + " has no status"
		case st.State.Running == nil:
			return "container " + c.Name + " not running"
		case st.Started == nil || !*st.Started:
			return "container " + c.Name + " not started"
		}
	}
	return ""
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
