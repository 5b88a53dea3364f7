package dra

import (
	"time"

	"github.com/faultline-k8s/faultline/suites/harness"
	"github.com/faultline-k8s/faultline/vocab/facts"
)

// Timeouts derive from the mechanisms that drive the kubelet's DRA calls,
// measured on the faultline kind cluster (one node, Kubernetes v1.36.3,
// containerd 2.4.2, kubelet syncFrequency at its 1m default then). Those
// that ride on the kubelet's resync are functions of its syncFrequency,
// from the cluster's facts (faultline's clusters set it to
// facts.DefaultKubeletSyncFrequency); the others are the kubelet's
// constants.
//
// NodePrepareResources retry. A failing prepare makes SyncPod return without
// a sync error (kuberuntime_manager.go only emits the event and returns), so
// the pod worker requeues the pod at the regular resync interval,
// syncFrequency (1m) jittered by up to +50%: the next prepare comes 60-90 s
// later, not after the 10 s error backoff. Measured gaps between
// consecutive failing prepare calls of one pod (two pods, 8 gaps): 88.2,
// 85.0, 89.0, 64.6, 81.0, 65.0, 74.0, 89.1 s (min 64.6, max 89.1).
//
// NodeUnprepareResources retry. A failing unprepare makes
// SyncTerminatedPod fail, which is requeued with the error backoff (10 s,
// +50% jitter) but also re-run on every other pod event while the pod is
// terminating; measured gaps: 0.2, 1.6, 1.9 s (pod deleted with grace
// period 0, other pod events still arriving), 1.1, 15.6, 14.0 s (grace
// period 1, a quiet pod: the error backoff).
//
// NodePrepareResources deadline: the kubelet gives every DRA call 45 s
// (pkg/kubelet/cm/dra/plugin: defaultClientCallTimeout), after which the
// driver sees its context cancelled.
//
// Health stream (KEP-4680), the same in v1.36.3 and v1.37.2: the kubelet
// watches each driver's NodeWatchResources stream in a loop that starts it
// again 5 s after it ended, for ever, without backoff
// (pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go: wait.UntilWithContext(...,
// 5*time.Second)). When a stream ends, the kubelet forgets the driver's
// device health (pkg/kubelet/cm/dra/manager.go, HandleWatchResourcesStream:
// healthInfoCache.clearDriver), so its devices read Unknown, but it tells no
// pod: the pod status shows Unknown only when the pod is synced next, at
// its resync (the pod worker's requeue, 60-90 s, measured above for the
// prepare retries). The first message of a new stream is news for every
// device and updates the pods that use them at once.

// kubeletResync is the kubelet's syncFrequency.
func kubeletResync() time.Duration { return harness.Cluster().KubeletSyncFrequency }

// prepareRetryMin and prepareRetryMax bound the gap between two prepare
// calls for a pod whose preparation keeps failing: the resync, jittered
// by up to half of it (pod_workers.go workerResyncIntervalJitterFactor).
func prepareRetryMin() time.Duration { return kubeletResync() }
func prepareRetryMax() time.Duration { return retryMaxOf(kubeletResync()) }

// retryMaxOf is prepareRetryMax for a resync.
func retryMaxOf(resync time.Duration) time.Duration { return resync * 3 / 2 }

// healthStreamDown is how long a StreamDrop fault keeps the driver's
// health stream down (reconnects refused): long enough for the kubelet to
// publish the devices as Unknown, which waits for the pod's next resync
// (at most prepareRetryMax), plus healthTimeout for the status write.
func healthStreamDown() time.Duration { return healthStreamDownOf(kubeletResync()) }

func healthStreamDownOf(resync time.Duration) time.Duration {
	return retryMaxOf(resync) + healthTimeout
}

// prepareAfterKubeletRestart bounds the pod running after the restart: the
// new kubelet's first prepare may come before the driver has registered
// with it again and fail in the kubelet, and the next one comes at the
// pod's resync (prepareRetryMax).
func prepareAfterKubeletRestart() time.Duration {
	return kubeletRestartTimeout + prepareRetryMax() + startSlack
}

// unresponsiveDown is how long an Unresponsive fault keeps a driver's DRA
// service down: past the wiping delay with room to see the slices gone
// (32 s after the stop, measured), and long enough that the kubelet's next
// prepare, at the pod's resync (at most prepareRetryMax after the first),
// finds it down too, so that the pod shows what the user is told while the
// driver does not answer, not only the call that was cut.
func unresponsiveDown() time.Duration { return unresponsiveDownOf(kubeletResync()) }

func unresponsiveDownOf(resync time.Duration) time.Duration {
	return max(sliceWipingDelay+15*time.Second, retryMaxOf(resync)+prepareRetryTolerance) + 10*time.Second
}

// unprepareRetryBound bounds the gap between two unprepare calls of a
// quiet terminating pod whose unprepare keeps failing: the error back-off
// with its jitter, the sync loop's look at its queue, and how late the
// node's kubelet fired its timers during the spec (harness.Lateness).
func unprepareRetryBound(late time.Duration) time.Duration {
	return unprepareRetryMax + podWorkerLook + max(late, 0)
}

// nominalResync is the resync the specs' priorities (harness.Lasts) are
// computed with when the spec tree is built, before the cluster's facts
// are read: that of faultline's clusters. Priorities only order the specs.
const nominalResync = facts.DefaultKubeletSyncFrequency

