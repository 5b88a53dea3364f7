// Package versions reads the pins in versions.env: the one place that says which
// Kubernetes, containerd, etcd, CoreDNS, kind and Debian faultline builds and runs.
package versions

import (
	"bufio"
	"bytes"
	_ "embed"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

//go:embed versions.env
var pinned []byte

// Pins are the pinned versions, by the names versions.env gives them.
type Pins map[string]string

// Keys every pin file must set.
var required = []string{
	"KUBERNETES_VERSION", "ETCD_IMAGE_TAG", "PAUSE_IMAGE_TAG", "COREDNS_IMAGE_TAG",
	"CONTAINERD_VERSION", "CRIO_VERSION", "ETCD_VERSION", "COREDNS_VERSION", "KIND_VERSION", "NRI_VERSION",
	"DEBIAN_SUITE",
}

var semver = regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`)

// Default returns the pins compiled into this binary.
func Default() Pins {
	p, err := Parse(pinned)
	if err != nil {
		panic(fmt.Sprintf("versions.env is invalid: %v", err))
	}
	return p
}

// Parse reads KEY=VALUE lines (blank lines and # comments allowed) and checks
// that every required pin is there and every *_VERSION is a semantic version.
func Parse(data []byte) (Pins, error) {
	p := Pins{}
	scanner := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; scanner.Scan(); n++ {
		line := strings.TrimSpace(scanner.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok || key == "" || value == "" {
			return nil, fmt.Errorf("line %d: want KEY=VALUE, got %q", n, line)
		}
		if _, dup := p[key]; dup {
			return nil, fmt.Errorf("line %d: %s is set twice", n, key)
		}
		p[key] = value
	}
	var missing []string
	for _, key := range required {
		if p[key] == "" {
			missing = append(missing, key)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("missing pins: %s", strings.Join(missing, ", "))
	}
	for key, value := range p {
		if strings.HasSuffix(key, "_VERSION") && !semver.MatchString(value) {
			return nil, fmt.Errorf("%s=%q is not a version like v1.2.3", key, value)
		}
	}
	return p, nil
}

// Kubernetes is the pinned Kubernetes release, e.g. v1.36.3.
func (p Pins) Kubernetes() string { return p["KUBERNETES_VERSION"] }

// StagingVersion is the tag the release's staging modules (k8s.io/api, ...) carry:
// Kubernetes v1.X.Y publishes them as v0.X.Y.
func (p Pins) StagingVersion() string { return StagingVersionOf(p.Kubernetes()) }

// StagingVersionOf maps v1.X.Y[-suffix] to v0.X.Y[-suffix].
func StagingVersionOf(kubernetes string) string {
	if rest, ok := strings.CutPrefix(kubernetes, "v1."); ok {
		return "v0." + rest
	}
	return kubernetes
}

// Get returns one pin; it panics on an unknown key, which is a programming error.
func (p Pins) Get(key string) string {
	v, ok := p[key]
	if !ok {
		panic("unknown pin " + key)
	}
	return v
}

// String lists the pins sorted by key, for logs and cache keys.
func (p Pins) String() string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, p[k])
	}
	return b.String()
}
