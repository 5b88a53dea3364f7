// Package needs names what a spec needs from a cluster beyond the API, its
// own permissions and a node: a fixture set, a feature gate, a runtime
// handler. A spec declares them as labels (Needs:<name>, and Informs:<name>
// for a condition that changes only the outcome it expects), and preflight
// reads them from the spec tree to say, per requirement, whether a cluster
// can check it. The names are preflight's condition names, so a spec and
// the check that answers it use the same word.
package needs

import "strings"

// Label prefixes a spec's needs carry.
const (
	// NeedsPrefix starts a label naming a condition the spec cannot run
	// without: "Needs:gate-health".
	NeedsPrefix = "Needs:"
	// InformsPrefix starts a label naming a condition that only changes the
	// spec's expected outcome (a missing gate makes it "not implemented"):
	// "Informs:gate-permanent-failures".
	InformsPrefix = "Informs:"
)

// The conditions a spec can need, beyond its fixture sets (Fixtures).
const (
	DRAAPI                = "dra-api"
	PermissionsDRA        = "permissions-dra"
	SlowHandler           = "slow-handler"
	GateDRA               = "gate-dra"
	GateHealth            = "gate-health"
	GatePermanentFailures = "gate-permanent-failures"
	GateDeviceTaints      = "gate-device-taints"
	NRI                   = "nri"
	NRIValidator          = "nri-validator"
	// ContainerSlowdown: a way to hold a CreateContainer past its caller's
	// deadline (runc-slow where CreateContainer runs the OCI create, the
	// fake NRI plugin elsewhere).
	ContainerSlowdown     = "cri-container-slowdown"
	RuntimeRequestTimeout = "runtime-request-timeout"
)

// All is every condition above, for the checks that each is answered.
var All = []string{DRAAPI, PermissionsDRA, SlowHandler, GateDRA, GateHealth, GatePermanentFailures,
	GateDeviceTaints, NRI, NRIValidator, ContainerSlowdown, RuntimeRequestTimeout}

// fixturesPrefix starts the condition that a fixture set can be applied.
const fixturesPrefix = "fixtures-"

// Fixtures is the condition that fixture set (fixtures/<set>) can be
// applied: its APIs served, its objects' creation allowed.
func Fixtures(set string) string { return fixturesPrefix + set }

// FixtureSet returns the set a Fixtures condition names.
func FixtureSet(condition string) (string, bool) {
	return strings.CutPrefix(condition, fixturesPrefix)
}

// Labels are the labels declaring that a spec needs conditions.
func Labels(conditions ...string) []string { return prefixed(NeedsPrefix, conditions) }

// InformsLabels are the labels declaring conditions that only change what a
// spec expects.
func InformsLabels(conditions ...string) []string { return prefixed(InformsPrefix, conditions) }

// FromLabels reads a spec's labels: the conditions it needs and those that
// inform it, in label order.
func FromLabels(labels []string) (need, inform []string) {
	for _, l := range labels {
		if c, ok := strings.CutPrefix(l, NeedsPrefix); ok {
			need = append(need, c)
		} else if c, ok := strings.CutPrefix(l, InformsPrefix); ok {
			inform = append(inform, c)
		}
	}
	return need, inform
}

func prefixed(prefix string, conditions []string) []string {
	out := make([]string, len(conditions))
	for i, c := range conditions {
		out[i] = prefix + c
	}
	return out
}
