package preflight

import (
	"testing"

	"github.com/faultline-k8s/faultline/judge/requirements"
)

// The drift guard: every requirement of the catalogue has an entry, every
// entry names a requirement, and every condition the mapping names is one
// Run reports.
func TestEveryRequirementMapped(t *testing.T) {
	for _, r := range requirements.All() {
		if _, ok := table[r.ID]; !ok {
			t.Errorf("%s (area %s) is not in preflight/mapping.go's table: add it with what its specs need", r.ID, r.Area)
		}
		if _, ok := areaNeeds[r.Area]; !ok {
			t.Errorf("%s: area %q has no areaNeeds", r.ID, r.Area)
		}
	}
	for id := range table {
		if _, ok := requirements.Lookup(id); !ok {
			t.Errorf("preflight/mapping.go maps %s, which the catalogue does not have", id)
		}
	}
	reported := map[string]bool{}
	for _, c := range run(t, kind()).Conditions {
		if reported[c.Name] {
			t.Errorf("condition %s reported twice", c.Name)
		}
		reported[c.Name] = true
	}
	check := func(where string, names []string) {
		for _, n := range names {
			if !reported[n] {
				t.Errorf("%s needs condition %q, which Run does not report", where, n)
			}
		}
	}
	check("base", base)
	for area, names := range areaNeeds {
		check("area "+area, names)
	}
	for id, e := range table {
		check(id, e.Needs)
		check(id, e.Informs)
	}
}
