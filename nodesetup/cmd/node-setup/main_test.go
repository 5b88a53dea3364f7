package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/faultline-k8s/faultline/nodesetup"
	"github.com/faultline-k8s/faultline/vocab/runtimes"
)

// fakeRuntime answers CRI Version and Status on a node's socket; a restart
// makes it list what its configuration has.
type fakeRuntime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	mu       sync.Mutex
	handlers []string
	// sandboxes run on the faultline-slow handler.
	sandboxes []string
}

func (f *fakeRuntime) ListPodSandbox(context.Context, *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := &runtimeapi.ListPodSandboxResponse{}
	for _, name := range f.sandboxes {
		resp.Items = append(resp.Items, &runtimeapi.PodSandbox{RuntimeHandler: nodesetup.HandlerName,
			Metadata: &runtimeapi.PodSandboxMetadata{Namespace: "ns", Name: name}})
	}
	return resp, nil
}

func (f *fakeRuntime) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{RuntimeName: "fake"}, nil
}

func (f *fakeRuntime) Status(context.Context, *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := &runtimeapi.StatusResponse{}
	for _, h := range f.handlers {
		resp.RuntimeHandlers = append(resp.RuntimeHandlers, &runtimeapi.RuntimeHandler{Name: h})
	}
	return resp, nil
}

func (f *fakeRuntime) set(handlers ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handlers = handlers
}

// fakeNode is a containerd node's root with the runtime answering on its
// socket, and restarts counted.
type fakeNode struct {
	root     string
	runtime  *fakeRuntime
	restarts int
}

