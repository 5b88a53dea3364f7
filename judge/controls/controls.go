// Package controls holds faultline's negative controls (controls.yaml,
// compiled in): per requirement of the catalogue, the stacks under which its
// spec must say fail. A pass is worth as much as the proof that the same spec
// fails when the requirement is broken, so every requirement has an entry:
// its controls with a recorded red run (a Ginkgo report in
// judge/verdicts/testdata whose verdict there is fail or a known discrepancy,
// for the cause named), or, where none is recorded yet, the control planned
// (the mutant or fake mode that would break it), said so, never left out.
//
// The tests of this package judge each recorded control's run and hold its
// verdict to red with the named cause (make test-controls); the CLI
// (faultline requirements) and the reports list each requirement's controls.
package controls

import (
	_ "embed"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/faultline-k8s/faultline/judge/requirements"
	"github.com/faultline-k8s/faultline/vocab/fakemodes"
	"github.com/faultline-k8s/faultline/vocab/runtimes"
	"github.com/faultline-k8s/faultline/vocab/versions"
)

// Kind is what breaks the requirement under a control.
type Kind string

const (
	// Recorded: a real stack faultline builds (a released runtime and
	// Kubernetes, or one of its variants) that breaks the requirement.
	Recorded Kind = "recorded"
	// Mutant: a small patch to the component under test (kubelet,
	// containerd, CRI-O, NRI, the API server) that breaks the one behaviour
	// the requirement names, and nothing else.
	Mutant Kind = "mutant"
	// FakeMode: a documented misbehaviour mode of one of faultline's fakes,
	// where the fake itself plays the part a real driver or plugin would
	// (the behaviour is the driver's or plugin's own).
	FakeMode Kind = "fake-mode"
)

// Kinds lists every kind.
var Kinds = []Kind{Recorded, Mutant, FakeMode}

// NoneRecorded is a control's Recording while no run of it is recorded: the
// control is planned.
const NoneRecorded = "none recorded yet"

// Control is one stack under which a requirement's spec must say fail.
type Control struct {
	Kind Kind `json:"kind"`
	// Stack is the stack key the control's run has (wire.StackKey):
	// "containerd-1.37", "containerd-1.37+kep-5322"; a mutant's or fake
	// mode's names its variant ("crio-1.37+mutant-crio-list-unclaimed").
	Stack string `json:"stack"`
	// Kubernetes is the patch release the run had, where it matters (a
	// failure fixed in a later patch): "v1.36.3".
	Kubernetes string `json:"kubernetes,omitempty"`
	// Patch is a mutant's patch: clusters/patches/<series>/NNNN-*.patch,
	// the series being the stack's variant.
	Patch string `json:"patch,omitempty"`
	// PatchOf is the component a mutant's patch applies to: kubernetes,
	// containerd, crio or nri (which faultline e2e option builds it).
	PatchOf string `json:"patchOf,omitempty"`
	// Mode is a fake mode's name (vocab/fakemodes), which faultline e2e
	// --fake-mode takes; the stack's variant names it as fake-<name>.
	Mode string `json:"mode,omitempty"`
	// Recording names the run in judge/verdicts/testdata (its file without
	// .json.gz) whose verdict of the requirement is red, or is NoneRecorded.
	Recording string `json:"recording"`
	// Base is, for a recorded mutant or fake mode, the recording of the
	// stack it mutates: every other requirement must keep its verdict
	// there (the mutant is precise).
	Base string `json:"base,omitempty"`
	// Cause is the cause the spec names for the failure (one its
	// requirement declares in the catalogue); for a planned control, the
	// one it is meant to name.
	Cause string `json:"cause"`
	// Breaks says in a sentence or two what the stack does that breaks
	// the requirement.
	Breaks string `json:"breaks"`
	// AlsoChanges are the requirements whose verdict the mutant changes
	// too, because no mutant can break its requirement alone (breaks says
	// why): the precision check leaves them out, and nothing else.
	AlsoChanges []string `json:"alsoChanges,omitempty"`
	// Needs says, for a planned control, what faultline must first be able
	// to build or deploy to run it ("" when it can today).
	Needs string `json:"needs,omitempty"`
}

