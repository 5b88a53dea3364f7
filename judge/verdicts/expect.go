package verdicts

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/semver"
	"sigs.k8s.io/yaml"

	"github.com/faultline-k8s/faultline/judge/requirements"
	"github.com/faultline-k8s/faultline/vocab/versions"
)

// Expectation says what one requirement is known to give on a stack, and why.
type Expectation struct {
	Requirement string `json:"requirement"`
	// Verdict is "fail" (a known discrepancy), "not implemented", or
	// "varies" (Outcomes says which states may come out).
	Verdict  string  `json:"verdict"`
	Outcomes []State `json:"outcomes,omitempty"`
	// Reason says why, in a sentence or two; Reference is the upstream
	// address that explains it (an issue, a line of code, a KEP).
	Reason    string `json:"reason"`
	Reference string `json:"reference"`
	// Evidence says which runs showed a varying verdict.
	Evidence string `json:"evidence,omitempty"`
	// From and Until bound the Kubernetes patch releases of the stack's
	// minor the expectation holds for, both included ("v1.36.4"); empty,
	// no bound. A requirement may have several expectations whose ranges
	// do not overlap: "fails until v1.36.3", and nothing from v1.36.4 on.
	From  string `json:"from,omitempty"`
	Until string `json:"until,omitempty"`
	// Causes name the ways the stack is known to break the requirement
	// (causes the requirement declares in judge/requirements/catalogue.yaml):
	// every failing spec of the requirement must have failed with one of
	// them, and a failure with another cause is unexpected. Required where
	// a failure is expected; requirements.HarnessCause is never expected.
	Causes []string `json:"causes,omitempty"`
}

// Covers says whether the expectation holds for Kubernetes release v. A
// stack whose release is unknown ("") is covered only by an expectation
// without bounds.
func (e Expectation) Covers(v string) bool {
	if e.From == "" && e.Until == "" {
		return true
	}
	if !semver.IsValid(v) {
		return false
	}
	return (e.From == "" || semver.Compare(v, e.From) >= 0) && (e.Until == "" || semver.Compare(v, e.Until) <= 0)
}

// Patches says which releases the expectation holds for, for a reader:
// "" when every one.
func (e Expectation) Patches() string {
	switch {
	case e.From != "" && e.Until != "":
		return e.From + " to " + e.Until
	case e.From != "":
		return "from " + e.From
	case e.Until != "":
		return "until " + e.Until
	}
	return ""
}

// AllowsFail says whether the expectation accepts a failure.
func (e Expectation) AllowsFail() bool {
	for _, s := range e.Allowed() {
		if s == Fail {
			return true
		}
	}
	return false
}

// Expects says whether cause is one the expectation names.
func (e Expectation) Expects(cause string) bool {
	for _, c := range e.Causes {
		if c == cause {
			return true
		}
	}
	return false
}

// The verdicts an expectation may name.
const (
	ExpectFail           = "fail"
	ExpectNotImplemented = "not implemented"
	ExpectSkipped        = "skipped"
	ExpectVaries         = "varies"
)

// Allowed are the states the expectation accepts.
func (e Expectation) Allowed() []State {
	switch e.Verdict {
	case ExpectFail:
		return []State{Fail}
	case ExpectNotImplemented:
		return []State{NotImplemented}
	case ExpectSkipped:
		return []State{Skipped}
	}
	return e.Outcomes
}

// Expectations are one stack's, from one file.
type Expectations struct {
	// Stack is the stack's key ("containerd-1.36").
	Stack string `json:"stack"`
	// Extends names another stack whose expectations hold here too, but
	// for the requirements Expect names again and those Drop names (which
	// simply pass here): a stack that differs from another in a few
	// requirements says only those (LoadExpectations resolves it).
	Extends string `json:"extends,omitempty"`
	// Drop lists requirements of the extended stack that pass here.
	Drop []string `json:"drop,omitempty"`
	// Expect lists the requirements that do not simply pass there.
	Expect []Expectation `json:"expect"`
	// File is where they were read from.
	File string `json:"-"`
}

// For returns the expectation for requirement id on Kubernetes release
// kubernetes ("v1.36.5"), or nil: the one whose patch range covers it.
func (x *Expectations) For(id, kubernetes string) *Expectation {
	if x == nil {
		return nil
	}
	for i := range x.Expect {
		if e := &x.Expect[i]; e.Requirement == id && e.Covers(kubernetes) {
			return e
		}
	}
	return nil
}

