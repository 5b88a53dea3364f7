// Package kubelet reads a kubelet's own endpoints through the API server's
// node proxy (/api/v1/nodes/<node>/proxy/...): its running configuration
// (/configz) and its feature gates (/metrics). Preflight, the cluster facts
// and the suites read them here; the parsers also serve a reader that
// fetches the bytes its own way (preflight's Endpoints, faked in its tests).
package kubelet

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Config is what faultline reads of a kubelet's running configuration.
type Config struct {
	ContainerRuntimeEndpoint string `json:"containerRuntimeEndpoint"`
	RuntimeRequestTimeout    string `json:"runtimeRequestTimeout"`
	// SyncFrequency is the pod workers' resync interval.
	SyncFrequency string `json:"syncFrequency"`
	// FeatureGates are only the gates set explicitly; /metrics has all
	// (ParseFeatureGates).
	FeatureGates map[string]bool `json:"featureGates"`
}

// ErrNoREST is Get's answer on a clientset without a REST client (a fake
// one): there is no node proxy to ask.
var ErrNoREST = errors.New("no REST client (a fake clientset)")

// Get reads endpoint ("configz", "metrics") of node's kubelet through the
// API server's node proxy.
func Get(ctx context.Context, cs kubernetes.Interface, node, endpoint string) ([]byte, error) {
	client := cs.CoreV1().RESTClient()
	if rc, ok := client.(*rest.RESTClient); client == nil || (ok && rc == nil) {
		return nil, ErrNoREST
	}
	return client.Get().AbsPath("/api/v1/nodes", node, "proxy", endpoint).DoRaw(ctx)
}

// ReadConfig reads node's kubelet's /configz.
func ReadConfig(ctx context.Context, cs kubernetes.Interface, node string) (Config, error) {
	return read(ctx, cs, node, "configz", ParseConfigz)
}

// ReadFeatureGates reads the feature gates of node's kubelet from its
// /metrics: every gate it knows, with its value.
func ReadFeatureGates(ctx context.Context, cs kubernetes.Interface, node string) (map[string]bool, error) {
	return read(ctx, cs, node, "metrics", ParseFeatureGates)
}

// read gets an endpoint and parses it; its errors name the node.
func read[T any](ctx context.Context, cs kubernetes.Interface, node, endpoint string, parse func([]byte) (T, error)) (T, error) {
	var zero T
	raw, err := Get(ctx, cs, node, endpoint)
	if err != nil {
		return zero, fmt.Errorf("kubelet /%s on %s: %w", endpoint, node, err)
	}
	v, err := parse(raw)
	if err != nil {
		return zero, fmt.Errorf("kubelet on %s: %w", node, err)
	}
	return v, nil
}

// ParseConfigz reads a kubelet's /configz ({"kubeletconfig": {...}}).
func ParseConfigz(raw []byte) (Config, error) {
	var cfg struct {
		Config *Config `json:"kubeletconfig"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return Config{}, fmt.Errorf("/configz: %w", err)
	}
	if cfg.Config == nil {
		return Config{}, errors.New("/configz has no kubeletconfig")
	}
	return *cfg.Config, nil
}

var (
	featureSample = regexp.MustCompile(`^kubernetes_feature_enabled\{(.*)\} ([0-9.e+-]+)$`)
	featureName   = regexp.MustCompile(`(?:^|,)name="([^"]*)"`)
)

// ParseFeatureGates reads the kubernetes_feature_enabled{name=...} 0|1
// samples of a component's /metrics (the kubelet's; the API server has the
// same): every gate it knows, with its value. A gate the component does not
// know is absent.
func ParseFeatureGates(raw []byte) (map[string]bool, error) {
	gates := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1024*1024), 1024*1024)
	for sc.Scan() {
		if name, enabled, ok := featureGate(sc.Text()); ok {
			gates[name] = enabled
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(gates) == 0 {
		return nil, errors.New("no kubernetes_feature_enabled samples in /metrics")
	}
	return gates, nil
}

// featureGate reads one kubernetes_feature_enabled sample; ok is false for
// any other line.
func featureGate(line string) (name string, enabled, ok bool) {
	m := featureSample.FindStringSubmatch(strings.TrimSpace(line))
	if m == nil {
		return "", false, false
	}
	n := featureName.FindStringSubmatch(m[1])
	v, err := strconv.ParseFloat(m[2], 64)
	if n == nil || err != nil {
		return "", false, false
	}
	return n[1], v == 1, true
}
