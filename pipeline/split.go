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

// shares says how each stack's selection is split between clusters. Serial
// specs (a kubelet or runtime restart, a fault every pod on the node would
// feel) run one at a time after the rest on one cluster; on a second
// cluster of the same stack they run at the same time as the rest instead,
// so that a stack's wall is the longer of the two, not their sum. Only where
// the run creates its clusters (an existing cluster is the user's one node
// set), only when the selection has specs of both kinds (an empty share
// would be a cluster for nothing, and ginkgo fails on an empty selection),
// and not with SingleCluster.
func (o *Options) shares() ([]share, error) {
	if o.SingleCluster || o.Kubeconfig != "" || len(o.SpecTree.Specs) == 0 {
		return []share{wholeSelection}, nil
	}
	serial, rest, err := countSelected(o.SpecTree, o.labelFilter(), o.Focus)
	if err != nil {
		return nil, err
	}
	if serial == 0 || rest == 0 {
		return []share{wholeSelection}, nil
	}
	return []share{parallelShare, serialShare}, nil
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