const (
	// prepareRetryTolerance allows for clock granularity between the
	// kubelet's requeue and the driver's record (the pod worker only looks
	// at its queue once a second) when checking prepareRetryMin.
	prepareRetryTolerance = 5 * time.Second

	// unprepareRetryMax bounds the gap between two unprepare calls: the
	// pod worker's error backoff, 10 s + 50% jitter (plus up to 1 s until
	// the pod worker looks at its queue, see prepareRetryTolerance).
	unprepareRetryMax = 15 * time.Second
	// podWorkerLook is how long a pod whose back-off ended may wait for
	// the kubelet's sync loop to look at its work queue (once a second).
	podWorkerLook = time.Second
	// unprepareBackOff is that error backoff without its jitter: a quiet
	// terminating pod's next unprepare comes no sooner (the first retry
	// rides on the pod's own termination events, measured above).
	unprepareBackOff = 10 * time.Second

	// draCallTimeout is the kubelet's deadline for one DRA gRPC call.
	draCallTimeout = 45 * time.Second

	// scheduleTimeout covers the scheduler allocating the claims and
	// binding the pod: seconds, but the machine is shared.
	scheduleTimeout = time.Minute
	// startSlack covers what happens around the DRA calls: scheduling,
	// sandbox and container start, API and event latency on a busy
	// two-core machine.
	startSlack = time.Minute
	// evictionTimeout covers the device taint eviction controller seeing
	// the taint in the ResourceSlice and deleting the pod (no toleration
	// seconds: immediately), plus the pod's termination.
	evictionTimeout = time.Minute
	// healthTimeout covers the kubelet receiving a health update from the
	// driver's stream and writing the pod status.
	healthTimeout = time.Minute
	// poll is how often specs look at pods, claims and call records.
	poll = 2 * time.Second

	// healthReconnectPeriod is how long after a health stream ended the
	// kubelet starts the next one.
	healthReconnectPeriod = 5 * time.Second
	// kubeletRestartTimeout bounds a kubelet restart through the CRI relay
	// (POST /restart-kubelet, SIGTERM): systemd starts it again after
	// RestartSec (1 s in kind's kubelet.service, Restart=always), the new
	// process shows in /proc, and the node is Ready; the relay's
	// port-forward runs through the kubelet and answers again only then.
	kubeletRestartTimeout = 2 * time.Minute
	// kubeletRestartDelay is that RestartSec: systemd starts the kubelet
	// again this long after it ended (clusters/nodeimage/nodefs,
	// kubelet.service).
	kubeletRestartDelay = time.Second
	// kubeletRestartStall is how long a Stall fault holds the DRA call the
	// kubelet restart cuts: well under draCallTimeout, so that only the
	// restart ends it, and long enough to see it in progress (poll) and
	// restart the kubelet meanwhile.
	kubeletRestartStall = 30 * time.Second
	// draReconcilePeriod is how often the kubelet's DRA manager reconciles
	// its claim state with the pods (pkg/kubelet/cm/dra/manager.go
	// defaultReconcilePeriod, 60 s in v1.35-v1.37; not the resync).
	draReconcilePeriod = 60 * time.Second
	// unprepareAfterKubeletRestart bounds the pod's deletion completing
	// after the restart: a failed unprepare (driver not registered yet) is
	// retried with the error backoff (unprepareRetryMax), and the DRA
	// manager's reconcile loop unprepares the claims of pods that are
	// gone; the larger of the two.
	unprepareAfterKubeletRestart = kubeletRestartTimeout + draReconcilePeriod + startSlack
	// sliceWipingDelay is how long the kubelet waits after it lost its
	// connection to a driver (and no other endpoint of it is connected)
	// before it deletes the driver's ResourceSlices on the node
	// (pkg/kubelet/cm/dra/manager.go: defaultWipingDelay, 30 s in v1.36.3
	// and v1.37.2).
	sliceWipingDelay = 30 * time.Second
	// grpcReconnectMax is gRPC's default maximum connection backoff
	// (google.golang.org/grpc/backoff.DefaultConfig.MaxDelay): the kubelet
	// dials its channel to a driver again at most this long after the
	// previous failed attempt; it sets no backoff of its own.
	grpcReconnectMax = 120 * time.Second
)

// The kubelet's timers as the specs' floors name them (harness.Floor): a
// retry at its base interval, a window that must outlast a timer at the
// timer's longest.

// floorResync: a failed prepare is retried at the pod's next resync.
func floorResync() harness.Part {
	return harness.Wait("kubelet resync (syncFrequency) before the prepare retry", prepareRetryMin())
}

// floorQuietResync: a window in which no prepare call may come lasts a
// whole resync with its jitter.
func floorQuietResync() harness.Part {
	return harness.Wait("a whole kubelet resync with its jitter, without a prepare call", prepareRetryMax())
}

var (
	// floorCallDeadline: the kubelet gives up on a stalled DRA call.
	floorCallDeadline = harness.Wait("kubelet's DRA call deadline", draCallTimeout)
	// floorUnprepareBackOff: a failed unprepare of a quiet terminating pod
	// is retried after the pod worker's error back-off.
	floorUnprepareBackOff = harness.Wait("kubelet pod worker back-off before the unprepare retry", unprepareBackOff)
	// floorKubeletRestart: systemd starts the stopped kubelet again.
	floorKubeletRestart = harness.Wait("systemd RestartSec of the kubelet", kubeletRestartDelay)
)
