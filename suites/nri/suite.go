package nri

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"k8s.io/kubernetes/test/e2e/framework"

	"github.com/faultline-k8s/faultline/suites/harness"
)

// suite is the suite's name: its specs carry the label Suite:nri.
const suite = "nri"

// describe registers a top-level container of the suite: its specs carry the
// label Suite:nri and run once the fake NRI plugin is deployed and every
// instance is registered with the runtime.
func describe(args ...any) bool {
	ginkgo.GinkgoHelper()
	return harness.Describe(suite, func(ctx context.Context) { harness.Require(ctx, FixtureSet) }, append([]any{harness.NeedsFixtures(FixtureSet)}, args...)...)
}

var _ = harness.DescribeSmoke(suite)

// Features of the suite's specs, for --label-filter (Feature:NRI, ...).
var (
	featureNRI = framework.ValidFeatures.Add("NRI")
	// featureValidator: the runtime enforces the NRI default validator's
	// required plugins (containerd >= 2.2 with default_validator enabled).
	featureValidator = framework.ValidFeatures.Add("NRIDefaultValidator")
	// featureFailurePolicy: the per-plugin failure policy of NRI v0.12.4
	// (fail_request, keep_connected).
	featureFailurePolicy = framework.ValidFeatures.Add("NRIFailurePolicy")
)

// FixtureSet is fixtures/nri, the fake NRI plugin DaemonSet, deployed into
// PluginNamespace by the first spec that needs it. The CRI suite uses the
// same deployment (its CreateContainer slowdown on containerd): one set of
// plugin instances per node, whichever suites run.
const FixtureSet = "nri"

// The set is ready when every instance's container is Ready and answers its
// readiness probe now: registered with the runtime (/healthz).
var _ = harness.RegisterFixtureSet(harness.FixtureSet{
	Name: FixtureSet, Namespace: PluginNamespace,
	// The runtime-state container lists the runtime's objects over CRI.
	Values: harness.CRISocketValues,
})