// ParseExpectations reads one stack's expectations strictly: unknown
// fields (a "message" pattern among them: failures are matched by cause,
// never by their text), unknown requirements, a requirement named twice, a
// known failure without its reason and reference, "varies" without two
// outcomes, an expected failure without causes, a cause its requirement
// does not declare, the cause harness, and causes where no failure is
// expected are errors.
func ParseExpectations(data []byte, file string) (*Expectations, error) {
	var x Expectations
	if err := yaml.UnmarshalStrict(data, &x); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	x.File = file
	var errs []string
	if x.Stack == "" {
		errs = append(errs, "no stack: name it (<runtime>-<major.minor>, e.g. containerd-1.36)")
	}
	if len(x.Drop) > 0 && x.Extends == "" {
		errs = append(errs, "drop goes with extends only")
	}
	dropped := map[string]bool{}
	for _, id := range x.Drop {
		if _, ok := requirements.Lookup(id); !ok {
			errs = append(errs, "drop "+id+": not a requirement of judge/requirements/catalogue.yaml")
		}
		dropped[id] = true
	}
	seen := map[string][]Expectation{}
	for i, e := range x.Expect {
		where := fmt.Sprintf("expect[%d] (%s)", i, e.Requirement)
		if _, ok := requirements.Lookup(e.Requirement); !ok {
			errs = append(errs, where+": not a requirement of judge/requirements/catalogue.yaml")
		}
		if dropped[e.Requirement] {
			errs = append(errs, where+": named twice (also dropped)")
		}
		errs = append(errs, checkPatches(where, x.Stack, e, seen[e.Requirement])...)
		seen[e.Requirement] = append(seen[e.Requirement], e)
		switch e.Verdict {
		case ExpectFail, ExpectNotImplemented, ExpectSkipped:
			if len(e.Outcomes) > 0 {
				errs = append(errs, where+": outcomes go with verdict "+ExpectVaries+" only")
			}
		case ExpectVaries:
			if len(e.Outcomes) < 2 {
				errs = append(errs, where+": varies needs at least two outcomes")
			}
			for _, o := range e.Outcomes {
				if o != Pass && o != Fail && o != NotImplemented && o != Skipped {
					errs = append(errs, fmt.Sprintf("%s: outcome %q: want pass, fail, not implemented or skipped", where, o))
				}
			}
			if strings.TrimSpace(e.Evidence) == "" {
				errs = append(errs, where+": varies needs the evidence (which runs showed what)")
			}
		default:
			errs = append(errs, fmt.Sprintf("%s: verdict %q: want %q, %q, %q or %q", where, e.Verdict, ExpectFail, ExpectNotImplemented, ExpectSkipped, ExpectVaries))
		}
		errs = append(errs, checkCauses(where, e)...)
		if strings.TrimSpace(e.Reason) == "" {
			errs = append(errs, where+": the reason is required")
		}
		if !strings.HasPrefix(e.Reference, "https://") {
			errs = append(errs, where+": the reference must be an https:// address")
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s:\n  %s", file, strings.Join(errs, "\n  "))
	}
	return &x, nil
}

// checkPatches: bounds are releases of the stack's minor, from before
// until; a requirement named again holds for other releases (neither
// expectation unbounded, their ranges apart).
func checkPatches(where, stack string, e Expectation, before []Expectation) []string {
	var errs []string
	minor := Minor(stack)
	for _, b := range []struct{ name, v string }{{"from", e.From}, {"until", e.Until}} {
		switch {
		case b.v == "":
		case !versions.IsRelease(b.v) || !semver.IsValid(b.v):
			errs = append(errs, fmt.Sprintf("%s: %s %q: want a release like v1.36.4", where, b.name, b.v))
		case versions.Minor(b.v) != minor:
			errs = append(errs, fmt.Sprintf("%s: %s %s is not a release of %s, the stack's minor", where, b.name, b.v, minor))
		}
	}
	if e.From != "" && e.Until != "" && semver.Compare(e.From, e.Until) > 0 {
		errs = append(errs, fmt.Sprintf("%s: from %s comes after until %s", where, e.From, e.Until))
	}
	for _, o := range before {
		if overlap(e, o) {
			errs = append(errs, fmt.Sprintf("%s: named twice for the same releases (%q and %q): bound both with from/until, apart", where, o.Patches(), e.Patches()))
		}
	}
	return errs
}

// overlap says whether two expectations hold for a common release.
func overlap(a, b Expectation) bool {
	lowA, lowB := a.From, b.From
	// a ends before b begins, or b before a.
	if a.Until != "" && lowB != "" && semver.Compare(a.Until, lowB) < 0 {
		return false
	}
	if b.Until != "" && lowA != "" && semver.Compare(b.Until, lowA) < 0 {
		return false
	}
	return true
}

// checkCauses: an expected failure names its causes, each declared by the
// requirement, none twice, never harness; nothing else names causes.
func checkCauses(where string, e Expectation) []string {
	var errs []string
	r, known := requirements.Lookup(e.Requirement)
	declared := strings.Join(r.CauseIDs(), ", ")
	switch {
	case !e.AllowsFail() && len(e.Causes) > 0:
		return []string{where + ": causes go with an expected failure only (verdict fail, or varies with outcome fail)"}
	case e.AllowsFail() && len(e.Causes) == 0:
		errs = append(errs, fmt.Sprintf("%s: an expected failure needs its causes (of %s: %s): without them any failure, faultline's own included, would pass for the known one", where, e.Requirement, declared))
	}
	seen := map[string]bool{}
	for _, c := range e.Causes {
		switch {
		case c == requirements.HarnessCause:
			errs = append(errs, fmt.Sprintf("%s: cause %s is faultline's own failure, never expected", where, c))
		case seen[c]:
			errs = append(errs, fmt.Sprintf("%s: cause %s named twice", where, c))
		case known && !r.Declares(c):
			errs = append(errs, fmt.Sprintf("%s: cause %q is not one %s declares (%s)", where, c, e.Requirement, declared))
		}
		seen[c] = true
	}
	return errs
}

// ExpectationSet is the expectations of every stack a run knows of.
type ExpectationSet map[string]*Expectations

// For returns a stack's expectations: its own, else (a variant without a
// file of its own) its base stack's; nil when there are none.
func (s ExpectationSet) For(key string) *Expectations {
	if x, ok := s[key]; ok {
		return x
	}
	return s[BaseKey(key)]
}

// LoadExpectations reads the named files of fsys, or every *.yaml in it
// (one stack each; a stack in two files is an error).
func LoadExpectations(fsys fs.FS, files ...string) (ExpectationSet, error) {
	if len(files) == 0 {
		var err error
		if files, err = fs.Glob(fsys, "*.yaml"); err != nil {
			return nil, err
		}
	}
	set := ExpectationSet{}
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		x, err := ParseExpectations(data, f)
		if err != nil {
			return nil, err
		}
		if other, dup := set[x.Stack]; dup {
			return nil, fmt.Errorf("stack %s has expectations in %s and %s", x.Stack, other.File, f)
		}
		set[x.Stack] = x
	}
	for _, x := range set {
		if err := set.resolve(x, nil); err != nil {
			return nil, err
		}
	}
	return set, nil
}

