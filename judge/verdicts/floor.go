package verdicts

import "sort"

// StackSpecs returns the specs that ran on stack, each once: a spec that
// checks several requirements is in each one's verdict. They come in the
// order of the rows, then of the runs.
func (r *Report) StackSpecs(stack string) []Spec {
	type key struct {
		run            int
		name, location string
	}
	seen := map[key]bool{}
	var out []Spec
	for _, v := range r.Verdicts {
		if v.Stack != stack {
			continue
		}
		for _, s := range v.Specs {
			k := key{s.Run, s.Name, s.Location}
			if !seen[k] {
				seen[k] = true
				out = append(out, s)
			}
		}
	}
	return out
}

// HasFloors says whether some spec of the report declared its floor: a run
// of a faultline before floors has none, and its report says so once
// instead of "unknown" for every spec.
func (r *Report) HasFloors() bool {
	for _, v := range r.Verdicts {
		for _, s := range v.Specs {
			if s.Floor != nil {
				return true
			}
		}
	}
	return false
}

// SlowSpec is a spec that took more than FloorFactor times its floor.
type SlowSpec struct {
	Stack string
	Spec
	// Ratio is its run time over its floor.
	Ratio float64
}

// OverFloor returns the specs that took more than FloorFactor times their
// floor (Spec.OverFloor), stack by stack in the report's order, the
// largest ratio first.
func (r *Report) OverFloor() []SlowSpec {
	var out []SlowSpec
	for _, st := range r.Stacks {
		var slow []SlowSpec
		for _, s := range r.StackSpecs(st.Key) {
			if s.OverFloor() {
				ratio, _ := s.FloorRatio()
				slow = append(slow, SlowSpec{Stack: st.Key, Spec: s, Ratio: ratio})
			}
		}
		sort.SliceStable(slow, func(i, j int) bool { return slow[i].Ratio > slow[j].Ratio })
		out = append(out, slow...)
	}
	return out
}
