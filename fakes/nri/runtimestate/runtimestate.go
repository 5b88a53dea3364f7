// Package runtimestate answers "which sandboxes and containers does the
// runtime hold for this pod?" from the runtime's own CRI API, so that specs
// can prove a failed request left nothing behind and a deleted pod is gone
// completely. It runs next to the fake NRI plugin (fake-nri-plugin
// runtime-state), listens on the pod's loopback only (the runtime's state
// is for the specs, not the pod network) and is read through a
// port-forward, like the plugin's event record, so no spec needs a shell on
// the node.
//
// It only lists; it never changes the runtime's state.
package runtimestate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/faultline-k8s/faultline/fakes/lib/httpjson"
	"github.com/faultline-k8s/faultline/fakes/lib/query"
)

// PodUIDLabel is the label the kubelet puts on every sandbox and container
// of a pod.
const PodUIDLabel = "io.kubernetes.pod.uid"

// Sandbox is one pod sandbox as the runtime lists it.
type Sandbox struct {
	ID        string    `json:"id"`
	State     string    `json:"state"` // SANDBOX_READY, SANDBOX_NOTREADY
	Name      string    `json:"name"`
	Namespace string    `json:"namespace"`
	UID       string    `json:"uid"`
	Attempt   uint32    `json:"attempt"`
	CreatedAt time.Time `json:"createdAt"`
}

// Container is one container as the runtime lists it.
type Container struct {
	ID           string    `json:"id"`
	PodSandboxID string    `json:"podSandboxID"`
	Name         string    `json:"name"`
	Attempt      uint32    `json:"attempt"`
	State        string    `json:"state"` // CONTAINER_CREATED, _RUNNING, _EXITED, _UNKNOWN
	CreatedAt    time.Time `json:"createdAt"`
}

// State is what the runtime holds for a pod (or for every pod).
type State struct {
	// Runtime is the runtime's name and version, e.g. "containerd v2.4.2".
	Runtime    string      `json:"runtime"`
	PodUID     string      `json:"podUID,omitempty"`
	Sandboxes  []Sandbox   `json:"sandboxes"`
	Containers []Container `json:"containers"`
}

// Client lists the runtime's sandboxes and containers over CRI.
type Client struct {
	conn    *grpc.ClientConn
	rt      runtimeapi.RuntimeServiceClient
	timeout time.Duration
}

// Dial prepares a client for endpoint ("unix:///run/containerd/containerd.sock"
// or a plain socket path). It does not connect yet: gRPC connects on the
// first call and reconnects after a runtime restart.
func Dial(endpoint string, timeout time.Duration) (*Client, error) {
	if endpoint == "" {
		return nil, errors.New("runtimestate: no CRI endpoint")
	}
	if !strings.Contains(endpoint, "://") {
		endpoint = "unix://" + endpoint
	}
	if !strings.HasPrefix(endpoint, "unix://") {
		return nil, fmt.Errorf("runtimestate: CRI endpoint %q: only unix sockets are supported", endpoint)
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("runtimestate: %s: %w", endpoint, err)
	}
	return &Client{conn: conn, rt: runtimeapi.NewRuntimeServiceClient(conn), timeout: timeout}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Version returns the runtime's name and version; it doubles as the
// readiness check.
func (c *Client) Version(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	v, err := c.rt.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		return "", fmt.Errorf("CRI Version: %w", err)
	}
	return v.GetRuntimeName() + " " + v.GetRuntimeVersion(), nil
}

// State lists the sandboxes and containers of the pod with podUID, of
// every pod if podUID is "", in creation order.
func (c *Client) State(ctx context.Context, podUID string) (*State, error) {
	runtime, err := c.Version(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var selector map[string]string
	if podUID != "" {
		selector = map[string]string{PodUIDLabel: podUID}
	}
	pods, err := c.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{
		Filter: &runtimeapi.PodSandboxFilter{LabelSelector: selector},
	})
	if err != nil {
		return nil, fmt.Errorf("CRI ListPodSandbox: %w", err)
	}
	ctrs, err := c.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{
		Filter: &runtimeapi.ContainerFilter{LabelSelector: selector},
	})
	if err != nil {
		return nil, fmt.Errorf("CRI ListContainers: %w", err)
	}
	s := &State{Runtime: runtime, PodUID: podUID, Sandboxes: []Sandbox{}, Containers: []Container{}}
	for _, p := range pods.GetItems() {
		m := p.GetMetadata()
		s.Sandboxes = append(s.Sandboxes, Sandbox{
			ID: p.GetId(), State: p.GetState().String(),
			Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUid(), Attempt: m.GetAttempt(),
			CreatedAt: time.Unix(0, p.GetCreatedAt()).UTC(),
		})
	}
	for _, ct := range ctrs.GetContainers() {
		s.Containers = append(s.Containers, Container{
			ID: ct.GetId(), PodSandboxID: ct.GetPodSandboxId(),
			Name: ct.GetMetadata().GetName(), Attempt: ct.GetMetadata().GetAttempt(),
			State: ct.GetState().String(), CreatedAt: time.Unix(0, ct.GetCreatedAt()).UTC(),
		})
	}
	sort.SliceStable(s.Sandboxes, func(i, j int) bool { return s.Sandboxes[i].CreatedAt.Before(s.Sandboxes[j].CreatedAt) })
	sort.SliceStable(s.Containers, func(i, j int) bool { return s.Containers[i].CreatedAt.Before(s.Containers[j].CreatedAt) })
	return s, nil
}

// Handler serves
//
//	GET /runtime[?podUID=<uid>]  the State as JSON
//	GET /healthz                 200 while the runtime answers CRI Version, else 503
//
// Any other query parameter is a 400 naming it.
func Handler(c *Client) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /runtime", func(w http.ResponseWriter, req *http.Request) {
		q, ok := query.Request(w, req, "podUID")
		if !ok {
			return
		}
		s, err := c.State(req.Context(), q.Get("podUID"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		httpjson.Write(w, s)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, req *http.Request) {
		if _, ok := query.Request(w, req); !ok {
			return
		}
		v, err := c.Version(req.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = fmt.Fprintf(w, "ok %s\n", v)
	})
	return mux
}
