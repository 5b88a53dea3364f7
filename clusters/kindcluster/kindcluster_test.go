package kindcluster

import (
	"strings"
	"testing"
	"time"
)

func TestConfigAddsRunSettings(t *testing.T) {
	cfg, err := Config(Settings{
		Name: "x", NodeImage: "faultline/node:test", CgroupV1: true,
		RuntimeRequestTimeout: 20 * time.Second, NRIRequestTimeout: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Nodes) != 1 || cfg.Nodes[0].Image != "faultline/node:test" {
		t.Fatalf("nodes = %+v", cfg.Nodes)
	}
	if !cfg.Networking.DisableDefaultCNI || cfg.Networking.KubeProxyMode != "iptables" {
		t.Fatalf("networking = %+v", cfg.Networking)
	}
	if !cfg.FeatureGates["DRADeviceTaintRules"] || cfg.RuntimeConfig["resource.k8s.io/v1beta2"] != "true" {
		t.Fatalf("DRA gates/API missing: %v %v", cfg.FeatureGates, cfg.RuntimeConfig)
	}
	patches := strings.Join(cfg.KubeadmConfigPatches, "\n---\n")
	for _, want := range []string{"kind: KubeletConfiguration", "failCgroupV1: false", "runtimeRequestTimeout: 20s"} {
		if !strings.Contains(patches, want) {
			t.Errorf("kubeadm patches lack %q:\n%s", want, patches)
		}
	}
	nri := strings.Join(cfg.ContainerdConfigPatches, "\n")
	if !strings.Contains(nri, "plugin_request_timeout = '2s'") || strings.Contains(nri, "registration") {
		t.Errorf("containerd patch = %q", nri)
	}
}

func TestConfigLeavesDefaultsAlone(t *testing.T) {
	cfg, err := Config(Settings{NodeImage: "img"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.KubeadmConfigPatches) != 0 || len(cfg.ContainerdConfigPatches) != 0 {
		t.Fatalf("no settings must add no patches: %v %v", cfg.KubeadmConfigPatches, cfg.ContainerdConfigPatches)
	}
}

func TestConfigRejectsUnknownRuntime(t *testing.T) {
	if _, err := Config(Settings{Runtime: "rkt"}); err == nil || !strings.Contains(err.Error(), `unknown runtime "rkt"`) {
		t.Fatalf("err = %v", err)
	}
}
