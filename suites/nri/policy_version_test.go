package nri

import (
	"strings"
	"testing"
)

func TestHonoursFailurePolicy(t *testing.T) {
	for version, want := range map[string]bool{
		"":         false, // unknown
		"v0.11.0":  false, // CRI-O 1.36
		"v0.12.3":  false, // containerd 2.4.2
		"0.12.3":   false,
		"v0.12.4":  true,
		"0.12.4":   true,
		"v0.12.5":  true,
		" v0.12.5": true,
		"v0.13.0":  true,
		"v1.0.0":   true,
		// A release candidate of v0.12.4, and a commit between v0.12.3
		// and v0.12.4: not known to have it.
		"v0.12.4-rc.1":                          false,
		"v0.12.4-0.20260101000000-0123456789ab": false,
		// A commit after v0.12.4.
		"v0.12.5-0.20260101000000-0123456789ab": true,
		"main":                                  false,
		"v0.12":                                 false, // semver's shorthand for v0.12.0
	} {
		if got := honoursFailurePolicy(version); got != want {
			t.Errorf("honoursFailurePolicy(%q) = %v, want %v", version, got, want)
		}
	}
}

func TestPolicyIgnoredMessage(t *testing.T) {
	const observed = "the runtime dropped it"
	outcome, msg := policyIgnoredMessage("v0.12.5", P, observed)
	if outcome != policyFailed || !strings.Contains(msg, "v0.12.5") || !strings.Contains(msg, "15-faultline-p") ||
		!strings.Contains(msg, "fail_request+keep_connected") || !strings.HasSuffix(msg, observed) {
		t.Errorf("known NRI v0.12.5: outcome %v, %q", outcome, msg)
	}
	for _, version := range []string{"v0.12.3", "0.11.0", "v0.12.4-rc.1"} {
		outcome, msg := policyIgnoredMessage(version, K, observed)
		if outcome != policyNotImplemented || !strings.Contains(msg, "25-faultline-k") || !strings.Contains(msg, "keep_connected") || !strings.HasSuffix(msg, observed) {
			t.Errorf("known NRI %q: outcome %v, %q; want not implemented", version, outcome, msg)
		}
	}
	// An unknown version is a skip that says so, never "not implemented":
	// the runtime may have the policy and be failing it.
	for _, version := range []string{"", "  ", "main"} {
		outcome, msg := policyIgnoredMessage(version, K, observed)
		if outcome != policyVersionUnknown || !strings.HasPrefix(msg, nriVersionUnknown) || !strings.Contains(msg, "25-faultline-k") || !strings.HasSuffix(msg, observed) {
			t.Errorf("NRI %q: outcome %v, %q; want skipped, saying the version is unknown", version, outcome, msg)
		}
	}
}
