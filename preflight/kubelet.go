package preflight

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

// Endpoints are the raw reads that are no API objects. Behind an interface
// because a fake clientset has no REST client for the node proxy.
type Endpoints interface {
	// KubeletConfigz is the kubelet's /configz on node (node proxy).
	KubeletConfigz(ctx context.Context, node string) ([]byte, error)
	// KubeletMetrics is the kubelet's /metrics on node (node proxy).
	KubeletMetrics(ctx context.Context, node string) ([]byte, error)
	// APIServerMetrics is the API server's own /metrics.
	APIServerMetrics(ctx context.Context) ([]byte, error)
}

// ProxyEndpoints reads through the API server: /api/v1/nodes/<node>/proxy/...
// as vocab/facts ReadKubeletConfig and the DRA suite do.
type ProxyEndpoints struct{ Client kubernetes.Interface }

func (p ProxyEndpoints) KubeletConfigz(ctx context.Context, node string) ([]byte, error) {
	return p.nodeProxy(ctx, node, "configz")
}

func (p ProxyEndpoints) KubeletMetrics(ctx context.Context, node string) ([]byte, error) {
	return p.nodeProxy(ctx, node, "metrics")
}

func (p ProxyEndpoints) APIServerMetrics(ctx context.Context) ([]byte, error) {
	client := p.Client.Discovery().RESTClient()
	if isNilREST(client) {
		return nil, errNoREST
	}
	return client.Get().AbsPath("/metrics").DoRaw(ctx)
}

func (p ProxyEndpoints) nodeProxy(ctx context.Context, node, path string) ([]byte, error) {
	client := p.Client.CoreV1().RESTClient()
	if isNilREST(client) {
		return nil, errNoREST
	}
	return client.Get().AbsPath("/api/v1/nodes", node, "proxy", path).DoRaw(ctx)
}

var errNoREST = errors.New("no REST client (a fake clientset)")

func isNilREST(client rest.Interface) bool {
	rc, ok := client.(*rest.RESTClient)
	return client == nil || (ok && rc == nil)
}

// kubeletConfig is what preflight reads of a kubelet's /configz.
type kubeletConfig struct {
	ContainerRuntimeEndpoint string `json:"containerRuntimeEndpoint"`
	RuntimeRequestTimeout    string `json:"runtimeRequestTimeout"`
	// FeatureGates are only the gates set explicitly; /metrics has all.
	FeatureGates map[string]bool `json:"featureGates"`
}

func parseConfigz(raw []byte) (kubeletConfig, error) {
	var cfg struct {
		KubeletConfig *kubeletConfig `json:"kubeletconfig"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return kubeletConfig{}, fmt.Errorf("/configz: %w", err)
	}
	if cfg.KubeletConfig == nil {
		return kubeletConfig{}, errors.New("/configz has no kubeletconfig")
	}
	return *cfg.KubeletConfig, nil
}

var (
	featureSample = regexp.MustCompile(`^kubernetes_feature_enabled\{(.*)\} ([0-9.e+-]+)$`)
	featureName   = regexp.MustCompile(`(?:^|,)name="([^"]*)"`)
)

// parseFeatureGates reads kubernetes_feature_enabled{name=...} 0|1 samples
// of a component's /metrics: every gate it knows, with its value. A gate the
// component does not know is absent.
func parseFeatureGates(raw []byte) (map[string]bool, error) {
	gates := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1024*1024), 1024*1024)
	for sc.Scan() {
		m := featureSample.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		n := featureName.FindStringSubmatch(m[1])
		v, err := strconv.ParseFloat(m[2], 64)
		if n == nil || err != nil {
			continue
		}
		gates[n[1]] = v == 1
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(gates) == 0 {
		return nil, errors.New("no kubernetes_feature_enabled samples in /metrics")
	}
	return gates, nil
}
