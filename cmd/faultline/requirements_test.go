package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/faultline-k8s/faultline/judge/controls"
	"github.com/faultline-k8s/faultline/judge/requirements"
)

// TestRequirementsListControls: faultline requirements shows every
// requirement with its controls, in each format.
func TestRequirementsListControls(t *testing.T) {
	all := requirements.All()

	var text strings.Builder
	if err := writeRequirements(&text, "text"); err != nil {
		t.Fatal(err)
	}
	blocks := map[string]string{}
	var id string
	for _, line := range strings.Split(text.String(), "\n") {
		if f := strings.Fields(line); len(f) > 0 && !strings.HasPrefix(line, " ") {
			if _, ok := requirements.Lookup(f[0]); ok {
				id = f[0]
			}
		}
		blocks[id] += line + "\n"
	}
	for _, r := range all {
		cs, _ := controls.For(r.ID)
		for _, c := range cs {
			if !strings.Contains(blocks[r.ID], "control: "+c.Summary()+"\n") {
				t.Errorf("text: %s lacks its control %q:\n%s", r.ID, c.Summary(), blocks[r.ID])
			}
		}
	}
	for _, r := range all {
		if why := controls.NoHonestControl(r.ID); why != "" && !strings.Contains(blocks[r.ID], "no honest control: "+why+"\n") {
			t.Errorf("text: %s does not say why it has no honest control:\n%s", r.ID, blocks[r.ID])
		}
	}
	if !strings.Contains(text.String(), " requirements have a recorded red control (judge/controls/controls.yaml); ") {
		t.Errorf("text: no count of recorded controls:\n%s", text.String())
	}

	var js strings.Builder
	if err := writeRequirements(&js, "json"); err != nil {
		t.Fatal(err)
	}
	var got []struct {
		ID              string             `json:"id"`
		Causes          []json.RawMessage  `json:"causes"`
		Controls        []controls.Control `json:"controls"`
		NoHonestControl string             `json:"noHonestControl"`
	}
	if err := json.Unmarshal([]byte(js.String()), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(all) {
		t.Fatalf("json: %d requirements, want %d", len(got), len(all))
	}
	for i, r := range got {
		if r.ID != all[i].ID || len(r.Causes) != len(all[i].Causes) || (len(r.Controls) == 0 && r.NoHonestControl == "") {
			t.Errorf("json: %s with %d causes and %d controls, want %s with its causes and controls", r.ID, len(r.Causes), len(r.Controls), all[i].ID)
		}
	}

	var md strings.Builder
	if err := writeRequirements(&md, "markdown"); err != nil {
		t.Fatal(err)
	}
	for _, r := range all {
		if !strings.Contains(md.String(), "| `"+r.ID+"` |") || !strings.Contains(md.String(), " | "+cell(controls.Line(r.ID))+" |\n") {
			t.Errorf("markdown: no row of %s with its controls", r.ID)
		}
	}
	if err := writeRequirements(&md, "yaml"); err == nil {
		t.Error("-o yaml: no error")
	}
}
