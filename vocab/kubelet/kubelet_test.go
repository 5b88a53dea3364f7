package kubelet

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"
)

func TestParseFeatureGates(t *testing.T) {
	raw := []byte("# HELP x\nkubernetes_feature_enabled{name=\"A\",stage=\"BETA\"} 1\nkubernetes_feature_enabled{stage=\"\",name=\"B\"} 0\nother 1\n" +
		"kubernetes_feature_enabled{stage=\"ALPHA\"} 1\nkubernetes_feature_enabled{name=\"C\"} x\n")
	gates, err := ParseFeatureGates(raw)
	if err != nil || !gates["A"] || gates["B"] || len(gates) != 2 {
		t.Errorf("gates %v, %v", gates, err)
	}
	if _, err := ParseFeatureGates([]byte("up 1\n")); err == nil {
		t.Error("metrics without feature samples must be an error")
	}
}

func TestParseConfigz(t *testing.T) {
	cfg, err := ParseConfigz([]byte(`{"kubeletconfig":{"containerRuntimeEndpoint":"unix:///run/containerd/containerd.sock","runtimeRequestTimeout":"30s","featureGates":{"X":true}}}`))
	if err != nil || cfg.RuntimeRequestTimeout != "30s" || cfg.ContainerRuntimeEndpoint != "unix:///run/containerd/containerd.sock" || !cfg.FeatureGates["X"] {
		t.Errorf("configz %+v, %v", cfg, err)
	}
	for raw, want := range map[string]string{`{}`: "no kubeletconfig", `{`: "/configz: "} {
		if _, err := ParseConfigz([]byte(raw)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseConfigz(%s) = %v, want an error saying %q", raw, err, want)
		}
	}
}

// A fake clientset has no REST client: nothing is asked, and the error
// says which node and endpoint.
func TestReadWithoutREST(t *testing.T) {
	_, err := ReadConfig(context.Background(), fake.NewClientset(), "n1")
	if !errors.Is(err, ErrNoREST) || !strings.Contains(err.Error(), "kubelet /configz on n1") {
		t.Errorf("ReadConfig = %v", err)
	}
	_, err = ReadFeatureGates(context.Background(), fake.NewClientset(), "n1")
	if !errors.Is(err, ErrNoREST) || !strings.Contains(err.Error(), "kubelet /metrics on n1") {
		t.Errorf("ReadFeatureGates = %v", err)
	}
}
