package verdictstest

import "testing"

// TestRecordedCause: a former pattern counts for a requirement that
// declares its cause, and nothing else matches.
func TestRecordedCause(t *testing.T) {
	for _, c := range []struct {
		ids           []string
		message, want string
	}{
		{[]string{"DRA-EVERY-FAILING-CLAIM-NAMED"}, "both claims failed in one call, but the user is told about\nonly one", "claim-not-named"},
		{[]string{"DRA-TRANSIENT-RETRIED"}, "told about only one", ""},
		{[]string{"NRI-SYNC-ERROR-FAILS-REQUEST"}, "the failed attempt 723ba403aa99 must leave nothing behind in the runtime: holds 1 sandbox(es)\n  sandbox 723ba403aa99 SANDBOX_NOTREADY", "leftover-sandbox"},
		{[]string{"NRI-SYNC-ERROR-FAILS-REQUEST"}, "the failed attempt 723ba403aa99 must leave nothing behind in the runtime: container 723ba403aa99 CONTAINER_CREATED", "leftover-container"},
		{[]string{"CRI-SANDBOX-RETRY-IN-PROGRESS"}, "Timed out after 30s: dial tcp: connection refused", ""},
	} {
		if got := RecordedCause(c.ids, c.message); got != c.want {
			t.Errorf("RecordedCause(%v, %q) = %q, want %q", c.ids, c.message, got, c.want)
		}
	}
}
