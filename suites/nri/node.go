package nri

// The node side: how long its mechanisms take (the timeouts the specs wait
// with), and how a departure from the NRI design is reported.

import (
	"fmt"
	"time"

	"github.com/faultline-k8s/faultline/suites/harness"
)

// The mechanisms the specs wait for, and how long each takes at most.
const (
	// kubeletRetry is how long the kubelet's pod worker waits before it
	// syncs a pod again after a failed sync (a failed RunPodSandbox,
	// CreateContainer, resize...): backOffPeriod 10 s plus up to 50 % jitter.
	kubeletRetry = kubeletBackOff * 3 / 2
	// kubeletBackOff is that back-off without its jitter.
	kubeletBackOff = 10 * time.Second
	// podStart bounds starting a pod whose image is on the node already
	// (the fakes image is loaded or pulled once by the DaemonSet).
	podStart = time.Minute
	// podDeletion bounds the kubelet stopping a pod deleted without grace
	// period and the API server dropping it.
	podDeletion = time.Minute
	// containerGCPeriod is the kubelet's garbage collection period: dead
	// containers and sandboxes of deleted pods are removed by it.
	containerGCPeriod = time.Minute
	// reconnectMax is the fake plugin's longest wait between reconnects.
	reconnectMax = 5 * time.Second
	// crashLoopBackOff is the kubelet's first restart back-off of a
	// crashed container; it doubles with each crash.
	crashLoopBackOff = 10 * time.Second
	// healthPoll bounds how long after an instance registered faultline
	// sees it: its waits ask the instance's /healthz every second
	// (nriclient WaitReady), not the container's Ready condition, which
	// lags by the readiness probe's period.
	healthPoll = 2 * time.Second
)

// The stack's timers as the specs' floors name them (harness.Floor).
var (
	// floorBackOff: the kubelet retries a failed request at the pod's next
	// sync, after the pod worker's back-off.
	floorBackOff = harness.Wait("kubelet pod worker back-off before the retry", kubeletBackOff)
	// floorContainerGC: the kubelet's garbage collection removes a deleted
	// pod's containers and sandbox from the runtime.
	floorContainerGC = harness.Period("kubelet container garbage collection", containerGCPeriod)
)

// floorRequestTimeout: the runtime gives up on a plugin that does not
// answer.
func floorRequestTimeout() harness.Part {
	return harness.Wait("runtime's NRI plugin request timeout", harness.Cluster().NRIRequestTimeout)
}

// floorRetries are the back-offs of a request a plugin fails `failures`
// times, the kubelet retrying each: a failed RunPodSandbox is retried after
// the pod worker's back-off, a failed CreateContainer at once the first
// time and after the back-off when it fails the same way again. So the
// recorded runs show it (v1.37.2, both runtimes: a spec whose RunPodSandbox
// failed once took 14-18 s, twice 26-30 s; CreateContainer once 2-3 s,
// twice 12-16 s); presumably the first CreateContainerError changes the
// pod's status, and the kubelet syncs the updated pod at once.
func floorRetries(event string, failures int) []harness.Part {
	n := failures
	if event == "CreateContainer" {
		n--
	}
	if n < 1 {
		return nil
	}
	return []harness.Part{floorBackOff.Times(n)}
}

// retryTimeout bounds a pod whose first failures CRI requests fail: each
// failure costs a kubelet retry, then the pod starts.
func retryTimeout(failures int) time.Duration {
	return time.Duration(failures)*(kubeletRetry+harness.Cluster().NRIRequestTimeout) + podStart
}

// reregisterTimeout bounds an instance's return after the runtime dropped
// it: its reconnect back-off, registration, then faultline's look at its health.
func reregisterTimeout() time.Duration {
	return reconnectMax + harness.Cluster().NRIRegistrationTimeout + 2*healthPoll + harness.Cluster().NRIRequestTimeout + 15*time.Second
}

// restartTimeout bounds an instance's return after it crashed: the
// kubelet's restart back-off (the suite crashes an instance at most twice),
// then re-registration.
func restartTimeout() time.Duration {
	return 2*crashLoopBackOff + reregisterTimeout()
}

// deletionTimeout bounds the complete removal of a deleted pod from the
// runtime: its containers and sandbox go with the kubelet's garbage
// collection, which runs every containerGCPeriod.
func deletionTimeout() time.Duration {
	return 2*containerGCPeriod + 30*time.Second
}

// Discrepancy is the failure message for a runtime that departs from the
// NRI design ("if a plugin returns an error for a request, NRI ... returns
// the error to the runtime, and the runtime fails the pod or container
// operation") in request: "discrepancy <runtime>: <observed>". Which
// departures are known is the stacks' expectations' to say
// (judge/expectations), not the spec's.
func Discrepancy(cluster harness.ClusterInfo, request, observed string) string {
	return fmt.Sprintf("discrepancy %s in %s: %s (runtime %s)", cluster.Runtime.Name, request, observed, cluster.RuntimeDescription())
}
