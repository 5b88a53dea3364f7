package preflight

import (
	"fmt"
	"strings"

	"github.com/faultline-k8s/faultline/judge/requirements"
)

// The conditions Run reports, by name.
const (
	CondAPI                   = "api"
	CondPermissions           = "permissions"
	CondPermissionsDRA        = "permissions-dra"
	CondDRAAPI                = "dra-api"
	CondNodes                 = "nodes"
	CondRuntime               = "runtime"
	CondSlowHandler           = "slow-handler"
	CondGateDRA               = "gate-dra"
	CondGateHealth            = "gate-health"
	CondGatePermanentFailures = "gate-permanent-failures"
	CondGateDeviceTaints      = "gate-device-taints"
	CondNRI                   = "nri"
	CondNRIValidator          = "nri-validator"
	CondContainerSlowdown     = "cri-container-slowdown"
	CondRuntimeRequestTimeout = "runtime-request-timeout"
	CondPodSecurity           = "pod-security"
)

// CondFixtures is the condition that fixture set (fixtures/<set>) can be
// applied: its APIs served, its objects' creation allowed.
func CondFixtures(set string) string { return "fixtures-" + set }

// base is what every spec needs: the API, the specs' own permissions, a node
// for test pods, a runtime the suites' setup recognises, and namespaces
// admission accepts.
var base = []string{CondAPI, CondPermissions, CondNodes, CondRuntime, CondPodSecurity}

// areaNeeds adds, per area, what every spec of its suite needs: its fixture
// set (deployed before each spec, harness.Require) and what that set needs
// to become ready.
var areaNeeds = map[string][]string{
	"faultline": nil,
	"dra":       {CondDRAAPI, CondPermissionsDRA, CondFixtures("dra"), CondGateDRA},
	"cri":       {CondFixtures("cri"), CondSlowHandler},
	"nri":       {CondFixtures("nri"), CondNRI},
}

// entry refines one requirement beyond its area.
type entry struct {
	// Needs are further conditions its specs need.
	Needs []string
	// Informs are conditions that change only the expected outcome, not
	// whether it can be checked: shown as notes when not ok.
	Informs []string
	// Disruptive: its spec carries the Disruptive label.
	Disruptive bool
	// Pending: its specs are ginkgo.Pending, waiting for this design.
	Pending string
}

// disruptiveNote: on faultline's own clusters Disruptive specs always run.
const disruptiveNote = "Disruptive (restarts the node's runtime or kubelet): runs only with --disruptive on a cluster faultline did not create " +
	"(faultline e2e; the conformance image: an E2E_LABEL_FILTER without !Disruptive)"

// containerStage: on a runtime whose CreateContainer runs no OCI create
// (containerd) the CRI container stage goes through the fake NRI plugin.
var containerStage = entry{Needs: []string{CondContainerSlowdown}}