func newFakeNode(t *testing.T) *fakeNode {
	t.Helper()
	// Short: a unix socket's path has a length limit.
	root, err := os.MkdirTemp("", "ns")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	files := map[string]string{
		nodesetup.ContainerdConfigPath: "version = 3\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]\n  runtime_type = 'io.containerd.runc.v2'\n",
		"/usr/sbin/runc":               "#!/bin/true\n",
		"/bin/runc-slow":               "runc-slow",
	}
	for p, c := range files {
		local := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(local, []byte(c), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	socket := filepath.Join(root, runtimes.MustLookup("containerd").SocketPath())
	if err := os.MkdirAll(filepath.Dir(socket), 0o755); err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	n := &fakeNode{root: root, runtime: &fakeRuntime{handlers: []string{"runc"}}}
	srv := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(srv, n.runtime)
	go srv.Serve(lis) //nolint:errcheck // ends with the test
	t.Cleanup(srv.Stop)

	old := restart
	restart = func(ctx context.Context, root string, rt runtimes.Runtime, cri criClient, timeout time.Duration, log io.Writer) error {
		n.restarts++
		configured, _, err := nodesetup.Configured(root, rt)
		if err != nil {
			return err
		}
		if configured {
			n.runtime.set("runc", nodesetup.HandlerName)
		} else {
			n.runtime.set("runc")
		}
		return nil
	}
	t.Cleanup(func() { restart = old })
	return n
}

func (n *fakeNode) run(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	args = append(args, "--root", n.root, "--runc-slow", filepath.Join(n.root, "bin/runc-slow"),
		"--ready-file", filepath.Join(n.root, "ready"), "--exit", "--timeout", "5s")
	code := run(context.Background(), args, &out, &out)
	return code, out.String()
}

func report(t *testing.T, out string) nodesetup.Report {
	t.Helper()
	r, ok := nodesetup.ParseReport([]byte(out))
	if !ok {
		t.Fatalf("no report in the output:\n%s", out)
	}
	return r
}

func TestInstallRestartsOnceAndRemoveRestores(t *testing.T) {
	n := newFakeNode(t)
	config, _ := os.ReadFile(filepath.Join(n.root, nodesetup.ContainerdConfigPath))

	code, out := n.run(t, "install")
	if code != 0 {
		t.Fatalf("install: exit %d\n%s", code, out)
	}
	r := report(t, out)
	if !r.Restarted || r.Handler != nodesetup.HandlerListed || r.Result.Runtime != "containerd" || n.restarts != 1 {
		t.Errorf("install: %+v, %d restarts\n%s", r, n.restarts, out)
	}
	if code := run(context.Background(), []string{"ready", "--ready-file", filepath.Join(n.root, "ready")}, io.Discard, io.Discard); code != 0 {
		t.Error("ready after install must exit 0")
	}

	// Again: nothing changes, no restart.
	code, out = n.run(t, "install", "--runtime", "containerd")
	if r := report(t, out); code != 0 || r.Restarted || r.Result.Changed() || n.restarts != 1 {
		t.Errorf("second install: exit %d, %+v\n%s", code, r, out)
	}

	// A pod still on the handler: remove refuses, changing nothing.
	n.runtime.mu.Lock()
	n.runtime.sandboxes = []string{"slow"}
	n.runtime.mu.Unlock()
	if code, out := n.run(t, "remove", "--timeout=1s"); code == 0 || !strings.Contains(out, "ns/slow") {
		t.Errorf("remove with a pod on the handler: exit %d\n%s", code, out)
	}
	n.runtime.mu.Lock()
	n.runtime.sandboxes = nil
	n.runtime.mu.Unlock()
	code, out = n.run(t, "remove")
	r = report(t, out)
	if code != 0 || !r.Restarted || r.Handler != nodesetup.HandlerNotListed || n.restarts != 2 {
		t.Errorf("remove: exit %d, %+v, %d restarts\n%s", code, r, n.restarts, out)
	}
	if now, _ := os.ReadFile(filepath.Join(n.root, nodesetup.ContainerdConfigPath)); !bytes.Equal(now, config) {
		t.Errorf("config.toml after remove:\n%s", now)
	}

	code, out = n.run(t, "remove")
	if r := report(t, out); code != 0 || r.Restarted || !strings.Contains(out, nodesetup.NothingToRemove) {
		t.Errorf("second remove: exit %d, %+v\n%s", code, r, out)
	}
}

// A run interrupted after writing the config and before the restart: the
// next run changes nothing, sees the runtime lacks the handler, and
// restarts it.
func TestRestartWhenTheRuntimeDisagreesWithItsConfig(t *testing.T) {
	n := newFakeNode(t)
	if _, err := nodesetup.Install(n.root, runtimes.MustLookup("containerd"), nodesetup.Options{RuncSlow: filepath.Join(n.root, "bin/runc-slow")}); err != nil {
		t.Fatal(err)
	}
	code, out := n.run(t, "install")
	r := report(t, out)
	if code != 0 || r.Result.Changed() || !r.Restarted || !strings.Contains(r.RestartReason, "does not list it") || r.Handler != nodesetup.HandlerListed {
		t.Errorf("exit %d, %+v\n%s", code, r, out)
	}
}

func TestHandlerMissingAfterRestartFails(t *testing.T) {
	n := newFakeNode(t)
	restart = func(context.Context, string, runtimes.Runtime, criClient, time.Duration, io.Writer) error { return nil }
	code, out := n.run(t, "install")
	if code != 1 || !strings.Contains(out, "does not list the faultline-slow handler") || !strings.Contains(out, "journalctl -u containerd.service") {
		t.Errorf("exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(n.root, "ready")); err == nil {
		t.Error("a failed install must not be ready")
	}
}

func TestBadInput(t *testing.T) {
	n := newFakeNode(t)
	for _, args := range [][]string{
		nil,
		{"--runtime", "containerd"},
		{"upgrade"},
		{"install", "--runtime", "docker", "--root", n.root},
		{"install", "--root", filepath.Join(n.root, "missing")},
		{"install", "--root", n.root, "extra"},
		{"install", "--root", n.root, "--timeout", "0s"},
	} {
		var out bytes.Buffer
		if code := run(context.Background(), args, &out, &out); code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", args, code, out.String())
		}
	}
	if code := run(context.Background(), []string{"ready", "--ready-file", filepath.Join(n.root, "nope")}, io.Discard, io.Discard); code != 1 {
		t.Error("ready without the file must exit 1")
	}
}

func TestAutoRuntime(t *testing.T) {
	n := newFakeNode(t)
	rt, err := nodeRuntime(n.root, "auto")
	if err != nil || rt.Name != "containerd" {
		t.Errorf("auto: %v, %v", rt.Name, err)
	}
	if _, err := nodeRuntime(t.TempDir(), "auto"); err == nil || !strings.Contains(err.Error(), "pass --runtime") {
		t.Errorf("no socket: %v", err)
	}
}
