package conformance

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/faultline-k8s/faultline/internal/ginkgorun"
	"github.com/faultline-k8s/faultline/internal/imageref"
)

// TestManifestsNameThisBuildsImage: the Job and the sonobuoy plugin run
// this build's conformance image from the registry given, and parse as
// what they claim to be.
func TestManifestsNameThisBuildsImage(t *testing.T) {
	want := imageref.Conformance("registry.example/ci")
	for _, name := range []string{"job", "sonobuoy-plugin"} {
		out, err := Manifest(name, "registry.example/ci", "IfNotPresent")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !strings.Contains(string(out), "image: "+want+"\n") {
			t.Errorf("%s does not run %s:\n%s", name, want, out)
		}
	}
	job, _ := Manifest("job", "", "IfNotPresent")
	docs := strings.Split(string(job), "\n---\n")
	var j batchv1.Job
	if err := yaml.Unmarshal([]byte(docs[len(docs)-1]), &j); err != nil || j.Kind != "Job" {
		t.Fatalf("the job manifest's last document is not a Job: %v", err)
	}
	if got := j.Spec.Template.Spec.NodeSelector["kubernetes.io/os"]; got != "linux" {
		t.Errorf("the Job's pod selects os %q", got)
	}
	plugin, _ := Manifest("sonobuoy-plugin", "", "IfNotPresent")
	var def struct {
		Config struct {
			Driver       string   `json:"driver"`
			Name         string   `json:"plugin-name"`
			ResultFormat string   `json:"result-format"`
			ResultFiles  []string `json:"result-files"`
		} `json:"sonobuoy-config"`
	}
	if err := sigsyaml.Unmarshal(plugin, &def); err != nil {
		t.Fatal(err)
	}
	if def.Config.Driver != "Job" || def.Config.ResultFormat != "junit" || def.Config.Name != "faultline" || len(def.Config.ResultFiles) != 1 || def.Config.ResultFiles[0] != ginkgorun.JUnitFile {
		t.Errorf("sonobuoy-config %+v", def.Config)
	}
	cfg, err := Manifest("sonobuoy-config", "", "IfNotPresent")
	if err != nil {
		t.Fatal(err)
	}
	var sc struct {
		Server struct {
			Advertise string `json:"advertiseaddress"`
		}
	}
	if err := sigsyaml.Unmarshal(cfg, &sc); err != nil || sc.Server.Advertise == "" {
		t.Errorf("the sonobuoy config advertises no aggregator address: %v %s", err, cfg)
	}
	if _, err := Manifest("job", "", "sometimes"); err == nil {
		t.Error("a bad pull policy must be refused")
	}
	if _, err := Manifest("helm", "", "Always"); err == nil {
		t.Error("an unknown manifest must be refused")
	}
}
