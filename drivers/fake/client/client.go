// Package client is the plumbing faultline's typed clients of its fakes
// (drivers/fake/nri/client, drivers/fake/dra/client) and the suites share to
// reach the HTTP side of a pod in the fakes image (a fake's records and
// controls, the CRI relay): the API server's pod proxy, which works on any
// cluster whose API server reaches pods, not only kind, and needs neither a
// Service nor a port-forward.
//
// It is the one place that speaks the pod proxy: GET and POST of a path on a
// pod's port, JSON decoding of the answer, and finding the pod of a
// DaemonSet-like deployment on a node.
package client

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
)

// Get reads path from pod's port through the API server's pod proxy.
func Get(ctx context.Context, cs kubernetes.Interface, pod *v1.Pod, port, path string, query map[string]string) ([]byte, error) {
	return cs.CoreV1().Pods(pod.Namespace).ProxyGet("http", pod.Name, port, path, query).DoRaw(ctx)
}

// Post sends an empty POST to path on pod's port through the API server's
// pod proxy, with query as its parameters, and returns the answer. The
// error names the path and the pod, and carries the answer's body (a fake
// says there why it refused).
func Post(ctx context.Context, cs kubernetes.Interface, pod *v1.Pod, port, path string, query map[string]string) ([]byte, error) {
	req := cs.CoreV1().RESTClient().Post().Namespace(pod.Namespace).Resource("pods").
		SubResource("proxy").Name(utilnet.JoinSchemeNamePort("http", pod.Name, port)).Suffix(path)
	for k, v := range query {
		req = req.Param(k, v)
	}
	raw, err := req.DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("POST %s to %s/%s: %w: %s", path, pod.Namespace, pod.Name, err, raw)
	}
	return raw, nil
}

// GetJSON reads path from pod's port (Get) and decodes the JSON answer
// into out.
func GetJSON(ctx context.Context, cs kubernetes.Interface, pod *v1.Pod, port, path string, query map[string]string, out any) error {
	raw, err := Get(ctx, cs, pod, port, path, query)
	if err != nil {
		return fmt.Errorf("GET %s from %s/%s: %w", path, pod.Namespace, pod.Name, err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("GET %s from %s/%s: %w: %.200s", path, pod.Namespace, pod.Name, err, raw)
	}
	return nil
}

// PostJSON posts to path on pod's port (Post) and decodes the JSON answer
// into out.
func PostJSON(ctx context.Context, cs kubernetes.Interface, pod *v1.Pod, port, path string, query map[string]string, out any) error {
	raw, err := Post(ctx, cs, pod, port, path, query)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("POST %s to %s/%s: %w: %.200s", path, pod.Namespace, pod.Name, err, raw)
	}
	return nil
}

// PodOnNode returns the pod of a DaemonSet-like deployment (its pods in
// namespace, selected by labelSelector) that runs on node and is not being
// deleted.
func PodOnNode(ctx context.Context, cs kubernetes.Interface, namespace, labelSelector, node string) (*v1.Pod, error) {
	pods, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labelSelector, FieldSelector: "spec.nodeName=" + node,
	})
	if err != nil {
		return nil, err
	}
	for i := range pods.Items {
		if pods.Items[i].DeletionTimestamp == nil {
			return &pods.Items[i], nil
		}
	}
	return nil, fmt.Errorf("no pod %q in %s on node %s", labelSelector, namespace, node)
}

// ScheduledPods returns the deployment's pods that are placed on a node and
// not being deleted, one per node for a DaemonSet.
func ScheduledPods(ctx context.Context, cs kubernetes.Interface, namespace, labelSelector string) ([]v1.Pod, error) {
	list, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: labelSelector})
	if err != nil {
		return nil, err
	}
	var out []v1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Spec.NodeName != "" {
			out = append(out, p)
		}
	}
	return out, nil
}
