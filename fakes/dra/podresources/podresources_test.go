package podresources

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/grpc"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/faultline-k8s/faultline/fakes/lib/scope"
)

// kubelet plays the kubelet's PodResources server for one pod.
type kubelet struct {
	podresourcesv1.UnimplementedPodResourcesListerServer
	pod *podresourcesv1.PodResources
}

func (k *kubelet) Get(_ context.Context, req *podresourcesv1.GetPodResourcesRequest) (*podresourcesv1.GetPodResourcesResponse, error) {
	if req.PodNamespace != k.pod.Namespace || req.PodName != k.pod.Name {
		// The kubelet's own wording (pkg/kubelet/apis/podresources/server_v1.go).
		return nil, fmt.Errorf("pod %s in namespace %s not found", req.PodName, req.PodNamespace)
	}
	return &podresourcesv1.GetPodResourcesResponse{PodResources: k.pod}, nil
}

func serve(t *testing.T, pod *podresourcesv1.PodResources) string {
	t.Helper()
	// Not t.TempDir(): a Unix socket path must fit into 108 bytes.
	dir, err := os.MkdirTemp("", "podres")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	socket := filepath.Join(dir, "kubelet.sock")
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(srv, &kubelet{pod: pod})
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return socket
}

func cdi(ids ...string) []*podresourcesv1.CDIDevice {
	var out []*podresourcesv1.CDIDevice
	for _, id := range ids {
		out = append(out, &podresourcesv1.CDIDevice{Name: id})
	}
	return out
}

// The kubelet's lists reach the caller as they are: what a v1.36.3 kubelet
// answers after a partly failed prepare (the answered claim's device held
// twice, its second entry listing the CDI ID twice, because the kubelet
// appends to one list per driver) comes out with every copy.
func TestHandlerPassesTheKubeletsListsOn(t *testing.T) {
	const id = "dra.faultline.k8s.io/device=uid-a-dev-0"
	socket := serve(t, &podresourcesv1.PodResources{Namespace: "ns", Name: "pod", Containers: []*podresourcesv1.ContainerResources{{
		Name: "c",
		DynamicResources: []*podresourcesv1.DynamicResource{
			{ClaimNamespace: "ns", ClaimName: "answered", ClaimResources: []*podresourcesv1.ClaimResource{
				{DriverName: "dra.faultline.k8s.io", PoolName: "node", DeviceName: "dev-0", CdiDevices: cdi(id)},
				{DriverName: "dra.faultline.k8s.io", PoolName: "node", DeviceName: "dev-0", CdiDevices: cdi(id, id)},
			}},
			{ClaimNamespace: "ns", ClaimName: "plain"},
		},
	}}})
	srv := httptest.NewServer(Handler(socket, scope.Static{"ns"}))
	defer srv.Close()

	resp, err := http.Get(srv.URL + "?namespace=ns&pod=pod")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got Pod
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %v", resp.StatusCode, err)
	}
	dev := Resource{Driver: "dra.faultline.k8s.io", Pool: "node", Device: "dev-0"}
	once, twice := dev, dev
	once.CDIDevices, twice.CDIDevices = []string{id}, []string{id, id}
	want := Pod{Namespace: "ns", Name: "pod", Containers: []Container{{Name: "c", DynamicResources: []Claim{
		{Namespace: "ns", Name: "answered", Resources: []Resource{once, twice}},
		{Namespace: "ns", Name: "plain", Resources: []Resource{}},
	}}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func TestHandlerRefusals(t *testing.T) {
	socket := serve(t, &podresourcesv1.PodResources{Namespace: "ns", Name: "pod"})
	for name, tc := range map[string]struct {
		socket, method, query string
		status                int
		body                  string
	}{
		"other namespace":   {socket, http.MethodGet, "namespace=kube-system&pod=x", http.StatusForbidden, "only pods in faultline's namespaces"},
		"unknown pod":       {socket, http.MethodGet, "namespace=ns&pod=other", http.StatusBadGateway, "pod other in namespace ns not found"},
		"no pod":            {socket, http.MethodGet, "namespace=ns", http.StatusBadRequest, "namespace and pod are required"},
		"unknown parameter": {socket, http.MethodGet, "namespace=ns&pod=pod&container=c", http.StatusBadRequest, `unknown query parameter "container"`},
		"POST":              {socket, http.MethodPost, "namespace=ns&pod=pod", http.StatusMethodNotAllowed, "only GET"},
		"no socket":         {"", http.MethodGet, "namespace=ns&pod=pod", http.StatusNotImplemented, "--pod-resources-socket"},
		"kubelet gone":      {socket + ".gone", http.MethodGet, "namespace=ns&pod=pod", http.StatusBadGateway, "kubelet PodResources Get ns/pod"},
	} {
		t.Run(name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			Handler(tc.socket, scope.Static{"ns"}).ServeHTTP(rec, httptest.NewRequest(tc.method, "/podresources?"+tc.query, nil))
			if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.body) {
				t.Errorf("%d %q, want %d with %q", rec.Code, rec.Body.String(), tc.status, tc.body)
			}
		})
	}
}
