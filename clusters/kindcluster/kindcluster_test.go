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

func TestConfigCRIO(t *testing.T) {
	cfg, err := Config(Settings{
		Name: "x", Runtime: "crio", NodeImage: "faultline/node-crio:test", CgroupV1: true,
		RuntimeRequestTimeout: 20 * time.Second, NRIRequestTimeout: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Nodes) != 1 || cfg.Nodes[0].Image != "faultline/node-crio:test" {
		t.Fatalf("nodes = %+v", cfg.Nodes)
	}
	if !cfg.Networking.DisableDefaultCNI || cfg.Networking.KubeProxyMode != "iptables" || !cfg.FeatureGates["DRADeviceTaintRules"] {
		t.Fatalf("crio config differs from containerd's: %+v %v", cfg.Networking, cfg.FeatureGates)
	}
	patches := strings.Join(cfg.KubeadmConfigPatches, "\n---\n")
	for _, want := range []string{
		"kind: InitConfiguration\nnodeRegistration:\n  criSocket: unix:///var/run/crio/crio.sock",
		"kind: JoinConfiguration\nnodeRegistration:\n  criSocket: unix:///var/run/crio/crio.sock",
		"containerRuntimeEndpoint: unix:///var/run/crio/crio.sock",
		"failCgroupV1: false", "runtimeRequestTimeout: 20s",
	} {
		if !strings.Contains(patches, want) {
			t.Errorf("kubeadm patches lack %q:\n%s", want, patches)
		}
	}
	// kind would read /etc/containerd/config.toml for these, which a crio node lacks.
	if len(cfg.ContainerdConfigPatches) != 0 {
		t.Errorf("crio config has containerd patches: %v", cfg.ContainerdConfigPatches)
	}
	// The NRI timeout reaches CRI-O as a drop-in mounted into the node.
	mounts := cfg.Nodes[0].ExtraMounts
	if len(mounts) != 1 || mounts[0].ContainerPath != "/etc/crio/crio.conf.d/20-faultline-run.conf" || mounts[0].HostPath != crioRunConfigPath("x") {
		t.Errorf("mounts = %+v", mounts)
	}
	if got := crioRunConfig(Settings{Runtime: "crio", NRIRequestTimeout: 2 * time.Second}); !strings.Contains(got, "[crio.nri]\nnri_plugin_request_timeout = \"2s\"\n") {
		t.Errorf("crio drop-in = %q", got)
	}
	plain, err := Config(Settings{Runtime: "crio", NodeImage: "img"})
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.Nodes[0].ExtraMounts) != 0 {
		t.Errorf("no settings must mount nothing: %+v", plain.Nodes[0].ExtraMounts)
	}
}
