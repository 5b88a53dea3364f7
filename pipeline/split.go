package pipeline

import (
	"fmt"
	"regexp"

	"github.com/onsi/ginkgo/v2/types"
)

// serialLabel is the label the e2e framework gives a Serial spec
// (framework.WithSerial): such a spec needs the node alone.
const serialLabel = "Serial"

// A share is the part of a stack's selection one of its clusters runs: all
// of it, or, with the Serial specs apart, the rest or the Serial specs.
type share struct {
	// name is "" for the stack's first cluster and "serial" for the second
	// (its directory under the stack's, its cluster's suffix).
	name string
	// filter is added to the run's label filter.
	filter string
}

var (
	wholeSelection = share{}
	parallelShare  = share{filter: "!" + serialLabel}
	serialShare    = share{name: "serial", filter: serialLabel}
)

// labelFilter is the run's label filter narrowed to the share.
func (s share) labelFilter(run string) string {
	switch {
	case s.filter == "":
		return run
	case run == "":
		return s.filter
	}
	return "(" + run + ") && " + s.filter
}

// SerialClusterMode is Options.SerialCluster.
type SerialClusterMode string

const (
	// SerialClusterAuto splits where the machine has two spare cores for
	// each cluster of the run (two per stack; capacity.Machine). Measured
	// here: two clusters of one stack on an idle 2-core machine, with 6
	// Ginkgo processes each, drove the load average to 26-80; witness reads
	// timed out and premises timed on the node were missed, while one
	// cluster with 3 processes kept it under 15 and every verdict held.
	SerialClusterAuto SerialClusterMode = ""
	// SerialClusterAlways splits whatever the machine.
	SerialClusterAlways SerialClusterMode = "always"
	// SerialClusterNever keeps one cluster per stack, the Serial specs last.
	SerialClusterNever SerialClusterMode = "never"
)

// weighsMachine says whether a default of the run follows the machine's
// idle cores (Options.Machine): the processes per cluster, or where the
// Serial specs run on a run that creates its clusters.
func (o Options) weighsMachine() bool {
	return o.Procs == 0 || (o.SerialCluster == SerialClusterAuto && o.Kubeconfig == "")
}

// SerialClusterModes are the modes by the names the CLI takes.
var SerialClusterModes = map[string]SerialClusterMode{"auto": SerialClusterAuto, "always": SerialClusterAlways, "never": SerialClusterNever}

// shares says how each stack's selection is split between clusters, and
// why (for the run's output). Serial specs (a kubelet or runtime restart, a
// fault every pod on the node would feel) run one at a time after the rest
// on one cluster; on a second cluster of the same stack they run at the
// same time as the rest instead, so that a stack's wall is the longer of
// the two, not their sum. Only where the run creates its clusters (an
// existing cluster is the user's one node set), only when the selection has
// specs of both kinds (an empty share would be a cluster for nothing, and
// ginkgo fails on an empty selection), and as SerialCluster says.
func (o *Options) shares() ([]share, string, error) {
	if o.Kubeconfig != "" || len(o.SpecTree.Specs) == 0 || o.SerialCluster == SerialClusterNever {
		return []share{wholeSelection}, "", nil
	}
	serial, rest, err := countSelected(o.SpecTree, o.labelFilter(), o.Focus)
	if err != nil {
		return nil, "", err
	}
	if serial == 0 || rest == 0 {
		return []share{wholeSelection}, "", nil
	}
	clusters := 2 * len(o.Stacks())
	if o.SerialCluster == SerialClusterAuto && !o.Machine.CarriesClusters(clusters) {
		return []share{wholeSelection}, fmt.Sprintf("the Serial specs run after the rest on each stack's cluster: %d clusters (a second per stack for its Serial specs) want two spare cores each, and this machine has %s (%s always splits anyway)",
			clusters, o.Machine, o.OptionName("SerialCluster")), nil
	}
	return []share{parallelShare, serialShare}, fmt.Sprintf("the Serial specs run on a second cluster of each stack (<cluster>-serial), beside the rest (%s never keeps one)", o.OptionName("SerialCluster")), nil
}

// countSelected counts the specs a run with this label filter and focus
// selects, as Ginkgo selects them (its focus matches the suite's
// description and the spec's text), by whether they are Serial.
func countSelected(tree SpecTree, labelFilter, focus string) (serial, rest int, err error) {
	match := func([]string) bool { return true }
	if labelFilter != "" {
		if match, err = types.ParseLabelFilter(labelFilter); err != nil {
			return 0, 0, fmt.Errorf("label filter %q: %w", labelFilter, err)
		}
	}
	var focusRE *regexp.Regexp
	if focus != "" {
		if focusRE, err = regexp.Compile(focus); err != nil {
			return 0, 0, fmt.Errorf("focus %q: %w", focus, err)
		}
	}
	for _, s := range tree.Specs {
		if s.State == types.SpecStatePending || !match(s.Labels()) {
			continue
		}
		if focusRE != nil && !focusRE.MatchString(tree.Description+" "+s.FullText()) {
			continue
		}
		if s.IsSerial {
			serial++
		} else {
			rest++
		}
	}
	return serial, rest, nil
}
