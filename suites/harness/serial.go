package harness

// Which specs need the node alone can depend on the runtime: containerd's
// CreateContainer is slowed through the NRI hook, which holds every
// container creation on the node, CRI-O's through runc-slow, which holds
// only the spec's own. Ginkgo fixes Serial when it builds the spec tree, so
// the tree needs the runtime before any spec runs: Main reads it (the
// facts, as the suite setup does) and every process builds the same tree.

import (
	"context"
	"fmt"
	"time"

	"github.com/onsi/ginkgo/v2"
	"k8s.io/kubernetes/test/e2e/framework"

	"github.com/faultline-k8s/faultline/vocab/runtimes"
)

// treeRuntime is the cluster's runtime as the spec tree is built; nil
// without a cluster (listing the specs, the CLI's preview).
var treeRuntime *runtimes.Runtime

// treeFactsTimeout bounds Main's read of the cluster's runtime.
const treeFactsTimeout = time.Minute

// readTreeRuntime reads the cluster's runtime for the spec tree from the
// cluster's facts (Main takes --faultline.runtime's first).
func readTreeRuntime() (runtimes.Runtime, error) {
	cs, err := framework.LoadClientset()
	if err != nil {
		return runtimes.Runtime{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), treeFactsTimeout)
	defer cancel()
	in, err := readClusterFacts(ctx, cs)
	if err != nil {
		return runtimes.Runtime{}, err
	}
	return runtimes.Lookup(in.Facts.Runtime)
}

// SerialWhere makes a spec Serial on the runtimes for which alone says it
// needs the node to itself, and where the runtime is not known while the
// tree is built: pass its result among the spec's arguments (the e2e
// framework flattens a []any argument). Call it while the tree is built (in
// a container's body), not at init: Main reads the runtime first.
func SerialWhere(alone func(runtimes.Runtime) bool) []any {
	if treeRuntime == nil || alone(*treeRuntime) {
		return []any{framework.WithSerial()}
	}
	return nil
}

// checkTreeRuntime fails the suite setup when the runtime the tree was
// built for is not the cluster's, as the setup read it.
func checkTreeRuntime(info ClusterInfo) error {
	if treeRuntime != nil && treeRuntime.Name != info.Runtime.Name {
		return fmt.Errorf("the spec tree was built for runtime %s, but the cluster's facts say %s", treeRuntime.Name, info.Runtime.Name)
	}
	return nil
}

// Lasts starts a spec that waits out a long stretch of the stack's timers
// (about d) before the shorter ones, the longest first: a long spec that
// started last would make the whole run wait for it. Ginkgo runs higher
// priorities first (spec by spec with --randomize-all, as ginkgorun runs
// it); a priority counts d in tens of seconds, so that specs of a minute or
// two still sort, and a spec of 20 s or more goes before the e2e
// framework's Slow label (priority 1).
func Lasts(d time.Duration) any { return ginkgo.SpecPriority(int(d / (10 * time.Second))) }
