package harness

// What makes the suites one test binary: the Suite:<name> label of every
// spec, and the one suite setup and teardown Ginkgo allows per binary.

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"k8s.io/kubernetes/test/e2e/framework"

	"github.com/faultline-k8s/faultline/suites/suitenames"
)

// SuiteLabel is the label every spec of suite carries ("Suite:dra"): a run
// picks suites with --ginkgo.label-filter 'Suite:dra || Suite:nri'. The
// names and the label live in suites/suitenames, which the CLI shares.
func SuiteLabel(suite string) string { return suitenames.Label(suite) }

// Describe registers a top-level container of suite, as framework.Describe
// does, with the suite's label; before each of its specs, require (if not
// nil) deploys what they need (Require). Every top-level container of a
// suite goes through Describe, so that every spec has exactly one
// Suite:<name> label (suites/labels_test.go checks it).
func Describe(suite string, require func(ctx context.Context), args ...any) bool {
	ginkgo.GinkgoHelper()
	args = append([]any{framework.WithLabel(SuiteLabel(suite))}, args...)
	if require != nil {
		for i := len(args) - 1; i >= 0; i-- {
			if body, ok := args[i].(func()); ok {
				args[i] = func() {
					ginkgo.BeforeEach(require)
					body()
				}
				break
			}
		}
	}
	return framework.Describe(args...)
}

// The one suite setup of the binary. Process 1 reads the cluster's facts
// and removes fixture sets an earlier run that was killed left behind; every
// process gets the facts. The fixture sets themselves are deployed by the
// first spec that needs them (Require).
var _ = ginkgo.SynchronizedBeforeSuite(func(ctx context.Context) []byte {
	cs, err := framework.LoadClientset()
	framework.ExpectNoError(err, "client for the cluster")
	in, err := readClusterFacts(ctx, cs)
	if err != nil && Flags.Runtime != "" {
		framework.Logf("%v; going on with --faultline.runtime=%s", err, Flags.Runtime)
		in, err = clusterFacts{Source: "no facts"}, nil
	}
	framework.ExpectNoError(err, "the cluster's facts")
	framework.ExpectNoError(setCluster(in, true))
	recordStack(ctx, cs, in)
	framework.ExpectNoError(fixtureSets.removeDeployed(ctx, "left behind by an earlier run"), "remove leftover fixture sets")
	return encodeClusterFacts(in)
}, func(ctx context.Context, raw []byte) {
	framework.ExpectNoError(setCluster(decodeClusterFacts(raw), false))
})

// The one suite teardown: after every process is done, process 1 removes
// every fixture set a process deployed (every set whose namespace exists).
var _ = ginkgo.SynchronizedAfterSuite(func(context.Context) { closeFakePods() }, func(ctx context.Context) {
	if cluster == nil {
		// The suite setup failed before it knew the cluster: no spec ran,
		// nothing was deployed.
		return
	}
	framework.ExpectNoError(fixtureSets.removeDeployed(ctx, "deployed by this run"), "remove the fixture sets")
})
