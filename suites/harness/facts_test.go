package harness

import (
	"strings"
	"testing"
	"time"

	"github.com/faultline-k8s/faultline/vocab/facts"
)

func TestResolveClusterPrecedence(t *testing.T) {
	fromConfigMap := clusterFacts{Source: sourceConfigMap, Facts: facts.Facts{
		Runtime: "crio", RuntimeVersion: "1.36.2", KubernetesVersion: "v1.36.3",
		RuntimeRequestTimeout: facts.Duration(30 * time.Second), NRIRequestTimeout: facts.Duration(3 * time.Second),
		NRIRegistrationTimeout: facts.Duration(6 * time.Second),
	}}
	fromNodes := clusterFacts{Source: sourceNodes, Facts: facts.Facts{
		Runtime: "containerd", RuntimeVersion: "2.4.2", RuntimeRequestTimeout: facts.Duration(2 * time.Minute),
	}}
	type want struct {
		runtime, version           string
		rrt, nri, nriReg           time.Duration
		runtimeSrc, rrtSrc, nriSrc string
		contradiction              string // a note that must be there, if set
	}
	for _, tc := range []struct {
		name string
		o    Options
		in   clusterFacts
		want want
	}{
		{"the ConfigMap, no flags", Options{}, fromConfigMap, want{
			runtime: "crio", version: "1.36.2", rrt: 30 * time.Second, nri: 3 * time.Second, nriReg: 6 * time.Second,
			runtimeSrc: sourceConfigMap, rrtSrc: sourceConfigMap, nriSrc: sourceConfigMap}},
		{"flags override the ConfigMap", Options{Runtime: "cri-o", RuntimeRequestTimeout: 10 * time.Second, NRIRequestTimeout: time.Second}, fromConfigMap, want{
			runtime: "crio", version: "1.36.2", rrt: 10 * time.Second, nri: time.Second, nriReg: 6 * time.Second,
			runtimeSrc: "flag --faultline.runtime", rrtSrc: "flag --faultline.runtime-request-timeout", nriSrc: "flag --faultline.nri-request-timeout",
			contradiction: "runtime-request-timeout: the cluster has 30s, the run asks for 10s"}},
		{"a runtime override that contradicts the facts has no version", Options{Runtime: "containerd"}, fromConfigMap, want{
			runtime: "containerd", rrt: 30 * time.Second, nri: 3 * time.Second, nriReg: 6 * time.Second,
			runtimeSrc: "flag --faultline.runtime", rrtSrc: sourceConfigMap, nriSrc: sourceConfigMap,
			contradiction: `runtime: the cluster runs "crio", the run asks for "containerd"`}},
		{"a foreign cluster: nodes, NRI timeouts from the defaults", Options{}, fromNodes, want{
			runtime: "containerd", version: "2.4.2", rrt: 2 * time.Minute, nri: facts.DefaultNRIRequestTimeout, nriReg: facts.DefaultNRIRegistrationTimeout,
			runtimeSrc: "node status (containerRuntimeVersion)", rrtSrc: "the kubelet's /configz", nriSrc: "default (the runtime's NRI settings are not visible from the API)"}},
		{"a foreign cluster: the NRI flag wins over the default, without a contradiction", Options{NRIRequestTimeout: 5 * time.Second}, fromNodes, want{
			runtime: "containerd", version: "2.4.2", rrt: 2 * time.Minute, nri: 5 * time.Second, nriReg: facts.DefaultNRIRegistrationTimeout,
			runtimeSrc: "node status (containerRuntimeVersion)", rrtSrc: "the kubelet's /configz", nriSrc: "flag --faultline.nri-request-timeout"}},
		{"a foreign cluster whose kubelet /configz is closed", Options{}, clusterFacts{Source: sourceNodes, Facts: facts.Facts{Runtime: "containerd"}}, want{
			runtime: "containerd", nri: facts.DefaultNRIRequestTimeout, nriReg: facts.DefaultNRIRegistrationTimeout,
			runtimeSrc: "node status (containerRuntimeVersion)", rrtSrc: "unknown (pass --faultline.runtime-request-timeout)",
			nriSrc: "default (the runtime's NRI settings are not visible from the API)"}},
		{"no facts at all, the runtime from the flag", Options{Runtime: "crio"}, clusterFacts{Source: "no facts"}, want{
			runtime: "crio", nri: facts.DefaultNRIRequestTimeout, nriReg: facts.DefaultNRIRegistrationTimeout,
			runtimeSrc: "flag --faultline.runtime", rrtSrc: "unknown (pass --faultline.runtime-request-timeout)",
			nriSrc: "default (the runtime's NRI settings are not visible from the API)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, notes, err := resolveCluster(tc.o, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			w := tc.want
			if got.Runtime.Name != w.runtime || got.RuntimeVersion != w.version {
				t.Errorf("runtime %s %q, want %s %q", got.Runtime.Name, got.RuntimeVersion, w.runtime, w.version)
			}
			if got.RuntimeRequestTimeout != w.rrt || got.NRIRequestTimeout != w.nri || got.NRIRegistrationTimeout != w.nriReg {
				t.Errorf("timeouts %s/%s/%s, want %s/%s/%s", got.RuntimeRequestTimeout, got.NRIRequestTimeout, got.NRIRegistrationTimeout, w.rrt, w.nri, w.nriReg)
			}
			for fact, src := range map[string]string{"runtime": w.runtimeSrc, "runtime-request-timeout": w.rrtSrc, "nri-request-timeout": w.nriSrc} {
				if got.Sources[fact] != src {
					t.Errorf("source of %s: %q, want %q", fact, got.Sources[fact], src)
				}
			}
			joined := strings.Join(notes, "\n")
			for _, fact := range []string{"runtime ", "runtime-request-timeout ", "nri-request-timeout "} {
				if !strings.Contains(joined, fact) {
					t.Errorf("notes do not log %q:\n%s", fact, joined)
				}
			}
			contradicts := strings.Contains(joined, "override contradicts")
			if w.contradiction != "" && !strings.Contains(joined, w.contradiction) {
				t.Errorf("notes do not name the contradiction %q:\n%s", w.contradiction, joined)
			}
			if w.contradiction == "" && contradicts {
				t.Errorf("no contradiction expected:\n%s", joined)
			}
		})
	}
}

