package kindcluster

import (
	"context"
	"io/fs"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"

	"github.com/faultline-k8s/faultline/vocab/facts"
	"github.com/faultline-k8s/faultline/vocab/runtimes"
)

// The runtimes the tests make clusters of: the CLI looks them up once, by name.
var containerd, crio = runtimes.MustLookup("containerd"), runtimes.MustLookup("crio")

func TestConfigAddsRunSettings(t *testing.T) {
	cfg, err := Config(Settings{
		Name: "x", Runtime: containerd, NodeImage: "faultline/node:test", CgroupV1: true,
		RuntimeRequestTimeout: 20 * time.Second, NRIRequestTimeout: 3 * time.Second,
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
	for _, want := range []string{
		"[plugins.'io.containerd.nri.v1.nri']\n",
		"plugin_request_timeout = '3s'",
		"plugin_registration_timeout = '5s'", // unset: the facts default
	} {
		if !strings.Contains(nri, want) {
			t.Errorf("containerd patch lacks %q:\n%s", want, nri)
		}
	}
	if strings.Contains(nri, "{{") || strings.Contains(nri, "*/") {
		t.Errorf("containerd patch is not rendered:\n%s", nri)
	}
}

// Unset settings are the defaults of vocab/facts, written out: the cluster
// then has what the suites assume.
func TestConfigWritesDefaults(t *testing.T) {
	cfg, err := Config(Settings{Runtime: containerd, NodeImage: "img"})
	if err != nil {
		t.Fatal(err)
	}
	patches := strings.Join(cfg.KubeadmConfigPatches, "\n---\n")
	for _, want := range []string{
		"runtimeRequestTimeout: " + facts.DefaultRuntimeRequestTimeout.String(),
		"syncFrequency: " + facts.DefaultKubeletSyncFrequency.String(),
	} {
		if !strings.Contains(patches, want) {
			t.Errorf("kubeadm patches lack %q:\n%s", want, patches)
		}
	}
	if strings.Contains(patches, "failCgroupV1") {
		t.Errorf("failCgroupV1 without CgroupV1:\n%s", patches)
	}
	nri := strings.Join(cfg.ContainerdConfigPatches, "\n")
	for _, want := range []string{
		"plugin_request_timeout = '" + facts.DefaultNRIRequestTimeout.String() + "'",
		"plugin_registration_timeout = '" + facts.DefaultNRIRegistrationTimeout.String() + "'",
	} {
		if !strings.Contains(nri, want) {
			t.Errorf("containerd patch lacks %q:\n%s", want, nri)
		}
	}
}

// TestConfigWorkersAndGates: workers get the same node image and mounts as
// the control plane; gates join the runtime config's own.
func TestConfigWorkersAndGates(t *testing.T) {
	for _, rt := range []runtimes.Runtime{containerd, crio} {
		cfg, err := Config(Settings{Name: "x", Runtime: rt, NodeImage: "img", Workers: 2, FeatureGates: map[string]bool{"DRAHandlePermanentDriverFailures": true}})
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.Nodes) != 3 || cfg.Nodes[0].Role != "control-plane" || cfg.Nodes[1].Role != "worker" || cfg.Nodes[2].Role != "worker" {
			t.Fatalf("%s: nodes %+v", rt, cfg.Nodes)
		}
		for _, n := range cfg.Nodes {
			if n.Image != "img" || len(n.ExtraMounts) != len(cfg.Nodes[0].ExtraMounts) {
				t.Errorf("%s: node %+v differs from the control plane", rt, n)
			}
		}
		if !cfg.FeatureGates["DRAHandlePermanentDriverFailures"] || !cfg.FeatureGates["DRADeviceTaintRules"] {
			t.Errorf("%s: feature gates %v", rt, cfg.FeatureGates)
		}
	}
	if _, err := Config(Settings{Name: "x", Runtime: containerd, Workers: -1}); err == nil {
		t.Error("negative workers accepted")
	}
}

// A 1.35 control plane refuses DRADeviceTaintRules without DRADeviceTaints
// (off there): the config leaves it out for 1.35 only; a run's own gates
// stay.
func TestConfigGatesFollowTheRelease(t *testing.T) {
	for version, want := range map[string]bool{"v1.35.8": false, "v1.36.5": true, "v1.37.2": true, "": true} {
		cfg, err := Config(Settings{Name: "x", Runtime: containerd, NodeImage: "img", KubernetesVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.FeatureGates["DRADeviceTaintRules"]; got != want {
			t.Errorf("%q: DRADeviceTaintRules %v, want %v", version, got, want)
		}
	}
	cfg, err := Config(Settings{Name: "x", Runtime: crio, NodeImage: "img", KubernetesVersion: "v1.35.8", FeatureGates: map[string]bool{"DRADeviceTaintRules": true, "DRADeviceTaints": true}})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.FeatureGates["DRADeviceTaintRules"] {
		t.Error("a gate the run sets was dropped")
	}
}

// Unknown runtime names are the CLI's to refuse (runtimes.Lookup); here a
// missing runtime, or one vocab/runtimes does not describe, is refused.
func TestConfigRejectsUnknownRuntime(t *testing.T) {
	if _, err := Config(Settings{Name: "x"}); err == nil || !strings.Contains(err.Error(), "no runtime") {
		t.Fatalf("no runtime: err = %v", err)
	}
	if _, err := Config(Settings{Runtime: runtimes.Runtime{Name: "rkt"}}); err == nil || !strings.Contains(err.Error(), "runtime rkt") {
		t.Fatalf("rkt: err = %v", err)
	}
	if _, err := Config(Settings{Runtime: containerd, RuntimeRequestTimeout: -time.Second}); err == nil {
		t.Fatal("a negative timeout is accepted")
	}
}

func TestConfigCRIO(t *testing.T) {
	cfg, err := Config(Settings{
		Name: "x", Runtime: crio, NodeImage: "faultline/node-crio:test", CgroupV1: true,
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
	// The NRI timeouts reach CRI-O as a drop-in mounted into the node.
	mounts := cfg.Nodes[0].ExtraMounts
	hostPath, err := runConfigPath("x", crio)
	if err != nil {
		t.Fatal(err)
	}
	if len(mounts) != 1 || mounts[0].ContainerPath != "/etc/crio/crio.conf.d/20-faultline-run.conf" || mounts[0].HostPath != hostPath {
		t.Errorf("mounts = %+v", mounts)
	}
	s, err := Settings{Runtime: crio, NRIRequestTimeout: 3 * time.Second}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	got, err := runConfig(s)
	if err != nil {
		t.Fatal(err)
	}
	if want := "# faultline: this run's settings (clusters/kindcluster)\n[crio.nri]\nnri_plugin_request_timeout = \"3s\"\nnri_plugin_registration_timeout = \"5s\"\n"; got != want {
		t.Errorf("crio drop-in = %q, want %q", got, want)
	}
	// Without settings the drop-in still carries the defaults, so the facts hold.
	plain, err := Config(Settings{Name: "x", Runtime: crio, NodeImage: "img"})
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.Nodes[0].ExtraMounts) != 1 {
		t.Errorf("the run config must always be mounted: %+v", plain.Nodes[0].ExtraMounts)
	}
}

// Every runtime vocab/runtimes knows has a kind config that parses, a run
// config that renders, and a CRI socket that agrees with its entry: adding a
// runtime without its files fails here.
func TestEveryRuntimeHasItsConfigs(t *testing.T) {
	const kindDefaultSocket = "unix:///run/containerd/containerd.sock"
	for _, rt := range runtimes.All() {
		t.Run(rt.Name, func(t *testing.T) {
			if rt.KindConfig == "" || rt.RunConfig == "" {
				t.Fatalf("%s names no KindConfig or RunConfig", rt.Name)
			}
			raw, err := configs.ReadFile("configs/" + rt.KindConfig)
			if err != nil {
				t.Fatal(err)
			}
			var checked v1alpha4.Cluster
			if err := yaml.UnmarshalStrict(raw, &checked); err != nil {
				t.Fatalf("%s: %v", rt.KindConfig, err)
			}
			cfg, err := Config(Settings{Name: "x", Runtime: rt, NodeImage: "img"})
			if err != nil {
				t.Fatal(err)
			}
			patches := strings.Join(cfg.KubeadmConfigPatches, "\n")
			if strings.Contains(patches, "criSocket:") || strings.Contains(patches, "containerRuntimeEndpoint:") {
				for _, want := range []string{"criSocket: " + rt.CRISocket, "containerRuntimeEndpoint: " + rt.CRISocket} {
					if !strings.Contains(patches, want) {
						t.Errorf("%s lacks %q (vocab/runtimes' CRISocket)", rt.KindConfig, want)
					}
				}
			} else if rt.CRISocket != kindDefaultSocket {
				t.Errorf("%s sets no criSocket, so kind's default %s, but the runtime serves %s", rt.KindConfig, kindDefaultSocket, rt.CRISocket)
			}
			s, err := Settings{Runtime: rt, NRIRequestTimeout: 7 * time.Second, NRIRegistrationTimeout: 9 * time.Second}.Resolve()
			if err != nil {
				t.Fatal(err)
			}
			run, err := runConfig(s)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(run, "7s") || !strings.Contains(run, "9s") || strings.Contains(run, "{{") {
				t.Errorf("%s does not carry both NRI timeouts:\n%s", rt.RunConfig, run)
			}
			if rt.RunConfigPath == "" && len(cfg.ContainerdConfigPatches) != 1 || rt.RunConfigPath != "" && len(cfg.Nodes[0].ExtraMounts) != 1 {
				t.Errorf("run config not applied: patches %v, mounts %+v", cfg.ContainerdConfigPatches, cfg.Nodes[0].ExtraMounts)
			}
		})
	}
	// and no config without a runtime
	names := map[string]bool{}
	for _, rt := range runtimes.All() {
		names[rt.KindConfig], names[rt.RunConfig] = true, true
	}
	entries, err := fs.ReadDir(configs, "configs")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !names[e.Name()] {
			t.Errorf("configs/%s belongs to no runtime in vocab/runtimes", e.Name())
		}
	}
}

func TestFactSettings(t *testing.T) {
	got := Settings{Runtime: crio, NodeImage: "img", NRIRequestTimeout: time.Second}.FactSettings()
	want := facts.Settings{Runtime: "crio", NodeImage: "img", RuntimeRequestTimeout: facts.DefaultRuntimeRequestTimeout,
		NRIRequestTimeout: time.Second, NRIRegistrationTimeout: facts.DefaultNRIRegistrationTimeout,
		KubeletSyncFrequency: facts.DefaultKubeletSyncFrequency}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("FactSettings = %+v, want %+v", got, want)
	}
}

func node(name, runtime string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: v1.NodeStatus{NodeInfo: v1.NodeSystemInfo{ContainerRuntimeVersion: runtime, KubeletVersion: "v1.36.3"}}}
}

func TestRecordAndCheckFacts(t *testing.T) {
	ctx := context.Background()
	s, err := Settings{Name: "x", Runtime: crio, NodeImage: "faultline/node-crio:k"}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	cs := fake.NewClientset(node("x-control-plane", "cri-o://1.36.2"))
	recorded, err := recordFacts(ctx, cs, s)
	if err != nil {
		t.Fatal(err)
	}
	want := facts.Facts{Cluster: "x", Runtime: "crio", RuntimeVersion: "1.36.2", KubernetesVersion: "v1.36.3",
		NodeImage: "faultline/node-crio:k", RuntimeRequestTimeout: facts.Duration(facts.DefaultRuntimeRequestTimeout),
		NRIRequestTimeout: facts.Duration(facts.DefaultNRIRequestTimeout), NRIRegistrationTimeout: facts.Duration(facts.DefaultNRIRegistrationTimeout),
		KubeletSyncFrequency: facts.Duration(facts.DefaultKubeletSyncFrequency), CreatedBy: "faultline"}
	if !reflect.DeepEqual(recorded, want) {
		t.Fatalf("recorded %+v\nwant %+v", recorded, want)
	}
	// The same settings, unresolved, match.
	if f, err := checkFacts(ctx, cs, Settings{Name: "x", Runtime: crio, NodeImage: "faultline/node-crio:k"}); err != nil || !reflect.DeepEqual(f, want) {
		t.Fatalf("checkFacts = %+v, %v", f, err)
	}
	_, err = checkFacts(ctx, cs, Settings{Name: "x", Runtime: crio, NodeImage: "faultline/node-crio:other", RuntimeRequestTimeout: 10 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "node image:") || !strings.Contains(err.Error(), "runtime-request-timeout: the cluster has 30s, the run asks for 10s") {
		t.Fatalf("mismatch err = %v", err)
	}
	// A kept cluster serves only a run with its fake modes: the suites
	// deploy the fakes by them, and the stack key names them.
	_, err = checkFacts(ctx, cs, Settings{Name: "x", Runtime: crio, NodeImage: "faultline/node-crio:k", FakeModes: []string{"dra-first-device-only"}})
	if err == nil || !strings.Contains(err.Error(), `fake modes: the cluster has [], the run asks for ["dra-first-device-only"]`) {
		t.Fatalf("fake modes: err = %v", err)
	}
	// A node image of the wrong runtime is caught before any fact is written.
	other := fake.NewClientset(node("y-control-plane", "containerd://v2.4.2"))
	if _, err := recordFacts(ctx, other, s); err == nil || !strings.Contains(err.Error(), "nodes run containerd, not crio") {
		t.Fatalf("err = %v", err)
	}
	// A cluster without facts was not made by faultline.
	if _, err := checkFacts(ctx, other, s); err == nil || !strings.Contains(err.Error(), `cluster "x" was not made by faultline`) {
		t.Fatalf("err = %v", err)
	}
}

// kind's error when only its crictl image list failed (faultline's node
// images have no crictl) is told apart from a real loss of logs.
func TestOnlyNoCrictl(t *testing.T) {
	for msg, want := range map[string]bool{
		`command "docker exec --privileged faultline-crio-control-plane crictl images" failed with error: exit status 126`:                                                                                      true,
		`[command "docker exec --privileged a-control-plane crictl images" failed with error: exit status 126, command "docker exec --privileged a-worker crictl images" failed with error: exit status 126]`:   true,
		`command "docker exec --privileged a-control-plane journalctl --no-pager" failed with error: exit status 1`:                                                                                             false,
		`[command "docker exec --privileged a-control-plane crictl images" failed with error: exit status 126, command "docker exec --privileged a-control-plane journalctl" failed with error: exit status 1]`: false,
		`command "docker exec --privileged a-control-plane crictl images" failed with error: exit status 1`:                                                                                                     false,
	} {
		if got := onlyNoCrictl.MatchString(msg); got != want {
			t.Errorf("%q: %v, want %v", msg, got, want)
		}
	}
}
