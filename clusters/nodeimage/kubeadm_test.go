package nodeimage

import (
	"slices"
	"strings"
	"testing"

	"github.com/faultline-k8s/faultline/vocab/versions"
)

// kubeadm's tags are read from its constants file, and a patch whose kubeadm
// expects other tags than its minor's pins gets them, with the sources
// behind them.
func TestKubeadmTagsOverThePins(t *testing.T) {
	constants := []byte(`package constants
const (
	// DefaultEtcdVersion indicates the default etcd version that kubeadm uses.
	DefaultEtcdVersion = "3.6.9-0"
	CoreDNSVersion = "v1.14.3"
	PauseVersion = "3.10.2"
)`)
	tags, err := KubeadmTags(constants)
	if err != nil {
		t.Fatal(err)
	}
	if tags["ETCD_IMAGE_TAG"] != "3.6.9-0" || tags["COREDNS_IMAGE_TAG"] != "v1.14.3" || tags["PAUSE_IMAGE_TAG"] != "3.10.2" {
		t.Errorf("tags %v", tags)
	}
	pins, err := versions.ForKubernetes("v1.36.1")
	if err != nil {
		t.Fatal(err)
	}
	out, changed := withKubeadmTags(pins, tags)
	if out["ETCD_VERSION"] != "v3.6.9" || out["COREDNS_VERSION"] != "v1.14.3" || out["ETCD_IMAGE_TAG"] != "3.6.9-0" || out.Kubernetes() != "v1.36.1" {
		t.Errorf("pins %v", out)
	}
	if !slices.ContainsFunc(changed, func(c string) bool { return strings.HasPrefix(c, "ETCD_VERSION=v3.6.9") }) {
		t.Errorf("changed %v", changed)
	}
	if pins["ETCD_VERSION"] == "v3.6.9" {
		t.Error("the pins given were changed")
	}
	if _, err := KubeadmTags([]byte("package constants\nconst PauseVersion = \"3.10\"\n")); err == nil {
		t.Error("a file without the etcd and CoreDNS tags read")
	}
}
