package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/faultline-k8s/faultline/fakes/lib/control"
	"github.com/faultline-k8s/faultline/fakes/runcslow/ociruntime"
)

func tokens(t *testing.T) (token, other control.Token, v *control.Verifier, refused func() []string) {
	t.Helper()
	token, err := control.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	other, _ = control.NewToken()
	var mu sync.Mutex
	var lines []string
	v, err = control.NewVerifier(token.Hash(), func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(format, args...))
	})
	if err != nil {
		t.Fatal(err)
	}
	return token, other, v, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), lines...)
	}
}

// The HTTP side: the probe's /healthz without a token, everything else only
// with this run's.
func TestHTTPWantsTheControlToken(t *testing.T) {
	token, other, v, refused := tokens(t)
	dir := t.TempDir()
	k := &kubeletProcess{name: "kubelet", proc: fakeProc(t, map[int][3]string{1: {"systemd", "S", "0"}, 120: {"kubelet", "S", "1"}})}
	gates := t.TempDir()
	srv := httptest.NewServer(httpHandler(v, &runtimeProcess{socket: filepath.Join(dir, "none.sock"), name: "containerd", proc: "/proc"}, k, filepath.Join(dir, "none"), gates))
	defer srv.Close()
	do := func(method, path, auth string) int {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// No runtime socket here: the probe sees 503, not 401.
	if code := do(http.MethodGet, "/healthz", ""); code != http.StatusServiceUnavailable {
		t.Errorf("GET /healthz without a token: %d, want the health answer (503)", code)
	}
	for _, c := range []struct{ method, path string }{
		{http.MethodPost, "/restart-kubelet"}, {http.MethodPost, "/restart-runtime"},
		{http.MethodGet, "/kubelet"}, {http.MethodGet, "/runtime"}, {http.MethodGet, "/oci-log"},
		{http.MethodPost, "/release?request=cri-1"},
	} {
		for who, auth := range map[string]string{"no token": "", "another run's token": other.Bearer(), "the hash": "Bearer " + token.Hash()} {
			if code := do(c.method, c.path, auth); code != http.StatusUnauthorized {
				t.Errorf("%s %s with %s: %d, want 401", c.method, c.path, who, code)
			}
		}
	}
	if n := len(refused()); n != 18 {
		t.Errorf("%d refusals logged, want 18", n)
	}
	if entries, _ := os.ReadDir(gates); len(entries) != 0 {
		t.Errorf("a release without the token opened %v", entries)
	}
	for _, bad := range []string{"/release?request=../x", "/release?request=", "/release", "/release?request=a&other=b", "/release?request=a&fail=always"} {
		if code := do(http.MethodPost, bad, token.Bearer()); code != http.StatusBadRequest {
			t.Errorf("POST %s: %d, want 400", bad, code)
		}
	}
	if code := do(http.MethodGet, "/release?request=cri-1", token.Bearer()); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /release: %d, want 405", code)
	}
	if code := do(http.MethodPost, "/release?request=cri-1", token.Bearer()); code != http.StatusOK || !ociruntime.Released(gates, "cri-1") {
		t.Errorf("POST /release with the token: %d, released %v", code, ociruntime.Released(gates, "cri-1"))
	}
	if entries, _ := os.ReadDir(gates); len(entries) != 1 {
		t.Errorf("the gate directory holds %v, want the one release", entries)
	}
	if code := do(http.MethodPost, "/release?request=cri-2&fail=once", token.Bearer()); code != http.StatusOK || !ociruntime.TakeFailure(gates, "cri-2") {
		t.Errorf("POST /release?fail=once with the token: %d, or no failure to take", code)
	}
	if code := do(http.MethodGet, "/kubelet", token.Bearer()); code != http.StatusOK {
		t.Errorf("GET /kubelet with the token: %d", code)
	}
	if code := do(http.MethodGet, "/oci-log", token.Bearer()); code != http.StatusOK {
		t.Errorf("GET /oci-log with the token: %d", code)
	}
}

// fakeRuntime answers CRI Version and the health service on a Unix socket,
// and keeps the metadata of each call it gets.
type fakeRuntime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	mu    sync.Mutex
	calls []metadata.MD
	// held: how each RunPodSandbox, which answers only when its context
	// ends, saw that context end, and the deadline it had.
	held chan heldCall
}

type heldCall struct {
	err      error
	deadline time.Time
}

// RunPodSandbox holds the call until its context ends, as a slow creation.
func (f *fakeRuntime) RunPodSandbox(ctx context.Context, _ *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	<-ctx.Done()
	deadline, _ := ctx.Deadline()
	if f.held != nil {
		f.held <- heldCall{err: ctx.Err(), deadline: deadline}
	}
	return nil, ctx.Err()
}

