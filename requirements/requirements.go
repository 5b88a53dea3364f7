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
		panic("requirements/catalogue.yaml: " + err.Error())
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

var idPattern = regexp.MustCompile(`^[A-Z][A-Z0-9]*(-[A-Z0-9]+)+$`)

// Parse reads a catalogue strictly: unknown fields, duplicate or malformed
// IDs, unknown areas and empty fields are errors.
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
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return file.Requirements, nil
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
