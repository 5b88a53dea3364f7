package conformance

import (
	"bytes"
	"embed"
	"fmt"
	"sort"
	"strings"
	"text/template"

	"sigs.k8s.io/yaml"

	"github.com/faultline-k8s/faultline/fixtures"
	"github.com/faultline-k8s/faultline/fixtures/access"
	"github.com/faultline-k8s/faultline/internal/ginkgorun"
	"github.com/faultline-k8s/faultline/internal/imageref"
	"github.com/faultline-k8s/faultline/vocab/suitenames"
)

//go:embed job.yaml.tmpl sonobuoy-plugin.yaml.tmpl sonobuoy-config.json.tmpl
var manifestFiles embed.FS

// Manifests are the ways to run the conformance image, by name.
var Manifests = map[string]string{
	"job":             "job.yaml.tmpl",
	"sonobuoy-plugin": "sonobuoy-plugin.yaml.tmpl",
	// sonobuoy's worker sidecar reaches the aggregator at "[<pod IPv4>]:8080"
	// unless told otherwise, a URL that recent Go releases refuse to parse
	// ("invalid IP-literal"), so a sonobuoy built with them loses every
	// result: this config (sonobuoy run --config) advertises the
	// aggregator's Service instead.
	"sonobuoy-config": "sonobuoy-config.json.tmpl",
}

// ManifestNames lists Manifests' names.
func ManifestNames() []string {
	names := make([]string, 0, len(Manifests))
	for n := range Manifests {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Manifest renders one of Manifests for this build's conformance image in
// registry (imageref.DefaultRegistry when empty).
func Manifest(name, registry, pullPolicy string) ([]byte, error) {
	file, ok := Manifests[name]
	if !ok {
		return nil, fmt.Errorf("no manifest %q (have %s)", name, strings.Join(ManifestNames(), ", "))
	}
	if err := fixtures.CheckPullPolicy(pullPolicy); err != nil {
		return nil, err
	}
	t, err := template.New(file).Option("missingkey=error").ParseFS(manifestFiles, file)
	if err != nil {
		return nil, err
	}
	rules, err := jobRules()
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	err = t.Execute(&out, map[string]string{"ConformanceImage": imageref.Conformance(registry), "PullPolicy": pullPolicy, "JUnitFile": ginkgorun.JUnitFile, "NotDisruptive": suitenames.NotDisruptive,
		"JobName": access.Job, "JobRules": rules})
	return out.Bytes(), err
}

// jobRules are the Job's ClusterRole rules as YAML: what the suites and
// the fixture sets need (access.JobRules), so the role follows them.
func jobRules() (string, error) {
	rules, err := access.JobRules()
	if err != nil {
		return "", fmt.Errorf("the Job's ClusterRole: %w", err)
	}
	out, err := yaml.Marshal(rules)
	return string(out), err
}
