// Package versions reads the pins in versions.env: the one place that says which
// Kubernetes, containerd, etcd, CoreDNS, kind and Debian faultline builds and runs.
package versions

import (
	"bufio"
	"bytes"
	"embed"
	"fmt"
	"golang.org/x/mod/modfile"
	"path"
	"regexp"
	"sort"
	"strings"
)

//go:embed versions.env
var pinned []byte

// releases holds, per other Kubernetes minor faultline runs, the pins that
// differ from versions.env (kubernetes/<major.minor>.env): its newest served
// patch and what follows the release.
//
//go:embed kubernetes/*.env
var releases embed.FS

// followKubernetes are the pins a Kubernetes release's file may set: those
// that follow the release (kubeadm's image tags, the components behind them,
// the CRI-O minor).
var followKubernetes = map[string]bool{
	"KUBERNETES_VERSION": true, "ETCD_IMAGE_TAG": true, "PAUSE_IMAGE_TAG": true, "COREDNS_IMAGE_TAG": true,
	"ETCD_VERSION": true, "COREDNS_VERSION": true, "CRIO_VERSION": true,
}

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

// Kubernetes lists the pinned Kubernetes releases, one per supported minor,
// the default (versions.env) first, then newest minor first.
func Kubernetes() []string {
	out := []string{Default().Kubernetes()}
	files, _ := releases.ReadDir("kubernetes")
	for i := len(files) - 1; i >= 0; i-- {
		if p, err := minorPins(strings.TrimSuffix(files[i].Name(), ".env")); err == nil {
			out = append(out, p.Kubernetes())
		}
	}
	return out
}

// ForKubernetes returns the pins of one Kubernetes release: the pins of its
// minor (versions.env, or kubernetes/<minor>.env over it), and for another
// patch of that minor than the pinned one, the same pins with its own
// KUBERNETES_VERSION (Patched says so). An empty version is the default.
func ForKubernetes(version string) (Pins, error) {
	p := Default()
	if version == "" || version == p.Kubernetes() {
		return p, nil
	}
	if !IsRelease(version) {
		return nil, fmt.Errorf("Kubernetes %q: want a release like v1.36.5", version)
	}
	minor := Minor(version)
	if minor != Minor(p.Kubernetes()) {
		var err error
		if p, err = minorPins(minor); err != nil {
			return nil, err
		}
	}
	if version == p.Kubernetes() {
		return p, nil
	}
	out := p.With("KUBERNETES_VERSION", version)
	out[pinnedPatch] = p.Kubernetes()
	return out, nil
}

// pinnedPatch records, in the pins of another patch than the minor's pinned
// one, which patch the other pins were made for (kubeadm's tags are those of
// that patch until the node image builder checks the patch's own).
const pinnedPatch = "PINNED_PATCH"

// Patched says whether the pins are those of another patch than the one
// its minor pins (ForKubernetes), and which patch they were made for.
func (p Pins) Patched() (pinned string, ok bool) {
	pinned, ok = p[pinnedPatch]
	return pinned, ok
}

// With returns the pins with one pin set to another version (a release the
// run builds instead of the pinned one: --containerd-version).
func (p Pins) With(key, version string) Pins {
	out := Pins{}
	for k, v := range p {
		out[k] = v
	}
	out[key] = version
	return out
}

// pinnedMinors are the minors with pins: versions.env's and those of
// kubernetes/*.env.
func pinnedMinors() []string {
	out := []string{Minor(Default().Kubernetes())}
	files, _ := releases.ReadDir("kubernetes")
	for i := len(files) - 1; i >= 0; i-- {
		out = append(out, strings.TrimSuffix(files[i].Name(), ".env"))
	}
	return out
}

// minorPins reads kubernetes/<minor>.env over versions.env.
func minorPins(minor string) (Pins, error) {
	data, err := releases.ReadFile(path.Join("kubernetes", minor+".env"))
	if err != nil {
		return nil, fmt.Errorf("no pins for Kubernetes %s (pinned minors: %s)", minor, strings.Join(pinnedMinors(), ", "))
	}
	over, err := parseLines(data)
	if err != nil {
		return nil, fmt.Errorf("kubernetes/%s.env: %w", minor, err)
	}
	if Minor(over["KUBERNETES_VERSION"]) != minor {
		return nil, fmt.Errorf("kubernetes/%s.env sets KUBERNETES_VERSION=%q, not a %s release", minor, over["KUBERNETES_VERSION"], minor)
	}
	return Default().with(over["KUBERNETES_VERSION"], over)
}

// with lays a release's pins over p.
func (p Pins) with(version string, over Pins) (Pins, error) {
	if over["KUBERNETES_VERSION"] != version {
		return nil, fmt.Errorf("kubernetes/%s.env sets KUBERNETES_VERSION=%q", version, over["KUBERNETES_VERSION"])
	}
	out := Pins{}
	for k, v := range p {
		out[k] = v
	}
	for k, v := range over {
		if !followKubernetes[k] {
			return nil, fmt.Errorf("kubernetes/%s.env sets %s, which does not follow the Kubernetes release: set it in versions.env", version, k)
		}
		out[k] = v
	}
	return out, out.check()
}

// Parse reads KEY=VALUE lines (blank lines and # comments allowed) and checks
// that every required pin is there and every *_VERSION is a semantic version.
func Parse(data []byte) (Pins, error) {
	p, err := parseLines(data)
	if err != nil {
		return nil, err
	}
	return p, p.check()
}

func parseLines(data []byte) (Pins, error) {
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
	return p, nil
}

// check says whether every required pin is set and every *_VERSION is a
// semantic version.
func (p Pins) check() error {
	var missing []string
	for _, key := range required {
		if p[key] == "" {
			missing = append(missing, key)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing pins: %s", strings.Join(missing, ", "))
	}
	for key, value := range p {
		if strings.HasSuffix(key, "_VERSION") && !semver.MatchString(value) {
			return fmt.Errorf("%s=%q is not a version like v1.2.3", key, value)
		}
	}
	return nil
}

// IsRelease says whether v is a release version like v1.2.3 (a
// pre-release suffix allowed): what every *_VERSION pin, an NRI override
// and a faultline release tag must look like.
func IsRelease(v string) bool { return semver.MatchString(v) }

// Minor is the major.minor of a version: "1.36" of "v1.36.3", "1.36.2"
// or "cri-o://1.36.2"; "" when it has none.
func Minor(v string) string {
	if _, after, ok := strings.Cut(v, "://"); ok {
		v = after
	}
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return ""
	}
	return parts[0] + "." + parts[1]
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

// FrameworkRelease is the Kubernetes release a go.mod (faultline's own)
// requires k8s.io/kubernetes at: the e2e framework the suites are built with.
func FrameworkRelease(goMod []byte) (string, error) {
	f, err := modfile.ParseLax("go.mod", goMod, nil)
	if err != nil {
		return "", err
	}
	for _, r := range f.Require {
		if r.Mod.Path == "k8s.io/kubernetes" {
			return r.Mod.Version, nil
		}
	}
	return "", fmt.Errorf("go.mod does not require k8s.io/kubernetes")
}
