package preflight

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/faultline-k8s/faultline/vocab/needs"
)

func sample() Report {
	return Report{
		Server: "v1.36.3",
		Conditions: []Condition{
			{CondAPI, OK, "API server v1.36.3"},
			{needs.SlowHandler, Missing, "node a's runtime lists runc | crun"},
		},
		Requirements: []Verdict{
			{ID: "CRI-SANDBOX-RETRY-GETS-FIRST", Area: "cri", Verdict: CannotCheck, Reasons: []string{"slow-handler missing"}},
			{ID: "FAULTLINE-CLUSTER-RUNS-PODS", Area: "faultline", Verdict: CanCheck},
		},
	}
}

func TestWriteFormats(t *testing.T) {
	var md bytes.Buffer
	if err := Write(&md, sample(), "markdown"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), `runc \| crun`) || !strings.Contains(md.String(), "| `CRI-SANDBOX-RETRY-GETS-FIRST` | cannot check: slow-handler missing |") {
		t.Errorf("markdown:\n%s", md.String())
	}
	var js bytes.Buffer
	if err := Write(&js, sample(), "json"); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Requirements) != 2 || back.Conditions[1].State != Missing {
		t.Errorf("json does not read back (%v):\n%s", err, js.String())
	}
	var text bytes.Buffer
	if err := Write(&text, sample(), "text"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "2 requirements: 1 can check, 1 cannot check.") {
		t.Errorf("text:\n%s", text.String())
	}
	if err := Write(&text, sample(), "yaml"); err == nil {
		t.Error("an unknown format must be an error")
	}
}
