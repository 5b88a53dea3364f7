// Package requirements is faultline's requirement catalogue (catalogue.yaml,
// compiled in): what each requirement says, where it comes from, and the
// label a spec carries to name it. It imports no test code, so the CLI and
// the report can use it without linking the suites.
package requirements

import (
	_ "embed"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// Requirement is one thing a node stack must do.
type Requirement struct {
	// ID is stable: DRA-TRANSIENT-RETRIED.
	ID string `json:"id"`
	// Area is the suite it belongs to (dra, cri, nri) or "faultline".
	Area string `json:"area"`
	// Title says the requirement in one sentence.
	Title string `json:"title"`
	// Source names where it comes from; Link is that source's address.
	Source string `json:"source"`
	Link   string `json:"link"`
	// Causes are the ways the stack can break the requirement: a failing
	// spec names one of them (suites/harness.Cause), and an expectation
	// names the causes it expects (verdicts.Expectation).
	Causes []Cause `json:"causes"`
}

// Cause is one way a stack can break a requirement.
type Cause struct {
	// ID is lower-case words joined by '-': "abandoned".
	ID string `json:"id"`
	// Meaning says in a sentence what the stack did.
	Meaning string `json:"meaning"`
}

// HarnessCause is the cause of every failure that is not the stack's: in
// faultline's own machinery (a port-forward, the relay, an API error, a
// witness lost, a fixture not ready) or outside any check a spec declared.
// It is universal, so no requirement declares it, and no expectation may
// expect it.
const HarnessCause = "harness"

// Declares reports whether the requirement declares cause id.
func (r Requirement) Declares(id string) bool {
	for _, c := range r.Causes {
		if c.ID == id {
			return true
		}
	}
	return false
}

// CauseIDs lists the IDs of the requirement's causes, in its order.
func (r Requirement) CauseIDs() []string {
	ids := make([]string, len(r.Causes))
	for i, c := range r.Causes {
		ids[i] = c.ID
	}
	return ids
}

// LabelPrefix starts the label by which a spec names a requirement it
// checks: "Req:DRA-TRANSIENT-RETRIED".
const LabelPrefix = "Req:"

// Label is the spec label naming requirement id.
func Label(id string) string { return LabelPrefix + id }

// FromLabels returns the requirement IDs among a spec's labels.
func FromLabels(labels []string) []string {
	var ids []string
	for _, l := range labels {
		if id, ok := strings.CutPrefix(l, LabelPrefix); ok {
			ids = append(ids, id)
		}
	}
	return ids
}

//go:embed catalogue.yaml
var catalogueYAML []byte

var (
	all  []Requirement
	byID map[string]Requirement
)

func init() {
	var err error
	if all, err = Parse(catalogueYAML); err != nil {
		panic("judge/requirements/catalogue.yaml: " + err.Error())
	}
	byID = map[string]Requirement{}
	for _, r := range all {
		byID[r.ID] = r
	}
}

// All returns the catalogue in its file's order.
func All() []Requirement { return append([]Requirement(nil), all...) }

// Lookup returns the requirement with that ID.
func Lookup(id string) (Requirement, bool) {
	r, ok := byID[id]
	return r, ok
}

// Areas are the areas a requirement may have, in report order.
var Areas = []string{"faultline", "dra", "cri", "nri"}

var (
	idPattern    = regexp.MustCompile(`^[A-Z][A-Z0-9]*(-[A-Z0-9]+)+$`)
	causePattern = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)
)

// maxCauses keeps a requirement's list short: a cause names a way the stack
// breaks the requirement, not each line of a spec.
const maxCauses = 10

// Parse reads a catalogue strictly: unknown fields, duplicate or malformed
// IDs, unknown areas and empty fields are errors, and so is a requirement
// without causes, a malformed or repeated cause, one without its meaning,
// and the reserved cause harness.
func Parse(data []byte) ([]Requirement, error) {
	var file struct {
		Requirements []Requirement `json:"requirements"`
	}
	if err := yaml.UnmarshalStrict(data, &file); err != nil {
		return nil, err
	}
	if len(file.Requirements) == 0 {
		return nil, fmt.Errorf("no requirements")
	}
	seen := map[string]bool{}
	var errs []string
	for i, r := range file.Requirements {
		where := fmt.Sprintf("requirement %d (%s)", i+1, r.ID)
		switch {
		case !idPattern.MatchString(r.ID):
			errs = append(errs, fmt.Sprintf("%s: the ID must be upper-case words joined by '-' (%s)", where, idPattern))
		case seen[r.ID]:
			errs = append(errs, where+": duplicate ID")
		}
		seen[r.ID] = true
		if !contains(Areas, r.Area) {
			errs = append(errs, fmt.Sprintf("%s: area %q, want one of %s", where, r.Area, strings.Join(Areas, ", ")))
		}
		if strings.TrimSpace(r.Title) == "" || strings.TrimSpace(r.Source) == "" {
			errs = append(errs, where+": title and source are required")
		}
		if !strings.HasPrefix(r.Link, "https://") {
			errs = append(errs, where+": link must be an https:// address")
		}
		errs = append(errs, checkCauses(where, r.Causes)...)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return file.Requirements, nil
}

func checkCauses(where string, causes []Cause) []string {
	var errs []string
	if len(causes) == 0 {
		errs = append(errs, where+": no causes: list the ways the stack can break it (causes: [{id: ..., meaning: ...}])")
	}
	if len(causes) > maxCauses {
		errs = append(errs, fmt.Sprintf("%s: %d causes, at most %d: a cause is a way the stack breaks the requirement, not a line of its spec", where, len(causes), maxCauses))
	}
	seen := map[string]bool{}
	for _, c := range causes {
		switch {
		case c.ID == HarnessCause:
			errs = append(errs, fmt.Sprintf("%s: cause %q is reserved for faultline's own failures and declared nowhere", where, HarnessCause))
		case !causePattern.MatchString(c.ID):
			errs = append(errs, fmt.Sprintf("%s: cause %q: want lower-case words joined by '-' (%s)", where, c.ID, causePattern))
		case seen[c.ID]:
			errs = append(errs, fmt.Sprintf("%s: cause %q listed twice", where, c.ID))
		}
		seen[c.ID] = true
		if strings.TrimSpace(c.Meaning) == "" {
			errs = append(errs, fmt.Sprintf("%s: cause %q: the meaning is required", where, c.ID))
		}
	}
	return errs
}

// Sorted returns ids ordered as the catalogue lists them; unknown IDs last,
// by name.
func Sorted(ids []string) []string {
	pos := map[string]int{}
	for i, r := range all {
		pos[r.ID] = i
	}
	out := append([]string(nil), ids...)
	sort.SliceStable(out, func(i, j int) bool {
		pi, iok := pos[out[i]]
		pj, jok := pos[out[j]]
		switch {
		case iok && jok:
			return pi < pj
		case iok != jok:
			return iok
		}
		return out[i] < out[j]
	})
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
