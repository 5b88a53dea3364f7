package cri

// The cache specs' floors (harness.Floor): the caller's deadline, the held
// creation and the windows the specs watch are faultline's own choices, so
// only the runtime's own timers count: its cleanup of an object nobody
// claimed, and systemd starting it again after a restart.

import (
	"slices"
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/faultline-k8s/faultline/suites/harness"
)

const (
	// crioStoreCleanup is CRI-O's resource store cleanup period
	// (internal/resourcestore, sleepTimeBeforeCleanup): an object nobody
	// claimed is marked stale at one pass and removed at the next, one to
	// two periods after the runtime kept it.
	crioStoreCleanup = time.Minute
	// runtimeRestartDelay is how long after the runtime's process ended
	// systemd starts it again (RestartSec of containerd.service and
	// crio.service, clusters/nodeimage).
	runtimeRestartDelay = time.Second
	// crioName is vocab/runtimes' name of CRI-O.
	crioName = "crio"
)

// declareFloor declares the running cache spec's floor, by the requirement
// it checks (requirementsOf). The cleanup of a kept object is known for
// CRI-O only; elsewhere that floor is unknown, and not declared.
func declareFloor(t *target) {
	labels := ginkgo.CurrentSpecReport().Labels()
	checks := func(id string) bool { return id != "" && slices.Contains(labels, harness.Checks(id)[0]) }
	ids := requirementsOf[t.stage]
	switch {
	case checks(ids.changedRequest), checks(ids.unclaimedRemoved):
		if t.node.Runtime.Name == crioName {
			harness.Floor(harness.Period("CRI-O resource store cleanup (an unclaimed object goes at its second pass)", 2*crioStoreCleanup))
		}
	case checks(ids.restartNoLeak):
		harness.Floor(harness.Wait("systemd RestartSec of the runtime", runtimeRestartDelay))
	default:
		harness.Floor()
	}
}
