package verdicts

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/faultline-k8s/faultline/judge/requirements"
	"github.com/faultline-k8s/faultline/vocab/wire"
)

// Header is what a report says about the run as a whole.
type Header struct {
	// Faultline is the version of faultline that ran.
	Faultline string    `json:"faultline"`
	Date      time.Time `json:"date"`
	// LabelFilter and Focus are the filters the specs were chosen by: the
	// run's own, "" meaning every spec. A run that split each stack's
	// selection between clusters (Split) still has one filter: each share's
	// is the run's narrowed to its part.
	LabelFilter string   `json:"labelFilter,omitempty"`
	Focus       []string `json:"focus,omitempty"`
	// Split says how the run split each stack's selection between clusters
	// ("Serial specs on a second cluster per stack"); "" when one cluster
	// per stack ran all of it.
	Split string `json:"split,omitempty"`
	// Repeat is how many times the selection ran on each cluster.
	Repeat int `json:"repeat"`
	// OwnClusters: faultline made the clusters, so every precondition of
	// every spec is there by construction, and a skip is unexpected unless
	// an expectation names it; so is an inconclusive spec (its premise is
	// meant to happen there). On a cluster it did not make, either is
	// reported, never unexpected, and makes the run incomplete.
	OwnClusters bool `json:"ownClusters,omitempty"`
	// Expectations is the --expectations the run judged by ("": the
	// built-in ones); faultline report judges by it again.
	Expectations string `json:"expectations,omitempty"`
}

// SetupFailure is a suite-level node that failed on a stack.
type SetupFailure struct {
	Stack string `json:"stack"`
	Spec
}

// Report is a run's verdicts: requirements as rows, stacks as columns.
type Report struct {
	Header Header           `json:"header"`
	Stacks []wire.StackInfo `json:"stacks"`
	// Requirements are the rows: every requirement some selected spec
	// checks, in the catalogue's order.
	Requirements []requirements.Requirement `json:"requirements"`
	Verdicts     []Verdict                  `json:"verdicts"`
	// SetupFailures always make the run fail.
	SetupFailures []SetupFailure `json:"setupFailures,omitempty"`
	// Expectations names, per stack key, the file its expectations came
	// from; a stack without one has every failure unexpected.
	Expectations map[string]string `json:"expectations"`
	// Coverage is Count() when Build judged, for tools.
	Coverage Coverage `json:"coverage"`
}

// Verdict returns the verdict of requirement id on stack, or nil (not run).
func (r *Report) Verdict(id, stack string) *Verdict {
	for i := range r.Verdicts {
		if r.Verdicts[i].Requirement == id && r.Verdicts[i].Stack == stack {
			return &r.Verdicts[i]
		}
	}
	return nil
}

// Unexpected returns the verdicts that make the run fail.
func (r *Report) Unexpected() []Verdict {
	var out []Verdict
	for _, v := range r.Verdicts {
		if v.Unexpected != "" {
			out = append(out, v)
		}
	}
	return out
}

// OK says whether nothing was unexpected: the run's exit code follows it.
func (r *Report) OK() bool { return len(r.Unexpected()) == 0 && len(r.SetupFailures) == 0 }

// Coverage is how much of what a run selected it checked, counted in
// verdicts (a requirement on a stack): a requirement the filters left out
// has none, so it is not counted.
type Coverage struct {
	// Selected counts the verdicts but the pending ones.
	Selected int `json:"selected"`
	// Checked counts those whose state says something about the
	// requirement (State.Checked): pass, fail, known discrepancy, not
	// implemented; not skipped or inconclusive.
	Checked int `json:"checked"`
	// Pending counts the pending verdicts, which are not asked to check.
	Pending int `json:"pending,omitempty"`
}

// Count counts r's verdicts; the row of specs that name no requirement is
// no requirement, so not counted.
func (r *Report) Count() Coverage {
	var c Coverage
	for _, v := range r.Verdicts {
		switch {
		case v.Requirement == NoRequirement:
		case v.State == Pending:
			c.Pending++
		default:
			c.Selected++
			if v.State.Checked() {
				c.Checked++
			}
		}
	}
	return c
}

// NotChecked returns the selected verdicts that checked nothing (skipped,
// inconclusive): each makes the run incomplete.
func (r *Report) NotChecked() []Verdict {
	var out []Verdict
	for _, v := range r.Verdicts {
		if v.Requirement != NoRequirement && v.State != Pending && !v.State.Checked() {
			out = append(out, v)
		}
	}
	return out
}

// Complete says whether the run checked every requirement it selected; a
// run that did not exits ErrIncomplete's code unless the user accepts it.
func (r *Report) Complete() bool { return len(r.NotChecked()) == 0 }

