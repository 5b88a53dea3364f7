package preflight

import (
	"context"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/faultline-k8s/faultline/vocab/kubelet"
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

// ProxyEndpoints reads through the API server: the kubelets' endpoints
// through its node proxy (vocab/kubelet), its own /metrics.
type ProxyEndpoints struct{ Client kubernetes.Interface }

func (p ProxyEndpoints) KubeletConfigz(ctx context.Context, node string) ([]byte, error) {
	return kubelet.Get(ctx, p.Client, node, "configz")
}

func (p ProxyEndpoints) KubeletMetrics(ctx context.Context, node string) ([]byte, error) {
	return kubelet.Get(ctx, p.Client, node, "metrics")
}

func (p ProxyEndpoints) APIServerMetrics(ctx context.Context) ([]byte, error) {
	client := p.Client.Discovery().RESTClient()
	if isNilREST(client) {
		// As the kubelets' endpoints answer a fake clientset.
		return nil, kubelet.ErrNoREST
	}
	return client.Get().AbsPath("/metrics").DoRaw(ctx)
}

func isNilREST(client rest.Interface) bool {
	rc, ok := client.(*rest.RESTClient)
	return client == nil || (ok && rc == nil)
}