// The kubelet's syncFrequency, which the DRA specs' retries derive from:
// the flag, else the facts, else the kubelet's own default, each named.
func TestResolveKubeletSyncFrequency(t *testing.T) {
	made := clusterFacts{Source: sourceConfigMap, Facts: facts.Facts{Runtime: "containerd", KubeletSyncFrequency: facts.Duration(20 * time.Second)}}
	foreign := clusterFacts{Source: sourceNodes, Facts: facts.Facts{Runtime: "containerd", KubeletSyncFrequency: facts.Duration(time.Minute)}}
	closed := clusterFacts{Source: sourceNodes, Facts: facts.Facts{Runtime: "containerd"}}
	for _, tc := range []struct {
		name    string
		o       Options
		in      clusterFacts
		want    time.Duration
		source  string
		against string
	}{
		{"faultline's cluster", Options{}, made, 20 * time.Second, sourceConfigMap, ""},
		{"a foreign cluster's /configz", Options{}, foreign, time.Minute, "the kubelet's /configz", ""},
		{"a kubelet that does not show it", Options{}, closed, facts.KubeletBuiltinSyncFrequency, "the kubelet's default (its /configz was not read)", ""},
		{"the flag wins", Options{KubeletSyncFrequency: 30 * time.Second}, made, 30 * time.Second, "flag --faultline.kubelet-sync-frequency",
			"kubelet-sync-frequency: the cluster has 20s, the run asks for 30s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, notes, err := resolveCluster(tc.o, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got.KubeletSyncFrequency != tc.want || got.Sources["kubelet-sync-frequency"] != tc.source {
				t.Errorf("sync frequency %s from %q, want %s from %q", got.KubeletSyncFrequency, got.Sources["kubelet-sync-frequency"], tc.want, tc.source)
			}
			joined := strings.Join(notes, "\n")
			if !strings.Contains(joined, "kubelet-sync-frequency "+tc.want.String()) {
				t.Errorf("notes do not log the sync frequency:\n%s", joined)
			}
			if tc.against != "" && !strings.Contains(joined, tc.against) {
				t.Errorf("notes do not name the contradiction %q:\n%s", tc.against, joined)
			}
		})
	}
}

func TestResolveClusterErrors(t *testing.T) {
	if _, _, err := resolveCluster(Options{}, clusterFacts{Source: "no facts"}); err == nil || !strings.Contains(err.Error(), "--faultline.runtime") {
		t.Errorf("no runtime anywhere: want an error naming --faultline.runtime, got %v", err)
	}
	if _, _, err := resolveCluster(Options{Runtime: "docker"}, clusterFacts{Source: sourceNodes}); err == nil {
		t.Error("an unknown runtime override must be an error")
	}
	if _, _, err := resolveCluster(Options{}, clusterFacts{Source: sourceConfigMap, Facts: facts.Facts{Runtime: "rkt"}}); err == nil {
		t.Error("an unknown runtime in the facts must be an error")
	}
}

func TestRuntimeDescription(t *testing.T) {
	info, _, err := resolveCluster(Options{}, clusterFacts{Source: sourceConfigMap, Facts: facts.Facts{Runtime: "cri-o", RuntimeVersion: "1.36.2"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := info.RuntimeDescription(); got != "crio 1.36.2" {
		t.Errorf("RuntimeDescription() = %q", got)
	}
	if info.Runtime.Process != "crio" || !info.Runtime.CreateContainerRunsOCICreate {
		t.Errorf("the runtime must come from vocab/runtimes: %+v", info.Runtime)
	}
}
