package nri

// Whether a runtime is known to honour a plugin's failure policy, and what a
// spec that saw the runtime ignore one concludes.

import (
	"fmt"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"golang.org/x/mod/semver"
	"k8s.io/kubernetes/test/e2e/framework"

	"github.com/faultline-k8s/faultline/suites/harness"
)

// failurePolicySince is the first containerd/nri release whose runtime side
// (pkg/adaptation) honours the failure policy a plugin declares when it
// registers. An older NRI ignores the policy: the plugin is treated as if
// it had declared none.
const failurePolicySince = "v0.12.4"

// failurePolicySource names the design in a "not implemented" verdict.
const failurePolicySource = "NRI v0.12.4 failure policy"

// knownNRIVersion returns nriVersion, the containerd/nri release a runtime
// was built with (harness.ClusterInfo.NRIVersion: "v0.12.5", "0.12.5", ""
// when unknown), as a semantic version, and whether it is one: an empty or
// unreadable version ("main") is unknown.
func knownNRIVersion(nriVersion string) (string, bool) {
	v := strings.TrimSpace(nriVersion)
	if v == "" {
		return "", false
	}
	if !strings.HasPrefix(v, "v") {
		v = "v" + v
	}
	return v, semver.IsValid(v)
}

// honoursFailurePolicy reports whether nriVersion is known to implement
// failure policies. An unknown version is not known to; a pre-release of
// v0.12.4 and a pseudo-version of a commit before it are not known to
// either.
func honoursFailurePolicy(nriVersion string) bool {
	v, known := knownNRIVersion(nriVersion)
	return known && semver.Compare(v, failurePolicySince) >= 0
}

// policyOutcome is what a spec that saw the runtime ignore a declared
// failure policy concludes.
type policyOutcome int

const (
	// policyNotImplemented: the runtime's NRI is known and older than
	// v0.12.4, which has no failure policy.
	policyNotImplemented policyOutcome = iota
	// policyFailed: the runtime's NRI is known to honour policies, so
	// ignoring one is a failure.
	policyFailed
	// policyVersionUnknown: nothing tells which of the two it is, so the
	// spec checked nothing: skipped, never "not implemented".
	policyVersionUnknown
)

// nriVersionUnknown starts the skip message of a spec that cannot judge
// because the runtime's NRI version is unknown.
const nriVersionUnknown = "NRI version unknown"

// policyIgnoredMessage is what a spec concludes when the runtime behaved
// as if inst had declared no failure policy (observed says what it did),
// and the message that says so.
func policyIgnoredMessage(nriVersion string, inst Instance, observed string) (policyOutcome, string) {
	if _, known := knownNRIVersion(nriVersion); !known {
		shown := nriVersion
		if strings.TrimSpace(shown) == "" {
			shown = "none reported"
		}
		return policyVersionUnknown, fmt.Sprintf("%s (%q), so whether it has the failure policy (>= %s) cannot be told: the runtime behaves as if %s had declared no failure policy (it declared %s): %s",
			nriVersionUnknown, shown, failurePolicySince, inst, inst.Policy(), observed)
	}
	if honoursFailurePolicy(nriVersion) {
		return policyFailed, fmt.Sprintf("the runtime vendors containerd/nri %s (>= %s, which honours a plugin's failure policy) but ignored the policy %s that %s declared: %s",
			nriVersion, failurePolicySince, inst.Policy(), inst, observed)
	}
	return policyNotImplemented, fmt.Sprintf("the runtime (NRI %s) behaves as if %s had declared no failure policy (it declared %s): %s",
		nriVersion, inst, inst.Policy(), observed)
}

// policyIgnored ends a spec in which the runtime behaved as if inst had
// declared no failure policy: "not implemented" where the runtime is known
// to vendor an NRI older than v0.12.4, a failure where it is known to
// vendor a later one (harness.Cluster().NRIVersion), and skipped where its
// NRI version is unknown.
func policyIgnored(inst Instance, observed string) {
	ginkgo.GinkgoHelper()
	outcome, msg := policyIgnoredMessage(harness.Cluster().NRIVersion, inst, observed)
	switch outcome {
	case policyFailed:
		framework.Failf("%s", msg)
	case policyVersionUnknown:
		ginkgo.Skip(msg)
	}
	harness.NotImplemented(failurePolicySource, msg)
}
