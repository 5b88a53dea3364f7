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
	fail, msg := policyIgnoredMessage("v0.12.5", P, observed)
	if !fail || !strings.Contains(msg, "v0.12.5") || !strings.Contains(msg, "15-faultline-p") ||
		!strings.Contains(msg, "fail_request+keep_connected") || !strings.HasSuffix(msg, observed) {
		t.Errorf("known NRI v0.12.5: fail %v, %q", fail, msg)
	}
	for _, version := range []string{"", "v0.12.3"} {
		fail, msg := policyIgnoredMessage(version, K, observed)
		if fail || !strings.Contains(msg, "25-faultline-k") || !strings.Contains(msg, "keep_connected") || !strings.HasSuffix(msg, observed) {
			t.Errorf("NRI %q: fail %v, %q", version, fail, msg)
		}
		if version == "" && !strings.Contains(msg, "NRI unknown") {
			t.Errorf("an unknown version must say so: %q", msg)
		}
	}
}