// IsRecorded says whether a run of the control is recorded.
func (c Control) IsRecorded() bool { return c.Recording != NoneRecorded }

// Where says where the control's verdict is (or is to be) red: the stack,
// its release where given, and the patch or mode.
func (c Control) Where() string {
	s := c.Stack
	if c.Kubernetes != "" {
		s += " (" + c.Kubernetes + ")"
	}
	switch {
	case c.Patch != "":
		s += ", patch " + c.Patch
	case c.Mode != "":
		s += ", fake mode " + c.Mode
	}
	return s
}

// Summary is the control on one line: "recorded: red on containerd-1.37
// (v1.37.2) in full10-137-containerd, cause abandoned", or "mutant
// (planned) on <stack>, patch <patch>, cause <cause>: none recorded yet".
func (c Control) Summary() string {
	if c.IsRecorded() {
		return fmt.Sprintf("%s: red on %s in %s, cause %s", c.Kind, c.Where(), c.Recording, c.Cause)
	}
	return fmt.Sprintf("%s (planned) on %s, cause %s: %s", c.Kind, c.Where(), c.Cause, NoneRecorded)
}

// HasRecorded says whether one of cs has a recorded red run.
func HasRecorded(cs []Control) bool {
	return slices.ContainsFunc(cs, Control.IsRecorded)
}

// Line is requirement id's controls on one line: the recorded ones (a
// planned one beside them is left out), or NoneRecorded and the planned
// ones; "" for a requirement without an entry.
func Line(id string) string {
	cs, ok := For(id)
	if !ok {
		return ""
	}
	var recorded, planned []string
	for _, c := range cs {
		if c.IsRecorded() {
			recorded = append(recorded, c.Summary())
		} else {
			planned = append(planned, fmt.Sprintf("%s on %s, cause %s", c.Kind, c.Where(), c.Cause))
		}
	}
	if len(recorded) > 0 {
		return strings.Join(recorded, "; ")
	}
	line := NoneRecorded
	if why := NoHonestControl(id); why != "" {
		line += "; no honest control: " + why
	}
	if len(planned) > 0 {
		line += "; planned: " + strings.Join(planned, "; ")
	}
	return line
}

// Entry is one requirement's controls.
type Entry struct {
	// Requirement is the catalogue ID.
	Requirement string    `json:"id"`
	Controls    []Control `json:"controls,omitempty"`
	// NoHonestControl says why no control of the requirement can be both
	// honest and precise (every stack that breaks it breaks more, or the
	// spec's check cannot be reached by a broken component); the
	// requirement then needs no planned control.
	NoHonestControl string `json:"noHonestControl,omitempty"`
}

// Recorded returns the entry's controls with a recorded red run.
func (e Entry) Recorded() []Control {
	var out []Control
	for _, c := range e.Controls {
		if c.IsRecorded() {
			out = append(out, c)
		}
	}
	return out
}

//go:embed controls.yaml
var controlsYAML []byte

var (
	all  []Entry
	byID map[string]Entry
)

func init() {
	var err error
	if all, err = Parse(controlsYAML); err != nil {
		panic("judge/controls/controls.yaml: " + err.Error())
	}
	byID = map[string]Entry{}
	for _, e := range all {
		byID[e.Requirement] = e
	}
}

// All returns every entry, in the file's order.
func All() []Entry { return slices.Clone(all) }

// For returns requirement id's controls, and whether it has an entry.
func For(id string) ([]Control, bool) {
	e, ok := byID[id]
	return slices.Clone(e.Controls), ok
}

// NoHonestControl says why requirement id has no honest control, or "".
func NoHonestControl(id string) string { return byID[id].NoHonestControl }

// Missing returns the catalogue's requirements without an entry, in the
// catalogue's order: each is a requirement nothing shows able to fail.
func Missing() []string {
	var out []string
	for _, r := range requirements.All() {
		if _, ok := byID[r.ID]; !ok {
			out = append(out, r.ID)
		}
	}
	return out
}

