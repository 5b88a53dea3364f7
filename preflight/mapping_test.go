package preflight

import (
	"slices"
	"strings"
	"testing"

	"github.com/faultline-k8s/faultline/judge/requirements"
	"github.com/faultline-k8s/faultline/vocab/needs"
)

// testSpecs stands for the test binary's spec tree (the real one is checked
// where it is linked: suites, cmd/faultline): one spec per requirement of
// the catalogue, needing its area's fixture set, with the further labels the
// tests here rely on.
func testSpecs() []Spec {
	extra := map[string][]string{
		"DRA-PERMANENT-FAILS-POD":        needs.InformsLabels(needs.GatePermanentFailures),
		"DRA-HEALTH-IN-POD-STATUS":       needs.Labels(needs.GateHealth),
		"CRI-SANDBOX-RESTART-NO-LEAK":    {disruptiveLabel},
		"CRI-CONTAINER-RETRY-GETS-FIRST": needs.Labels(needs.ContainerSlowdown),
	}
	var specs []Spec
	for _, r := range requirements.All() {
		labels := []string{requirements.Label(r.ID)}
		if r.Area != "faultline" {
			labels = append(labels, needs.Labels(needs.Fixtures(r.Area))...)
		}
		specs = append(specs, Spec{Labels: append(labels, extra[r.ID]...)})
	}
	return specs
}

// Every condition a spec can declare (vocab/needs), and every fixture set's,
// is one Run reports: a need nobody checks would leave its requirements
// undecided on every cluster.
func TestEveryNeedReported(t *testing.T) {
	reported := map[string]bool{}
	for _, c := range run(t, kind()).Conditions {
		if reported[c.Name] {
			t.Errorf("condition %s reported twice", c.Name)
		}
		reported[c.Name] = true
	}
	all := append(append([]string(nil), base...), needs.All...)
	for set, more := range fixtureNeeds {
		all = append(append(all, needs.Fixtures(set)), more...)
	}
	for _, n := range all {
		if !reported[n] {
			t.Errorf("condition %q is not one Run reports", n)
		}
	}
}

// A requirement's needs are the union of its specs' (a fixture set brings
// what it needs), base first; Disruptive and Informs come from any spec; all
// specs pending makes it pending; no spec leaves it undecided.
func TestJudgeReadsTheSpecs(t *testing.T) {
	const id = "DRA-TRANSIENT-RETRIED"
	ok := func(names ...string) []Condition {
		var cs []Condition
		for _, n := range names {
			cs = append(cs, Condition{Name: n, State: OK})
		}
		return cs
	}
	conds := ok(append(append(append([]string(nil), base...), needs.All...), needs.Fixtures("dra"), needs.Fixtures("cri"))...)
	find := func(vs []Verdict) Verdict {
		for _, v := range vs {
			if v.ID == id {
				return v
			}
		}
		t.Fatalf("no verdict for %s", id)
		return Verdict{}
	}
	label := requirements.Label(id)
	v := find(judge(conds, []Spec{
		{Labels: append([]string{label}, needs.Labels(needs.Fixtures("dra"))...)},
		{Labels: append([]string{label, disruptiveLabel}, needs.Labels(needs.Fixtures("cri"), needs.GateHealth)...)},
	}))
	want := append(append([]string(nil), base...), needs.Fixtures("dra"), needs.DRAAPI, needs.PermissionsDRA, needs.GateDRA, needs.Fixtures("cri"), needs.SlowHandler, needs.GateHealth)
	if !slices.Equal(v.Needs, want) {
		t.Errorf("needs %v, want %v", v.Needs, want)
	}
	if v.Verdict != CanCheck || len(v.Notes) != 1 || !strings.HasPrefix(v.Notes[0], "Disruptive") {
		t.Errorf("%s, notes %q", v.Line(), v.Notes)
	}
	if v := find(judge(conds, []Spec{{Labels: []string{label}, Pending: true}})); v.Verdict != Pending {
		t.Errorf("pending spec: %s", v.Line())
	}
	if v := find(judge(conds, nil)); v.Verdict != Undecided || !strings.Contains(v.Line(), "no spec") {
		t.Errorf("no spec: %s", v.Line())
	}
}
