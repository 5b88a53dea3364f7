package cri

// How a spec makes one creation slower than its caller's deadline without
// slowing anything else on the node.
//
// runc-slow (the faultline-slow runtime handler) holds the OCI create until
// the spec releases it (a gate, ociruntime.Release; at most holdBound), so
// each spec fixes when the creation goes on: after the caller's deadline,
// with a retry waiting, before a restart. CRI-O runs the OCI create in
// RunPodSandbox and in CreateContainer, containerd only in RunPodSandbox: its
// CreateContainer writes metadata and leaves the OCI create to
// StartContainer. The one step of containerd's CreateContainer that can wait
// is the NRI CreateContainer hook, so there the fake NRI plugin stalls. The
// caller's cancel (the relay hands every timed-out call to the runtime as
// one) ends NRI's call of the hook, which fails the creation; NRI's own
// request timeout would instead drop the plugin and let the creation go on
// without it, so the caller's deadline stays below that timeout.

import (
	"fmt"
	"time"

	"github.com/faultline-k8s/faultline/suites/harness"
)

const (
	// holdBound is the longest runc-slow holds a creation the spec does not
	// release (interrupted); ociDeadline is the caller's deadline: long
	// enough for the steps before the OCI create on a loaded node.
	holdBound   = 2 * time.Minute
	ociDeadline = 3 * time.Second
	// retryPending is how long RETRY-IN-PROGRESS's retry must stay unanswered,
	// while the first creation is held, before the spec releases it: the
	// runtime holds the retry (it answers it once the first is done).
	retryPending = 2 * time.Second
	// finishAfterRelease bounds a released creation's last steps.
	finishAfterRelease = 30 * time.Second
	// retryInterval is how often a spec repeats a request, as the kubelet
	// does (it retries at its next pod sync).
	retryInterval = time.Second
	// quietAfterDelay is how long after the first creation would have
	// ended a spec keeps counting creations (RETRY-IN-PROGRESS): a runtime that
	// creates a second object for a refused retry does so by then.
	quietAfterDelay = 10 * time.Second
	// abandonWatch is how long RETRY-IN-PROGRESS watches the first creation
	// after the caller's deadline before it retries: a runtime that gives
	// the creation up at the deadline has done so by then (runc-slow still
	// holds a kept creation: the spec has not released it).
	abandonWatch = 2 * time.Second
	// cleanupWindow bounds a runtime removing a timed-out object nobody
	// claimed (CRI-O: a minute or two, its resource store's GC).
	cleanupWindow = 4 * time.Minute
)

// slowdown is one way to make a creation slow.
type slowdown struct {
	// ViaNRI: the fake NRI plugin stalls the CreateContainer hook for Delay.
	// Otherwise runc-slow holds the OCI create until the spec releases it
	// (target.release), at most Delay.
	ViaNRI bool
	// Delay is how long the creation is held; Deadline the caller's.
	Delay, Deadline time.Duration
}

func (s slowdown) String() string {
	if s.ViaNRI {
		return fmt.Sprintf("the fake NRI plugin stalls the CreateContainer hook for %s; the caller's deadline is %s", s.Delay, s.Deadline)
	}
	return fmt.Sprintf("runc-slow holds the OCI create until the spec releases it (at most %s); the caller's deadline is %s", s.Delay, s.Deadline)
}

// slowdownFor picks the mechanism for a runtime and a stage: the fake NRI
// plugin where the runtime's CreateContainer runs no OCI create
// (vocab/runtimes CreateContainerRunsOCICreate).
func slowdownFor(rt runtime, stage string) slowdown {
	if stage == stageContainer && !rt.CreateContainerRunsOCICreate {
		// The caller's cancel (the relay passes every deadline on as one)
		// ends NRI's call of the hook; both must come before NRI's own
		// timeout, which would drop the plugin.
		timeout := harness.Cluster().NRIRequestTimeout
		return slowdown{ViaNRI: true, Delay: timeout * 3 / 4, Deadline: timeout / 2}
	}
	return slowdown{Delay: holdBound, Deadline: ociDeadline}
}

// The annotations that ask for a slowdown are built by the fakes' own
// packages, next to the parsers that read them: runc-slow's delays by
// ociruntime.SlowCreate, the fake NRI plugin's stall by its client
// (nriclient.A.Fault, package faults).