// Err is what a run judged by r ends with: ErrUnexpected when a verdict is
// unexpected or a setup failed; else ErrIncomplete when it checked less
// than it selected, unless allowIncomplete; else nil.
func (r *Report) Err(allowIncomplete bool) error {
	if !r.OK() {
		return fmt.Errorf("%w: %d verdict(s) and %d setup failure(s) the expectations do not allow%s", ErrUnexpected, len(r.Unexpected()), len(r.SetupFailures), r.listUnexpected())
	}
	if !allowIncomplete && !r.Complete() {
		c := r.Count()
		busy := ""
		if n := len(r.TooBusy()); n > 0 {
			busy = fmt.Sprintf("; %d of them because the node was too busy to judge (its timers fired later than the check absorbs: see report.md): run again with fewer --procs, one cluster per stack, or on a quieter machine", n)
		}
		return fmt.Errorf("%w: %d of %d requirements checked, %d skipped or inconclusive%s", ErrIncomplete, c.Checked, c.Selected, c.Selected-c.Checked, busy)
	}
	return nil
}

// tooBusy says whether specs has an inconclusive spec and each of them
// was too busy to judge (wire.TooBusy).
func tooBusy(specs []Spec) bool {
	seen := false
	for _, s := range specs {
		if s.State != Inconclusive {
			continue
		}
		if !strings.Contains(s.Message, wire.TooBusy) {
			return false
		}
		seen = true
	}
	return seen
}

// TooBusy returns the verdicts not checked because their node was too busy
// to judge them.
func (r *Report) TooBusy() []Verdict {
	var out []Verdict
	for _, v := range r.NotChecked() {
		if v.State == Inconclusive && tooBusy(v.Specs) {
			out = append(out, v)
		}
	}
	return out
}

// listUnexpected names what made the run fail, a line each, so that the
// last lines of a run's output (often all a CI log shows) say which
// verdict to look at; report.md has the whole story.
func (r *Report) listUnexpected() string {
	var b strings.Builder
	for _, v := range r.Unexpected() {
		fmt.Fprintf(&b, "\n  %s on %s: %s", v.Requirement, v.Stack, OneLine(v.Unexpected, 300))
	}
	for _, f := range r.SetupFailures {
		fmt.Fprintf(&b, "\n  setup on %s: %s: %s", f.Stack, f.Name, OneLine(f.Message, 300))
	}
	return b.String()
}

// rank orders states from worst to best: a requirement with several specs,
// or several runs, shows the worst. Inconclusive is worse than not
// implemented and skipped: a spec that ran and could not tell says less
// than one that saw the stack lack the feature, and its cause may hide a
// failure.
var rank = map[State]int{Fail: 0, KnownDiscrepancy: 1, Inconclusive: 2, NotImplemented: 3, Skipped: 4, Pass: 5, Pending: 6}

func worst(states []State) State {
	w := Pending
	for _, s := range states {
		if rank[s] < rank[w] {
			w = s
		}
	}
	return w
}

// Build judges runs (any number of stacks, any number of runs each) against
// expectations.
func Build(runs []Run, expectations ExpectationSet, header Header) *Report {
	rep := &Report{Header: header, Expectations: map[string]string{}}
	byStack := map[string][]Run{}
	for _, run := range runs {
		key := run.Stack.Key
		if _, seen := byStack[key]; !seen {
			rep.Stacks = append(rep.Stacks, run.Stack)
		}
		byStack[key] = append(byStack[key], run)
		for _, f := range run.SetupFailures {
			rep.SetupFailures = append(rep.SetupFailures, SetupFailure{Stack: key, Spec: f})
		}
		if rep.Header.LabelFilter == "" && len(rep.Header.Focus) == 0 {
			rep.Header.LabelFilter, rep.Header.Focus = run.LabelFilter, run.Focus
		}
	}
	sort.SliceStable(rep.Stacks, func(i, j int) bool { return rep.Stacks[i].Key < rep.Stacks[j].Key })

	rows := map[string]bool{}
	for _, stack := range rep.Stacks {
		x := expectations.For(stack.Key)
		if x != nil {
			rep.Expectations[stack.Key] = x.File
		}
		stackRuns := byStack[stack.Key]
		if len(stackRuns) > rep.Header.Repeat {
			rep.Header.Repeat = len(stackRuns)
		}
		// The specs of each requirement, per run.
		perReq := map[string][][]Spec{}
		for i, run := range stackRuns {
			for _, spec := range run.Specs {
				ids := spec.Requirements
				if len(ids) == 0 {
					ids = []string{NoRequirement}
				}
				for _, id := range ids {
					if perReq[id] == nil {
						perReq[id] = make([][]Spec, len(stackRuns))
					}
					perReq[id][i] = append(perReq[id][i], spec)
				}
			}
		}
		ids := make([]string, 0, len(perReq))
		for id := range perReq {
			ids = append(ids, id)
			rows[id] = true
		}
		for _, id := range requirements.Sorted(ids) {
			rep.Verdicts = append(rep.Verdicts, judge(id, stack.Key, perReq[id], x.For(id, stack.KubernetesVersion), header.OwnClusters))
		}
	}
	var ids []string
	for id := range rows {
		ids = append(ids, id)
	}
	for _, id := range requirements.Sorted(ids) {
		r, ok := requirements.Lookup(id)
		if !ok {
			r = requirements.Requirement{ID: id, Area: "?", Title: "(not in judge/requirements/catalogue.yaml)"}
		}
		rep.Requirements = append(rep.Requirements, r)
	}
	rep.Coverage = rep.Count()
	return rep
}

