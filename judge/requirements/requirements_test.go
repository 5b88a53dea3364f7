package requirements

import (
	"strings"
	"testing"
)

func TestCatalogueParses(t *testing.T) {
	if _, err := Parse(catalogueYAML); err != nil {
		t.Fatal(err)
	}
	if len(All()) < 30 {
		t.Errorf("the catalogue has %d requirements", len(All()))
	}
}

func TestParseRefusesBadEntries(t *testing.T) {
	const causes = ", causes: [{id: not-done, meaning: m}]"
	entry := func(fields string) string { return "requirements:\n- {" + fields + "}\n" }
	if _, err := Parse([]byte(entry("id: A-B, area: dra, title: t, source: s, link: https://x" + causes))); err != nil {
		t.Fatalf("a good entry: %v", err)
	}
	for name, doc := range map[string]string{
		"unknown field": entry("id: A-B, area: dra, title: t, source: s, link: https://x, extra: 1" + causes),
		"bad id":        entry("id: a-b, area: dra, title: t, source: s, link: https://x" + causes),
		"duplicate":     "requirements:\n- {id: A-B, area: dra, title: t, source: s, link: https://x" + causes + "}\n- {id: A-B, area: dra, title: t, source: s, link: https://x" + causes + "}\n",
		"unknown area":  entry("id: A-B, area: gpu, title: t, source: s, link: https://x" + causes),
		"no title":      entry("id: A-B, area: dra, source: s, link: https://x" + causes),
		"plain link":    entry("id: A-B, area: dra, title: t, source: s, link: http://x" + causes),
		"no causes":     entry("id: A-B, area: dra, title: t, source: s, link: https://x"),
		"bad cause id":  entry("id: A-B, area: dra, title: t, source: s, link: https://x, causes: [{id: Not_Done, meaning: m}]"),
		"cause twice":   entry("id: A-B, area: dra, title: t, source: s, link: https://x, causes: [{id: x, meaning: m}, {id: x, meaning: n}]"),
		"no meaning":    entry("id: A-B, area: dra, title: t, source: s, link: https://x, causes: [{id: x}]"),
		"harness":       entry("id: A-B, area: dra, title: t, source: s, link: https://x, causes: [{id: harness, meaning: ours}]"),
		"cause field":   entry("id: A-B, area: dra, title: t, source: s, link: https://x, causes: [{id: x, meaning: m, pattern: y}]"),
		"long list":     entry("id: A-B, area: dra, title: t, source: s, link: https://x, causes: [" + strings.Repeat("{id: a, meaning: m}, ", 10) + "{id: b, meaning: m}]"),
		"empty":         "requirements: []\n",
		"not yaml":      "requirements: [\n",
	} {
		if _, err := Parse([]byte(doc)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestCauses: every requirement names the ways it breaks; harness is
// declared by none.
func TestCauses(t *testing.T) {
	for _, r := range All() {
		if len(r.Causes) == 0 || r.Declares(HarnessCause) {
			t.Errorf("%s: causes %v", r.ID, r.CauseIDs())
		}
	}
	r, _ := Lookup("CRI-CONTAINER-RETRY-GETS-FIRST")
	if !r.Declares("abandoned") || r.Declares("no-such-cause") {
		t.Errorf("Declares: %v", r.CauseIDs())
	}
}

func TestLabels(t *testing.T) {
	got := FromLabels([]string{"Suite:dra", Label("DRA-TRANSIENT-RETRIED"), "ci"})
	if strings.Join(got, ",") != "DRA-TRANSIENT-RETRIED" {
		t.Errorf("FromLabels: %v", got)
	}
	if s := Sorted([]string{"ZZ-UNKNOWN", "NRI-ERROR-STOPS-CHAIN", "DRA-PERMANENT-FAILS-POD"}); strings.Join(s, ",") != "DRA-PERMANENT-FAILS-POD,NRI-ERROR-STOPS-CHAIN,ZZ-UNKNOWN" {
		t.Errorf("Sorted: %v", s)
	}
}
