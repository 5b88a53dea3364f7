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
	for name, doc := range map[string]string{
		"unknown field": "requirements:\n- {id: A-B, area: dra, title: t, source: s, link: https://x, extra: 1}\n",
		"bad id":        "requirements:\n- {id: a-b, area: dra, title: t, source: s, link: https://x}\n",
		"duplicate":     "requirements:\n- {id: A-B, area: dra, title: t, source: s, link: https://x}\n- {id: A-B, area: dra, title: t, source: s, link: https://x}\n",
		"unknown area":  "requirements:\n- {id: A-B, area: gpu, title: t, source: s, link: https://x}\n",
		"no title":      "requirements:\n- {id: A-B, area: dra, source: s, link: https://x}\n",
		"plain link":    "requirements:\n- {id: A-B, area: dra, title: t, source: s, link: http://x}\n",
		"empty":         "requirements: []\n",
		"not yaml":      "requirements: [\n",
	} {
		if _, err := Parse([]byte(doc)); err == nil {
			t.Errorf("%s: no error", name)
		}
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
