package nri

// Test pods with fault annotations, and what the kubelet says about them.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/gomega"
	v1 "k8s.io/api/core/v1"
	clientset "k8s.io/client-go/kubernetes"

	"github.com/faultline-k8s/faultline/fakes/nri/nriclient"
	"github.com/faultline-k8s/faultline/fakes/nri/runtimestate"
	"github.com/faultline-k8s/faultline/suites/harness"
)

// TestContainer is the container name of VictimPod.
const TestContainer = "testpod"

// VictimPod is harness.TestPod (restricted, prints a line and waits) with
// the given (fault) annotations.
func VictimPod(name string, annotations ...nriclient.Annotation) *v1.Pod {
	pod := harness.TestPod(name, "faultline NRI victim "+name)
	pod.Annotations = nriclient.Annotations(annotations...)
	return pod
}

// FindEvent returns the first event with reason whose message contains
// text, or nil. Text also matches in its JSON-escaped form: some kubelet
// events (ResizeError) carry the runtime's error inside a JSON document.
func FindEvent(events []v1.Event, reason, text string) *v1.Event {
	raw, _ := json.Marshal(text)
	escaped := strings.TrimSuffix(strings.TrimPrefix(string(raw), `"`), `"`)
	for i := range events {
		msg := events[i].Message
		if events[i].Reason == reason && (strings.Contains(msg, text) || strings.Contains(msg, escaped)) {
			return &events[i]
		}
	}
	return nil
}

// EventuallyPodEvent waits for an event with reason whose message contains
// text, and returns it.
func EventuallyPodEvent(ctx context.Context, cs clientset.Interface, pod *v1.Pod, reason, text string, timeout time.Duration) *v1.Event {
	var found *v1.Event
	gomega.Eventually(ctx, func(ctx context.Context) (string, error) {
		events, err := harness.PodEvents(ctx, cs, pod)
		if err != nil {
			return "", err
		}
		if found = FindEvent(events, reason, text); found != nil {
			return "found", nil
		}
		return harness.FormatPodEvents(events), nil
	}).WithTimeout(timeout).WithPolling(time.Second).Should(gomega.Equal("found"),
		"pod %s/%s must get a %s event containing %q; its events", pod.Namespace, pod.Name, reason, text)
	return found
}

// containerStatus returns the status of the named container, or nil.
func containerStatus(pod *v1.Pod, name string) *v1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// FormatState renders the runtime's state of a pod, for messages.
func FormatState(s *runtimestate.State) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s holds %d sandbox(es), %d container(s)\n", s.Runtime, len(s.Sandboxes), len(s.Containers))
	for _, sb := range s.Sandboxes {
		fmt.Fprintf(&b, "  sandbox %.12s %s attempt %d created %s\n", sb.ID, sb.State, sb.Attempt, sb.CreatedAt.Format(time.RFC3339))
	}
	for _, c := range s.Containers {
		fmt.Fprintf(&b, "  container %.12s %s %s attempt %d in sandbox %.12s\n", c.ID, c.Name, c.State, c.Attempt, c.PodSandboxID)
	}
	return b.String()
}

// sandboxIDs and containerIDs list the IDs in a state.
func sandboxIDs(s *runtimestate.State) []string {
	out := []string{}
	for _, sb := range s.Sandboxes {
		out = append(out, sb.ID)
	}
	return out
}

func containerIDs(s *runtimestate.State) []string {
	out := []string{}
	for _, c := range s.Containers {
		out = append(out, c.ID)
	}
	return out
}