// NoRequirement is the row of specs that name no requirement.
const NoRequirement = "UNNAMED"

// judge gives one requirement's verdict on one stack from its specs' results
// in each run. strictSkips (a cluster faultline made): a skip or an
// inconclusive spec is unexpected unless the expectation names it.
func judge(id, stack string, runs [][]Spec, exp *Expectation, strictSkips bool) Verdict {
	v := Verdict{Requirement: id, Stack: stack, Expectation: exp}
	for _, specs := range runs {
		if len(specs) == 0 {
			continue // this run did not get to it
		}
		states := make([]State, len(specs))
		for i, s := range specs {
			states[i] = s.State
		}
		v.Runs = append(v.Runs, worst(states))
		v.Specs = append(v.Specs, specs...)
	}
	distinct := map[State]bool{}
	for _, s := range v.Runs {
		distinct[s] = true
	}
	v.Varies = len(distinct) > 1
	v.State = worst(v.Runs)

	// A node too busy to judge (its timers fired later than the check
	// absorbs) leaves the requirement not checked, on any cluster: the run
	// is incomplete and says so, never red for it.
	allowed := map[State]bool{Pending: true, Skipped: !strictSkips, Inconclusive: !strictSkips || tooBusy(v.Specs)}
	if exp == nil {
		allowed[Pass] = true
	} else {
		for _, s := range exp.Allowed() {
			allowed[s] = true
		}
	}
	// An expected failure must fail for a cause the expectation names: a
	// timeout or an API error where the expectation names the kubelet's
	// wording is news. A failure of faultline's own machinery (cause
	// harness) says nothing about the stack and is never expected.
	var ours, unlike []string
	for _, spec := range v.Specs {
		if spec.State != Fail {
			continue
		}
		switch cause := CauseOf(spec); {
		case cause == requirements.HarnessCause:
			ours = append(ours, fmt.Sprintf("run %d: %s", spec.Run, OneLine(spec.Message, 200)))
		case exp != nil && allowed[Fail] && !exp.Expects(cause):
			unlike = append(unlike, fmt.Sprintf("run %d: cause %s: %s", spec.Run, cause, OneLine(spec.Message, 200)))
		}
	}
	if v.State == Fail && exp != nil && allowed[Fail] && len(unlike) == 0 && len(ours) == 0 {
		v.State = KnownDiscrepancy
	}
	var bad []string
	for s := range distinct {
		if !allowed[s] {
			bad = append(bad, string(s))
		}
	}
	sort.Strings(bad)
	switch {
	case len(ours) > 0:
		v.Unexpected = fmt.Sprintf("failed in faultline's own machinery (cause %s), not in the stack: never expected, and it says nothing about the requirement: %s",
			requirements.HarnessCause, strings.Join(ours, "; "))
	case len(bad) == 0 && len(unlike) > 0:
		v.Unexpected = fmt.Sprintf("failed, but for another cause than the expectation names (%s): %s", strings.Join(exp.Causes, ", "), strings.Join(unlike, "; "))
	case len(bad) == 0:
	case exp == nil:
		v.Unexpected = fmt.Sprintf("%s%s, and no expectation for this stack says so", describeRuns(v), failCauses(v))
	default:
		v.Unexpected = fmt.Sprintf("%s%s, expected %s (%s): %s", describeRuns(v), failCauses(v), describeExpectation(*exp), exp.Reference, strings.Join(bad, ", ")+" is not expected")
	}
	return v
}

// describeRuns says what the runs showed: "fail", or "pass in 2 of 3 runs,
// fail in 1".
func describeRuns(v Verdict) string {
	if !v.Varies {
		if len(v.Runs) > 1 {
			return fmt.Sprintf("%s in all %d runs", v.Runs[0], len(v.Runs))
		}
		return string(v.Runs[0])
	}
	counts := v.Counts()
	var parts []string
	for _, s := range States {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%s in %d of %d runs", s, counts[s], len(v.Runs)))
		}
	}
	return "varies: " + strings.Join(parts, ", ")
}

func describeExpectation(e Expectation) string {
	if e.Verdict == ExpectVaries {
		var o []string
		for _, s := range e.Outcomes {
			o = append(o, string(s))
		}
		return "to vary (" + strings.Join(o, " or ") + ")"
	}
	return e.Verdict
}

// OneLine is a message on one line, whitespace collapsed, at most max
// characters: a Gomega failure's first line alone is often just "Expected".
func OneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…"
	}
	return s
}