// table maps every requirement of the catalogue (TestEveryRequirementMapped
// is the drift guard). Derived from the suites: Feature labels, skips,
// Require calls and the Disruptive label (suites/cri/cache.go spec 7).
var table = map[string]entry{
	"DRA-PERMANENT-FAILS-POD":    {Informs: []string{CondGatePermanentFailures}},
	"DRA-TRANSIENT-RETRIED":      {},
	"DRA-UNCLASSIFIED-TRANSIENT": {},
	"DRA-BAD-CONFIG-NAMED":       {},
	"DRA-DEADLINE-RETRIED":       {},
	"DRA-DEADLINE-ERROR-NAMED":   {},
	// The kubelet restarts through the CRI relay (fixtures/cri).
	"DRA-KUBELET-RESTART-PREPARE":    {Needs: []string{CondFixtures("cri")}, Disruptive: true},
	"DRA-KUBELET-RESTART-UNPREPARE":  {Needs: []string{CondFixtures("cri")}, Disruptive: true},
	"DRA-EVERY-FAILING-DEVICE-NAMED": {},
	"DRA-EVERY-FAILING-CLAIM-NAMED":  {},
	"DRA-DELETED-POD-UNPREPARED":     {},
	"DRA-UNPREPARE-RETRIED":          {},
	"DRA-UNPREPARE-TWO-DRIVERS":      {},
	"DRA-TAINTED-DEVICE-EVICTS":      {Needs: []string{CondGateDeviceTaints}},
	"DRA-HEALTH-IN-POD-STATUS":       {Needs: []string{CondGateHealth}},
	"DRA-TWO-DRIVERS-CDI-ONCE":       {},
	"DRA-HEALTH-RECONNECT":           {Needs: []string{CondGateHealth}},
	"DRA-UNRESPONSIVE-DRIVER":        {},

	"CRI-SANDBOX-RETRY-GETS-FIRST":    {},
	"CRI-SANDBOX-RETRY-IN-PROGRESS":   {},
	"CRI-SANDBOX-UNCLAIMED-HIDDEN":    {},
	"CRI-SANDBOX-CHANGED-REQUEST":     {},
	"CRI-SANDBOX-UNCLAIMED-REMOVED":   {},
	"CRI-SANDBOX-RESTART-NO-LEAK":     {Disruptive: true},
	"CRI-CONTAINER-RETRY-GETS-FIRST":  containerStage,
	"CRI-CONTAINER-RETRY-IN-PROGRESS": containerStage,
	"CRI-CONTAINER-UNCLAIMED-HIDDEN":  containerStage,
	"CRI-CONTAINER-CHANGED-REQUEST":   containerStage,
	"CRI-CONTAINER-UNCLAIMED-REMOVED": containerStage,
	"CRI-CONTAINER-RESTART-NO-LEAK":   {Needs: []string{CondContainerSlowdown}, Disruptive: true},
	"CRI-KUBELET-SLOW-CREATION-RUNS":  {Needs: []string{CondRuntimeRequestTimeout}},

	"NRI-SYNC-ERROR-FAILS-REQUEST":         {},
	"NRI-ERROR-STOPS-CHAIN":                {},
	"NRI-ASYNC-ERROR-IGNORED":              {},
	"NRI-STALLED-PLUGIN-DROPPED":           {},
	"NRI-CRASHED-PLUGIN-DROPPED":           {},
	"NRI-START-ERROR-FAILS-REQUEST":        {},
	"NRI-STOP-SANDBOX-ERROR-FAILS-REQUEST": {},
	"NRI-REQUIRED-PLUGIN-MISSING":          {Needs: []string{CondNRIValidator}},
	"NRI-REQUIRED-PLUGINS-PRESENT":         {},
	"NRI-POLICY-FAIL-REQUEST":              {},
	"NRI-POLICY-KEEP-CONNECTED":            {},
	"NRI-POLICY-RETURNED-ERROR-FAILS":      {},
	"NRI-REQUIRED-PLUGIN-TIMEOUT":          {Needs: []string{CondNRIValidator}},

	// Each suite's smoke spec: no fixture set.
	"FAULTLINE-CLUSTER-RUNS-PODS": {},
	// Each suite's scope spec deploys its suite's fixture set first.
	"FAULTLINE-FAULTS-SCOPED": {Needs: []string{CondFixtures("dra"), CondDRAAPI, CondGateDRA, CondFixtures("cri"), CondFixtures("nri"), CondNRI}},
}

// needs is every condition requirement r needs, base first, no duplicates.
func needs(r requirements.Requirement, e entry) []string {
	var out []string
	seen := map[string]bool{}
	for _, list := range [][]string{base, areaNeeds[r.Area], e.Needs} {
		for _, n := range list {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	return out
}

// judge gives each requirement of the catalogue its verdict: cannot check
// if a condition it needs is missing, unknown if one is unknown.
func judge(conds []Condition) []Verdict {
	byName := map[string]Condition{}
	for _, c := range conds {
		byName[c.Name] = c
	}
	var out []Verdict
	for _, r := range requirements.All() {
		e, mapped := table[r.ID]
		v := Verdict{ID: r.ID, Area: r.Area, Needs: needs(r, e), Verdict: CanCheck}
		if !mapped {
			v.Verdict, v.Reasons = Undecided, []string{"not mapped in preflight/mapping.go"}
			out = append(out, v)
			continue
		}
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
		case e.Pending != "":
			v.Verdict, v.Reasons = Pending, []string{e.Pending}
		case len(missing) > 0:
			v.Verdict, v.Reasons = CannotCheck, append(missing, unknown...)
		case len(unknown) > 0:
			v.Verdict, v.Reasons = Undecided, unknown
		}
		for _, n := range e.Informs {
			if c, ok := byName[n]; ok && c.State != OK {
				v.Notes = append(v.Notes, fmt.Sprintf("%s %s: expect \"not implemented\", not a skip", n, c.State))
			}
		}
		if e.Disruptive {
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