// resolve lays x over the stack it extends (resolved first): the result is
// the parent's entries but those x names or drops, then x's own.
func (set ExpectationSet) resolve(x *Expectations, chain []string) error {
	if x.Extends == "" {
		return nil
	}
	for _, c := range chain {
		if c == x.Stack {
			return fmt.Errorf("%s: extends forms a cycle: %s", x.File, strings.Join(append(chain, x.Stack), " -> "))
		}
	}
	parent, ok := set[x.Extends]
	if !ok {
		return fmt.Errorf("%s: extends %s, which has no expectations here", x.File, x.Extends)
	}
	if err := set.resolve(parent, append(chain, x.Stack)); err != nil {
		return err
	}
	own := map[string]bool{}
	for _, id := range x.Drop {
		own[id] = true
	}
	for _, e := range x.Expect {
		own[e.Requirement] = true
	}
	var merged []Expectation
	for _, e := range parent.Expect {
		if own[e.Requirement] {
			continue
		}
		// Patches of the parent's minor say nothing of another minor's.
		if (e.From != "" || e.Until != "") && Minor(parent.Stack) != Minor(x.Stack) {
			return fmt.Errorf("%s: extends %s, whose %s holds for %s of %s only: name it again here, or drop it",
				x.File, x.Extends, e.Requirement, e.Patches(), Minor(parent.Stack))
		}
		merged = append(merged, e)
	}
	x.Expect = append(merged, x.Expect...)
	x.Extends, x.Drop = "", nil // resolved: resolving again changes nothing
	return nil
}

// LoadExpectationsPath reads a file or a directory of files.
func LoadExpectationsPath(path string) (ExpectationSet, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("expectations: %w", err)
	}
	if st.IsDir() {
		return LoadExpectations(os.DirFS(path))
	}
	return LoadExpectations(os.DirFS(filepath.Dir(path)), filepath.Base(path))
}
