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

// honoursFailurePolicy reports whether nriVersion, the containerd/nri
// release a runtime was built with (harness.ClusterInfo.NRIVersion: "v0.12.5",
// "0.12.5", "" when unknown), is known to implement failure policies. An
// unknown or unreadable version is not known to; a pre-release of v0.12.4
// and a pseudo-version of a commit before it are not known to either.
func honoursFailurePolicy(nriVersion string) bool {
	v := strings.TrimSpace(nriVersion)
	if v == "" {
		return false
	}
	if !strings.HasPrefix(v, "v") {
		v = "v" + v
	}
	if !semver.IsValid(v) {
		return false
	}
	return semver.Compare(v, failurePolicySince) >= 0
}

// policyIgnoredMessage is what a spec concludes when the runtime behaved
// as if inst had declared no failure policy (observed says what it did):
// fail is true where the runtime is known to vendor an NRI that implements
// policies, which makes ignoring one a failure; otherwise the message is
// the reason of a "not implemented" verdict.
func policyIgnoredMessage(nriVersion string, inst Instance, observed string) (fail bool, msg string) {
	if honoursFailurePolicy(nriVersion) {
		return true, fmt.Sprintf("the runtime vendors containerd/nri %s (>= %s, which honours a plugin's failure policy) but ignored the policy %s that %s declared: %s",
			nriVersion, failurePolicySince, inst.Policy(), inst, observed)
	}
	version := nriVersion
	if version == "" {
		version = "unknown"
	}
	return false, fmt.Sprintf("the runtime (NRI %s) behaves as if %s had declared no failure policy (it declared %s): %s",
		version, inst, inst.Policy(), observed)
}

// policyIgnored ends a spec in which the runtime behaved as if inst had
// declared no failure policy: "not implemented" unless the runtime is
// known to vendor NRI >= v0.12.4 (harness.Cluster().NRIVersion), where it
// is a failure.
func policyIgnored(inst Instance, observed string) {
	ginkgo.GinkgoHelper()
	fail, msg := policyIgnoredMessage(harness.Cluster().NRIVersion, inst, observed)
	if fail {
		framework.Failf("%s", msg)
	}
	harness.NotImplemented(failurePolicySource, msg)
}
