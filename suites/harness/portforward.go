package harness

import (
	"bytes"
	"context"
	"fmt"
	"net/http"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// PortForward forwards a local port on 127.0.0.1 to port of pod through the
// API server, as kubectl port-forward does, so a suite reaches a pod's TCP
// service on any cluster. It returns the local address and a stop function.
func PortForward(ctx context.Context, config *rest.Config, pod *v1.Pod, port int) (string, func(), error) {
	transport, upgrader, err := spdy.RoundTripperFor(config)
	if err != nil {
		return "", nil, err
	}
	url := rest.CopyConfig(config)
	client, err := rest.RESTClientFor(withCoreGroup(url))
	if err != nil {
		return "", nil, err
	}
	req := client.Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("portforward")
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, req.URL())
	stop, ready := make(chan struct{}), make(chan struct{})
	var errOut bytes.Buffer
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)}, stop, ready, nil, &errOut)
	if err != nil {
		return "", nil, err
	}
	failed := make(chan error, 1)
	go func() { failed <- fw.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-failed:
		return "", nil, fmt.Errorf("port-forward to %s/%s:%d: %v %s", pod.Namespace, pod.Name, port, err, errOut.String())
	case <-ctx.Done():
		close(stop)
		return "", nil, ctx.Err()
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) == 0 {
		close(stop)
		return "", nil, fmt.Errorf("port-forward to %s/%s:%d: no local port (%v)", pod.Namespace, pod.Name, port, err)
	}
	return fmt.Sprintf("127.0.0.1:%d", ports[0].Local), func() { close(stop) }, nil
}

func withCoreGroup(config *rest.Config) *rest.Config {
	config.APIPath = "/api"
	config.GroupVersion = &v1.SchemeGroupVersion
	config.NegotiatedSerializer = clientsetScheme()
	return config
}

func clientsetScheme() runtime.NegotiatedSerializer { return scheme.Codecs.WithoutConversion() }
