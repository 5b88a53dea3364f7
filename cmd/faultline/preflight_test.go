package main

import (
	"slices"
	"testing"

	"github.com/faultline-k8s/faultline/fixtures"
	"github.com/faultline-k8s/faultline/judge/requirements"
	"github.com/faultline-k8s/faultline/vocab/needs"
)

// The spec tree preflight reads (the suites linked into the CLI) has a spec
// for every requirement of the catalogue, and every need a spec declares is
// a condition preflight knows: a vocab/needs condition or a fixture set's.
func TestPreflightReadsEveryRequirementsSpecs(t *testing.T) {
	specs := specsOfTheSuites()
	if len(specs) == 0 {
		t.Fatal("no specs: the suites are not linked")
	}
	sets := fixtures.Sets()
	checked := map[string]bool{}
	for _, s := range specs {
		for _, id := range requirements.FromLabels(s.Labels) {
			checked[id] = true
		}
		need, inform := needs.FromLabels(s.Labels)
		for _, n := range append(need, inform...) {
			if set, ok := needs.FixtureSet(n); ok && slices.Contains(sets, set) || slices.Contains(needs.All, n) {
				continue
			}
			t.Errorf("a spec labelled %v needs %q, which preflight does not know", s.Labels, n)
		}
	}
	for _, r := range requirements.All() {
		if !checked[r.ID] {
			t.Errorf("%s: no spec of the tree checks it", r.ID)
		}
	}
}
