package preflight

import (
	"fmt"
	"slices"
	"strings"

	"github.com/faultline-k8s/faultline/vocab/needs"

	"github.com/faultline-k8s/faultline/judge/requirements"
)

// The conditions Run reports that every spec needs; the others are named by
// vocab/needs, the words specs declare their needs with.
const (
	CondAPI         = "api"
	CondPermissions = "permissions"
	CondNodes       = "nodes"
	CondRuntime     = "runtime"
	CondPodSecurity = "pod-security"
)

// base is what every spec needs: the API, the specs' own permissions, a node
// for test pods, a runtime the suites' setup recognises, and namespaces
// admission accepts.
var base = []string{CondAPI, CondPermissions, CondNodes, CondRuntime, CondPodSecurity}

// fixtureNeeds is what each fixture set needs to become ready, beyond being
// applied: a spec that needs the set (Needs:fixtures-<set>) needs these too.
var fixtureNeeds = map[string][]string{
	"dra": {needs.DRAAPI, needs.PermissionsDRA, needs.GateDRA},
	"cri": {needs.SlowHandler},
	"nri": {needs.NRI},
}

// Spec is one spec of the test binary as preflight reads it: its labels
// (the requirements it checks, vocab/needs labels, Disruptive) and whether
// it is pending.
type Spec struct {
	Labels  []string
	Pending bool
}

// disruptiveLabel is the e2e framework's label of a spec that disrupts the
// node (framework.WithDisruptive).
const disruptiveLabel = "Disruptive"

// disruptiveNote: on faultline's own clusters Disruptive specs always run.
const disruptiveNote = "Disruptive (restarts the node's runtime or kubelet): runs only with --disruptive on a cluster faultline did not create " +
	"(faultline e2e; the conformance image: an E2E_LABEL_FILTER without !Disruptive)"

// requirementSpecs is what the specs of one requirement declare together.
type requirementSpecs struct {
	needs, informs []string
	disruptive     bool
	specs, pending int
}

// bySpecs gathers, per requirement, what its specs declare: the union of
// their needs (base first, each fixture set followed by what it needs), no
// duplicates.
func bySpecs(specs []Spec) map[string]*requirementSpecs {
	out := map[string]*requirementSpecs{}
	for _, s := range specs {
		need, inform := needs.FromLabels(s.Labels)
		for _, id := range requirements.FromLabels(s.Labels) {
			r := out[id]
			if r == nil {
				r = &requirementSpecs{needs: append([]string(nil), base...)}
				out[id] = r
			}
			r.specs++
			if s.Pending {
				r.pending++
			}
			r.disruptive = r.disruptive || slices.Contains(s.Labels, disruptiveLabel)
			for _, n := range need {
				r.needs = appendNew(r.needs, n)
				if set, ok := needs.FixtureSet(n); ok {
					for _, m := range fixtureNeeds[set] {
						r.needs = appendNew(r.needs, m)
					}
				}
			}
			for _, n := range inform {
				r.informs = appendNew(r.informs, n)
			}
		}
	}
	return out
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// judge gives each requirement of the catalogue its verdict from what its
// specs need: cannot check if a condition they need is missing, unknown if
// one is unknown.
func judge(conds []Condition, specs []Spec) []Verdict {
	byName := map[string]Condition{}
	for _, c := range conds {
		byName[c.Name] = c
	}
	declared := bySpecs(specs)
	var out []Verdict
	for _, r := range requirements.All() {
		e, ok := declared[r.ID]
		if !ok {
			out = append(out, Verdict{ID: r.ID, Area: r.Area, Verdict: Undecided, Reasons: []string{"no spec of this build checks it"}})
			continue
		}
		v := Verdict{ID: r.ID, Area: r.Area, Needs: e.needs, Verdict: CanCheck}
		var missing, unknown []string
		for _, n := range v.Needs {
			c, ok := byName[n]
			switch {
			case !ok:
				unknown = append(unknown, n+" (not checked)")
			case c.State == Missing:
				missing = append(missing, n+" missing")
			case c.State == Unknown:
				unknown = append(unknown, n+" unknown")
			}
		}
		switch {
		case e.pending == e.specs:
			v.Verdict, v.Reasons = Pending, []string{"its specs are pending"}
		case len(missing) > 0:
			v.Verdict, v.Reasons = CannotCheck, append(missing, unknown...)
		case len(unknown) > 0:
			v.Verdict, v.Reasons = Undecided, unknown
		}
		for _, n := range e.informs {
			if c, ok := byName[n]; ok && c.State != OK {
				v.Notes = append(v.Notes, fmt.Sprintf("%s %s: expect \"not implemented\", not a skip", n, c.State))
			}
		}
		if e.disruptive {
			v.Notes = append(v.Notes, disruptiveNote)
		}
		out = append(out, v)
	}
	return out
}

// Line is the verdict as one line: "cannot check: slow-handler missing".
func (v Verdict) Line() string {
	if len(v.Reasons) == 0 {
		return v.Verdict
	}
	return v.Verdict + ": " + strings.Join(v.Reasons, ", ")
}
