// Package all is every suite of the test binary, registered on import, and
// the one way to list their specs without a cluster: the test binary runs
// them, and the CLI's preflight reads from them what each requirement needs
// (Preview), so that what a spec needs is written only on the spec.
package all

import (
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	// The suites: their specs register on import.
	_ "github.com/faultline-k8s/faultline/suites/cri"
	_ "github.com/faultline-k8s/faultline/suites/dra"
	_ "github.com/faultline-k8s/faultline/suites/nri"
)

// Description names the spec tree, as the test binary's RunSpecs does.
const Description = "faultline"

// Preview returns every spec of the tree (It nodes only), with its labels
// and whether it is pending; nothing runs.
func Preview() []types.SpecReport {
	var specs []types.SpecReport
	for _, s := range ginkgo.PreviewSpecs(Description).SpecReports {
		if s.LeafNodeType == types.NodeTypeIt {
			specs = append(specs, s)
		}
	}
	return specs
}
