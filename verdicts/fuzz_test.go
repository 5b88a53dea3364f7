package verdicts

import "testing"

// FuzzParseExpectations: an expectations file a user passes
// (--expectations) gets a clear error, never a panic.
func FuzzParseExpectations(f *testing.F) {
	f.Add([]byte(testExpectations))
	f.Add([]byte("stack: a-1.1\nexpect:\n- {requirement: DRA-TRANSIENT-RETRIED, verdict: varies, outcomes: [pass, fail], reason: r, reference: https://x, evidence: e}\n"))
	f.Add([]byte("stack: [\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		x, err := ParseExpectations(data, "fuzz.yaml")
		if err == nil && x.Stack == "" {
			t.Errorf("accepted a file without a stack")
		}
	})
}