var (
	// recordingPattern is a file name in judge/verdicts/testdata, without
	// .json.gz.
	recordingPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]*$`)
	// variantPattern is one part of a stack key's variant.
	variantPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]*$`)
	// minorPattern is a stack key's Kubernetes minor.
	minorPattern = regexp.MustCompile(`^1\.[0-9]+$`)
	// patchPattern is a patch of a numbered series under clusters/patches,
	// as faultline e2e --kubernetes-patch names its stack's variant.
	patchPattern = regexp.MustCompile(`^clusters/patches/([a-z0-9][a-z0-9.-]*)/[0-9]{4}-[A-Za-z0-9._-]+\.patch$`)
)

// Parse reads a controls file strictly: unknown fields are errors, and so
// is an entry of a requirement the catalogue does not have or named twice,
// an entry without controls, and a control of an unknown kind, a malformed
// stack key or release, a cause its requirement does not declare (or
// harness), a recording that is neither a testdata name nor NoneRecorded, a
// mutant without its patch (of a series its stack's variant names), a fake
// mode without its mode, a base where no mutant's run is recorded, and a
// planned control's needs on a recorded one. Whether every requirement has an
// entry is Missing's to say.
func Parse(data []byte) ([]Entry, error) {
	var file struct {
		Requirements []Entry `json:"requirements"`
	}
	if err := yaml.UnmarshalStrict(data, &file); err != nil {
		return nil, err
	}
	if len(file.Requirements) == 0 {
		return nil, fmt.Errorf("no requirements")
	}
	seen := map[string]bool{}
	var errs []string
	for i, e := range file.Requirements {
		where := fmt.Sprintf("entry %d (%s)", i+1, e.Requirement)
		req, ok := requirements.Lookup(e.Requirement)
		switch {
		case !ok:
			errs = append(errs, where+": not a requirement of judge/requirements/catalogue.yaml")
		case seen[e.Requirement]:
			errs = append(errs, where+": named twice")
		}
		seen[e.Requirement] = true
		if len(e.Controls) == 0 && strings.TrimSpace(e.NoHonestControl) == "" {
			errs = append(errs, where+": no controls: name at least one, planned if none is recorded yet (recording: "+NoneRecorded+"), or say why there is no honest one (noHonestControl)")
		}
		for j, c := range e.Controls {
			errs = append(errs, checkControl(fmt.Sprintf("%s control %d", where, j+1), req, ok, c)...)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return file.Requirements, nil
}

func checkControl(where string, req requirements.Requirement, known bool, c Control) []string {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, where+": "+fmt.Sprintf(format, args...)) }
	if !slices.Contains(Kinds, c.Kind) {
		bad("kind %q, want one of %s", c.Kind, kindList())
	}
	variant, err := checkStack(c.Stack)
	if err != nil {
		bad("stack %q: %v", c.Stack, err)
	}
	if c.Kubernetes != "" {
		if !versions.IsRelease(c.Kubernetes) {
			bad("kubernetes %q: want a release like v1.36.3", c.Kubernetes)
		} else if err == nil && versions.Minor(c.Kubernetes) != stackMinor(c.Stack) {
			bad("kubernetes %s is no release of the stack's minor %s", c.Kubernetes, stackMinor(c.Stack))
		}
	}
	switch {
	case c.Cause == "":
		bad("no cause: name the one the spec names for the failure")
	case c.Cause == requirements.HarnessCause:
		bad("cause %q is faultline's own failure: it says nothing about the requirement", c.Cause)
	case known && !req.Declares(c.Cause):
		bad("cause %q is not one %s declares (%s)", c.Cause, req.ID, strings.Join(req.CauseIDs(), ", "))
	}
	if strings.TrimSpace(c.Breaks) == "" {
		bad("breaks is required: what the stack does that breaks the requirement")
	}
	recorded := c.IsRecorded()
	if recorded && !recordingPattern.MatchString(c.Recording) {
		bad("recording %q: want a file of judge/verdicts/testdata without .json.gz, or %q", c.Recording, NoneRecorded)
	}
	if recorded && c.Needs != "" {
		bad("needs is for a planned control; this one is recorded")
	}
	switch c.Kind {
	case Recorded:
		if !recorded {
			bad("a recorded control names its recording (a planned control is a mutant or a fake mode)")
		}
		if c.Patch != "" || c.Mode != "" || c.Base != "" {
			bad("patch, mode and base are for mutants and fake modes")
		}
	case Mutant, FakeMode:
		if err == nil && variant == "" {
			bad("a %s's stack names its variant (%s-1.37+<variant>)", c.Kind, "containerd")
		}
		switch {
		case recorded && !recordingPattern.MatchString(c.Base):
			bad("base %q: a recorded %s names the recording of the stack it mutates", c.Base, c.Kind)
		case !recorded && c.Base != "":
			bad("base is for a recorded %s", c.Kind)
		}
	}
	switch c.Kind {
	case Mutant:
		m := patchPattern.FindStringSubmatch(c.Patch)
		switch {
		case c.Mode != "":
			bad("mode is for fake modes")
		case m == nil:
			bad("patch %q: want clusters/patches/<series>/NNNN-<subject>.patch", c.Patch)
		case patchFlags[c.PatchOf] == "":
			bad("patchOf %q: want the component the patch applies to: kubernetes, containerd, crio or nri", c.PatchOf)
		case err == nil && !slices.Contains(strings.Split(variant, "+"), m[1]):
			bad("patch series %s is not in the stack's variant %q", m[1], variant)
		}
	case FakeMode:
		if c.Patch != "" || c.PatchOf != "" {
			bad("patch and patchOf are for mutants")
		}
		if _, merr := fakemodes.Lookup(c.Mode); merr != nil {
			bad("mode: %v", merr)
		} else if err == nil && !slices.Contains(strings.Split(variant, "+"), fakemodes.VariantPart(c.Mode)) {
			bad("fake mode %s is not in the stack's variant %q (want %s there)", c.Mode, variant, fakemodes.VariantPart(c.Mode))
		}
	}
	for _, id := range c.AlsoChanges {
		if _, ok := requirements.Lookup(id); !ok || id == req.ID {
			bad("alsoChanges %s: want another requirement of the catalogue", id)
		}
	}
	if len(c.AlsoChanges) > 0 && c.Kind == Recorded {
		bad("alsoChanges is for mutants and fake modes")
	}
	return errs
}

