package runtimestate_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/faultline-k8s/faultline/fakes/nri/runtimestate"
)

// fakeCRI holds two pods; it filters by label selector as a runtime does.
type fakeCRI struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	sandboxes  []*runtimeapi.PodSandbox
	containers []*runtimeapi.Container
}

func matches(labels, selector map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func (f *fakeCRI) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{RuntimeName: "fake", RuntimeVersion: "v1.2.3"}, nil
}

func (f *fakeCRI) ListPodSandbox(_ context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	out := &runtimeapi.ListPodSandboxResponse{}
	for _, s := range f.sandboxes {
		if matches(s.Labels, req.GetFilter().GetLabelSelector()) {
			out.Items = append(out.Items, s)
		}
	}
	return out, nil
}

func (f *fakeCRI) ListContainers(_ context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	out := &runtimeapi.ListContainersResponse{}
	for _, c := range f.containers {
		if matches(c.Labels, req.GetFilter().GetLabelSelector()) {
			out.Containers = append(out.Containers, c)
		}
	}
	return out, nil
}

func serve(t *testing.T, f *fakeCRI) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cri") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "cri.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(srv, f)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return sock
}

func TestStateOfOnePod(t *testing.T) {
	uid := map[string]string{runtimestate.PodUIDLabel: "uid-1"}
	other := map[string]string{runtimestate.PodUIDLabel: "uid-2"}
	now := time.Now()
	f := &fakeCRI{
		sandboxes: []*runtimeapi.PodSandbox{
			{Id: "s2", Labels: uid, State: runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: now.UnixNano(),
				Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "ns", Uid: "uid-1", Attempt: 1}},
			{Id: "s1", Labels: uid, State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY, CreatedAt: now.Add(-time.Minute).UnixNano(),
				Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "ns", Uid: "uid-1"}},
			{Id: "x", Labels: other, Metadata: &runtimeapi.PodSandboxMetadata{Uid: "uid-2"}},
		},
		containers: []*runtimeapi.Container{
			{Id: "c1", PodSandboxId: "s2", Labels: uid, State: runtimeapi.ContainerState_CONTAINER_RUNNING,
				Metadata: &runtimeapi.ContainerMetadata{Name: "app", Attempt: 2}, CreatedAt: now.UnixNano()},
			{Id: "y", Labels: other, Metadata: &runtimeapi.ContainerMetadata{Name: "app"}},
		},
	}
	c, err := runtimestate.Dial(serve(t, f), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	srv := httptest.NewServer(runtimestate.Handler(c))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/runtime?podUID=uid-1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s runtimestate.State
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	if s.Runtime != "fake v1.2.3" || s.PodUID != "uid-1" {
		t.Errorf("runtime %q, pod %q", s.Runtime, s.PodUID)
	}
	if len(s.Sandboxes) != 2 || s.Sandboxes[0].ID != "s1" || s.Sandboxes[1].ID != "s2" ||
		s.Sandboxes[1].State != "SANDBOX_READY" || s.Sandboxes[1].Attempt != 1 || s.Sandboxes[1].Name != "p" {
		t.Errorf("sandboxes (oldest first, only uid-1): %+v", s.Sandboxes)
	}
	if len(s.Containers) != 1 || s.Containers[0].ID != "c1" || s.Containers[0].PodSandboxID != "s2" ||
		s.Containers[0].State != "CONTAINER_RUNNING" || s.Containers[0].Name != "app" || s.Containers[0].Attempt != 2 {
		t.Errorf("containers: %+v", s.Containers)
	}

	all, err := c.State(context.Background(), "")
	if err != nil || len(all.Sandboxes) != 3 || len(all.Containers) != 2 {
		t.Errorf("every pod: %+v, %v", all, err)
	}
}

func TestHealthz(t *testing.T) {
	c, err := runtimestate.Dial(serve(t, &fakeCRI{}), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rec := httptest.NewRecorder()
	runtimestate.Handler(c).ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), "fake v1.2.3") {
		t.Errorf("healthz: %d %q", rec.Code, rec.Body)
	}

	dead, err := runtimestate.Dial(filepath.Join(t.TempDir(), "none.sock"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	rec = httptest.NewRecorder()
	runtimestate.Handler(dead).ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("healthz without a runtime: %d %q", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	runtimestate.Handler(dead).ServeHTTP(rec, httptest.NewRequest("GET", "/runtime?podUID=x", nil))
	if rec.Code != http.StatusBadGateway {
		t.Errorf("runtime without a runtime: %d %q", rec.Code, rec.Body)
	}
	for path, want := range map[string]string{
		"/runtime?pod=x":   `unknown query parameter "pod" (allowed: podUID)`,
		"/healthz?probe=1": `unknown query parameter "probe" (this path takes no parameters)`,
	} {
		rec = httptest.NewRecorder()
		runtimestate.Handler(c).ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("GET %s: %d %q, want 400 %q", path, rec.Code, rec.Body, want)
		}
	}
}

func TestDialRejectsTCP(t *testing.T) {
	if _, err := runtimestate.Dial("tcp://127.0.0.1:1", time.Second); err == nil {
		t.Error("a TCP endpoint must be refused")
	}
}