func (f *fakeRuntime) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{RuntimeName: "fake", RuntimeVersion: "1.2.3"}, nil
}

func (f *fakeRuntime) record(ctx context.Context) {
	md, _ := metadata.FromIncomingContext(ctx)
	f.mu.Lock()
	f.calls = append(f.calls, md)
	f.mu.Unlock()
	_ = grpc.SetHeader(ctx, metadata.Pairs("x-runtime-header", "h"))
	_ = grpc.SetTrailer(ctx, metadata.Pairs("x-runtime-trailer", "t"))
}

func (f *fakeRuntime) seen() []metadata.MD {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]metadata.MD(nil), f.calls...)
}

func (f *fakeRuntime) serve(t *testing.T, sock string) *grpc.Server {
	t.Helper()
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			f.record(ctx)
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			f.record(ss.Context())
			return h(srv, ss)
		}))
	runtimeapi.RegisterRuntimeServiceServer(s, f)
	healthpb.RegisterHealthServer(s, health.NewServer())
	go func() { _ = s.Serve(ln) }()
	return s
}

// startRelay serves the relay's CRI port (newCRIProxy) in front of rt,
// which answers on a fresh socket; the relay stops when the test ends. It
// returns the socket, rt's server (the caller stops it: a test may restart
// the runtime) and a dial of the relay's port.
func startRelay(t *testing.T, rt *fakeRuntime, v *control.Verifier) (sock string, runtimeServer *grpc.Server, dial func(...grpc.DialOption) *grpc.ClientConn) {
	t.Helper()
	dir, err := os.MkdirTemp("", "relay") // short: Unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock = filepath.Join(dir, "cri.sock")
	runtimeServer = rt.serve(t, sock)
	proxy, backend, err := newCRIProxy(sock, v)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { backend.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = proxy.Serve(ln) }()
	t.Cleanup(proxy.Stop)
	dial = func(opts ...grpc.DialOption) *grpc.ClientConn {
		t.Helper()
		conn, err := grpc.NewClient(ln.Addr().String(), append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	return sock, runtimeServer, dial
}

// The CRI port passes every call on to the runtime only with this run's
// token, which the runtime never sees; statuses, headers, trailers and
// streams come back as the runtime sent them, and a restarted runtime is
// reached again.
func TestCRIProxy(t *testing.T) {
	token, other, v, refused := tokens(t)
	rt := &fakeRuntime{}
	sock, backendServer, dial := startRelay(t, rt, v)
	defer func() { backendServer.Stop() }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// What a caller in the containerd namespace sends along.
	callCtx := metadata.AppendToOutgoingContext(ctx, "containerd-namespace", "k8s.io")

	for name, conn := range map[string]*grpc.ClientConn{
		"no token":            dial(),
		"another run's token": dial(grpc.WithPerRPCCredentials(other.PerRPCCredentials())),
	} {
		_, err := runtimeapi.NewRuntimeServiceClient(conn).Version(callCtx, &runtimeapi.VersionRequest{})
		if status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s: CRI Version: %v, want Unauthenticated", name, err)
		}
		w, err := healthpb.NewHealthClient(conn).Watch(callCtx, &healthpb.HealthCheckRequest{})
		if err == nil {
			_, err = w.Recv()
		}
		if status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s: a stream: %v, want Unauthenticated", name, err)
		}
	}
	if n := len(rt.seen()); n != 0 {
		t.Errorf("the runtime got %d calls without the token", n)
	}
	if n := len(refused()); n != 4 {
		t.Errorf("%d refusals logged, want 4", n)
	}

	conn := dial(grpc.WithPerRPCCredentials(token.PerRPCCredentials()))
	cri := runtimeapi.NewRuntimeServiceClient(conn)
	var header, trailer metadata.MD
	ver, err := cri.Version(callCtx, &runtimeapi.VersionRequest{}, grpc.Header(&header), grpc.Trailer(&trailer))
	if err != nil || ver.GetRuntimeName() != "fake" || ver.GetRuntimeVersion() != "1.2.3" {
		t.Fatalf("CRI Version with the token: %v %v", ver, err)
	}
	if strings.Join(header.Get("x-runtime-header"), ",") != "h" || len(trailer.Get("x-runtime-trailer")) != 1 {
		t.Errorf("the runtime's header %v and trailer %v must come back", header, trailer)
	}
	seen := rt.seen()
	if len(seen) != 1 || len(seen[0].Get(control.MetadataKey)) != 0 || strings.Join(seen[0].Get("containerd-namespace"), ",") != "k8s.io" {
		t.Errorf("the runtime must see the caller's metadata without the token: %v", seen)
	}
	// CRI-O resets the connection of a request of any other content type
	// (a forced codec would send "application/grpc+proto").
	if len(seen) == 1 && strings.Join(seen[0].Get("content-type"), ",") != "application/grpc" {
		t.Errorf("the runtime must get the content type a CRI client sends, application/grpc: got %v", seen[0].Get("content-type"))
	}
	if _, err := cri.Status(callCtx, &runtimeapi.StatusRequest{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("the runtime's status must come back: %v", err)
	}
	health := healthpb.NewHealthClient(conn)
	if _, err := health.Check(callCtx, &healthpb.HealthCheckRequest{Service: "nope"}); status.Code(err) != codes.NotFound {
		t.Errorf("health of an unknown service: %v, want the runtime's NotFound", err)
	}
	w, err := health.Watch(callCtx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if msg, err := w.Recv(); err != nil || msg.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("a server stream through the proxy: %v %v", msg, err)
	}

	// A runtime restart: the proxy reaches the new one within seconds.
	backendServer.Stop()
	_ = os.Remove(sock)
	if _, err := cri.Version(callCtx, &runtimeapi.VersionRequest{}); status.Code(err) != codes.Unavailable {
		t.Errorf("runtime down: %v, want Unavailable", err)
	}
	backendServer = (&fakeRuntime{}).serve(t, sock)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := cri.Version(callCtx, &runtimeapi.VersionRequest{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restarted runtime is not reached: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A call whose caller gives up at its deadline ends at the runtime as a
// cancellation, every time, and before the runtime's own deadline, which
// falls cancelFirst after the caller's.
func TestCallerDeadlineReachesTheRuntimeAsACancel(t *testing.T) {
	token, _, v, _ := tokens(t)
	rt := &fakeRuntime{held: make(chan heldCall, 1)}
	_, runtimeServer, dial := startRelay(t, rt, v)
	defer runtimeServer.Stop()
	cri := runtimeapi.NewRuntimeServiceClient(dial(grpc.WithPerRPCCredentials(token.PerRPCCredentials())))
	for i := range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		callerDeadline, _ := ctx.Deadline()
		_, err := cri.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{})
		cancel()
		if status.Code(err) != codes.DeadlineExceeded {
			t.Fatalf("call %d: the caller got %v, want DeadlineExceeded", i, err)
		}
		select {
		case got := <-rt.held:
			if !errors.Is(got.err, context.Canceled) {
				t.Errorf("call %d: the runtime's context ended with %v, want a cancellation", i, got.err)
			}
			if min := callerDeadline.Add(cancelFirst - 100*time.Millisecond); got.deadline.Before(min) {
				t.Errorf("call %d: the runtime's deadline %s is not about %s after the caller's %s", i, got.deadline.Format(time.StampMilli), cancelFirst, callerDeadline.Format(time.StampMilli))
			}
		case <-time.After(cancelFirst / 2):
			t.Fatalf("call %d: the runtime's call did not end within %s of the caller's deadline", i, cancelFirst/2)
		}
	}
}

func TestCallContext(t *testing.T) {
	caller, cancelCaller := context.WithCancel(context.Background())
	ctx, cancel := callContext(caller)
	defer cancel()
	if _, ok := ctx.Deadline(); ok {
		t.Error("a caller without a deadline gives the runtime none")
	}
	cancelCaller()
	<-ctx.Done()
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("got %v, want canceled", ctx.Err())
	}
}

// When the relay's own view of the caller's deadline passes before the
// caller's cancel arrives (a port-forward in between delays both), the
// relay's cancel ends the runtime's call with "canceled"; a caller that
// still reads the answer must get DeadlineExceeded, what ended its call,
// never the runtime's answer to the relay.
func TestCallerReadsWhatEndedItsCall(t *testing.T) {
	runtimeSaid := status.Error(codes.Canceled, "context canceled")
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if got := callerAnswer(expired, runtimeSaid); status.Code(got) != codes.DeadlineExceeded {
		t.Errorf("a caller whose deadline passed reads %v, want DeadlineExceeded", got)
	}
	gone, cancelGone := context.WithCancel(context.Background())
	cancelGone()
	if got := callerAnswer(gone, runtimeSaid); status.Code(got) != codes.Canceled {
		t.Errorf("a caller that went away reads %v, want Canceled", got)
	}
	refused := status.Error(codes.FailedPrecondition, "name reserved")
	if got := callerAnswer(context.Background(), refused); !errors.Is(got, refused) {
		t.Errorf("a live caller reads %v, want the runtime's answer", got)
	}
}