// checkStack checks a stack key, <runtime>-<major.minor>[+<variant>...],
// and returns its variant.
func checkStack(key string) (string, error) {
	base, variant, _ := strings.Cut(key, "+")
	i := strings.LastIndex(base, "-")
	if i < 0 {
		return "", fmt.Errorf("want <runtime>-<major.minor>[+<variant>]")
	}
	if rt, err := runtimes.Lookup(base[:i]); err != nil || rt.Name != base[:i] {
		return "", fmt.Errorf("runtime %q: want one of %s, as faultline names it", base[:i], strings.Join(runtimes.Names(), ", "))
	}
	if !minorPattern.MatchString(base[i+1:]) {
		return "", fmt.Errorf("want a Kubernetes minor like 1.37 after the runtime")
	}
	if variant != "" {
		for _, part := range strings.Split(variant, "+") {
			if !variantPattern.MatchString(part) {
				return "", fmt.Errorf("variant part %q: want lower-case letters, digits, '.' and '-'", part)
			}
		}
	}
	return variant, nil
}

// stackMinor is the Kubernetes minor of a well-formed stack key.
func stackMinor(key string) string {
	base, _, _ := strings.Cut(key, "+")
	return base[strings.LastIndex(base, "-")+1:]
}

func kindList() string {
	var s []string
	for _, k := range Kinds {
		s = append(s, string(k))
	}
	return strings.Join(s, ", ")
}

// RecordingPath is where a recording lives, relative to the repository
// root.
func RecordingPath(name string) string {
	return path.Join("judge/verdicts/testdata", name+".json.gz")
}
