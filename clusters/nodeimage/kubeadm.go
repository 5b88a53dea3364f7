package nodeimage

// A Kubernetes patch faultline does not pin takes its minor's pins
// (versions.ForKubernetes); kubeadm of that patch decides the image tags it
// pulls, so they are read from its source before anything is planned.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/faultline-k8s/faultline/clusters/gomod"
	"github.com/faultline-k8s/faultline/vocab/versions"
)

// kubeadmConstants is kubeadm's file of the image tags it expects.
const kubeadmConstants = "cmd/kubeadm/app/constants/constants.go"

// kubeadmTag matches one of the tags in kubeadmConstants:
// `DefaultEtcdVersion = "3.6.8-0"`.
var kubeadmTag = regexp.MustCompile(`(?m)^\s*(DefaultEtcdVersion|PauseVersion|CoreDNSVersion)\s*=\s*"([^"]+)"`)

// KubeadmTags reads the etcd, pause and CoreDNS tags of a kubeadm source
// file, by the pins' names (ETCD_IMAGE_TAG, PAUSE_IMAGE_TAG, COREDNS_IMAGE_TAG).
func KubeadmTags(constants []byte) (map[string]string, error) {
	names := map[string]string{"DefaultEtcdVersion": "ETCD_IMAGE_TAG", "PauseVersion": "PAUSE_IMAGE_TAG", "CoreDNSVersion": "COREDNS_IMAGE_TAG"}
	tags := map[string]string{}
	for _, m := range kubeadmTag.FindAllSubmatch(constants, -1) {
		tags[names[string(m[1])]] = string(m[2])
	}
	for _, pin := range names {
		if tags[pin] == "" {
			return nil, fmt.Errorf("%s: no %s", kubeadmConstants, pin)
		}
	}
	return tags, nil
}

// withKubeadmTags lays a patch's kubeadm tags over pins made for another
// patch of its minor, and the etcd and CoreDNS sources behind them. It
// reports the pins it changed.
func withKubeadmTags(pins versions.Pins, tags map[string]string) (versions.Pins, []string) {
	out := versions.Pins{}
	for k, v := range pins {
		out[k] = v
	}
	var changed []string
	set := func(pin, value string) {
		if out[pin] != value {
			changed = append(changed, fmt.Sprintf("%s=%s (was %s)", pin, value, out[pin]))
			out[pin] = value
		}
	}
	for pin, tag := range tags {
		set(pin, tag)
	}
	// etcd's tag is its release and an image revision ("3.6.8-0").
	etcd, _, _ := strings.Cut(tags["ETCD_IMAGE_TAG"], "-")
	set("ETCD_VERSION", "v"+etcd)
	set("COREDNS_VERSION", tags["COREDNS_IMAGE_TAG"])
	return out, changed
}

// patchPins gives pins that ForKubernetes made for another patch than their
// minor's pinned one the patch's own kubeadm tags: read from the checkout
// (src) or from the patch's module. Pins of a pinned patch are returned as
// they are.
func patchPins(ctx context.Context, pins versions.Pins, src string) (versions.Pins, []string, error) {
	if _, patched := pins.Patched(); !patched {
		return pins, nil, nil
	}
	dir := src
	if dir == "" {
		d, err := gomod.Download(ctx, "k8s.io/kubernetes", pins.Kubernetes())
		if err != nil {
			return nil, nil, err
		}
		dir = d.Dir
	}
	data, err := os.ReadFile(filepath.Join(dir, kubeadmConstants))
	if err != nil {
		return nil, nil, fmt.Errorf("kubeadm of Kubernetes %s: %w", pins.Kubernetes(), err)
	}
	tags, err := KubeadmTags(data)
	if err != nil {
		return nil, nil, fmt.Errorf("kubeadm of Kubernetes %s: %w", pins.Kubernetes(), err)
	}
	out, changed := withKubeadmTags(pins, tags)
	return out, changed, nil
}
