package plugin_test

// The harness hosts NRI's runtime side (pkg/adaptation) in the test, on a
// socket in t.TempDir(), and runs real plugin instances against it over
// that socket, exactly as the DaemonSet's containers connect to the
// runtime.

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/nri/pkg/adaptation"
	"github.com/containerd/nri/pkg/api"

	"github.com/faultline-k8s/faultline/fakes/lib/scope"
	"github.com/faultline-k8s/faultline/fakes/nri/counter"
	"github.com/faultline-k8s/faultline/fakes/nri/faults"
	"github.com/faultline-k8s/faultline/fakes/nri/plugin"
	"github.com/faultline-k8s/faultline/fakes/nri/record"
)

const (
	// requestTimeout replaces the runtime's 2s default to keep tests fast.
	requestTimeout = 500 * time.Millisecond
	// waitTimeout bounds every wait for state; generous for -race on a busy machine.
	waitTimeout = 15 * time.Second
)

func TestMain(m *testing.M) {
	// The request timeout is a global of the adaptation package (that is
	// how containerd sets it too), so the tests in this package must not
	// run in parallel with different timeouts.
	adaptation.SetPluginRequestTimeout(requestTimeout)
	os.Exit(m.Run())
}

// eventually polls cond until it holds or waitTimeout passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("timed out after %s waiting for %s", waitTimeout, what)
		}
	}
}

// invocation is one plugin call as the runtime reports it.
type invocation struct {
	plugin, op string
	err        error
}

// runtimeMetrics is the adaptation's Metrics hook: it tells the test which
// plugins the runtime called, in order, and how many it has registered.
type runtimeMetrics struct {
	mu      sync.Mutex
	calls   []invocation
	plugins int
}

func (m *runtimeMetrics) RecordPluginInvocation(name, op string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, invocation{name, op, err})
}

func (m *runtimeMetrics) RecordPluginLatency(string, string, time.Duration) {}

func (m *runtimeMetrics) RecordPluginAdjustments(string, string, *adaptation.ContainerAdjustment, int, int) {
}

func (m *runtimeMetrics) UpdatePluginCount(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.plugins = n
}

// called returns the plugins the runtime called for op, in call order.
func (m *runtimeMetrics) called(op string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, c := range m.calls {
		if c.op == op {
			out = append(out, c.plugin)
		}
	}
	return out
}

// callErr returns the error of the last call of plugin for op.
func (m *runtimeMetrics) callErr(plugin, op string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var err error
	for _, c := range m.calls {
		if c.plugin == plugin && c.op == op {
			err = c.err
		}
	}
	return err
}

func (m *runtimeMetrics) registered() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.plugins
}

type testRuntime struct {
	*adaptation.Adaptation
	metrics *runtimeMetrics
	socket  string
}

func socketPath(t *testing.T) string {
	return filepath.Join(t.TempDir(), "nri.sock")
}

// startRuntime starts NRI's runtime side on socket.
func startRuntime(t *testing.T, socket string, opts ...adaptation.Option) *testRuntime {
	t.Helper()
	m := &runtimeMetrics{}
	dir := filepath.Dir(socket)
	syncFn := func(ctx context.Context, cb adaptation.SyncCB) error {
		_, err := cb(ctx, nil, nil)
		return err
	}
	updateFn := func(context.Context, []*adaptation.ContainerUpdate) ([]*adaptation.ContainerUpdate, error) {
		return nil, nil
	}
	opts = append([]adaptation.Option{
		adaptation.WithSocketPath(socket),
		adaptation.WithPluginPath(filepath.Join(dir, "no-plugins")),
		adaptation.WithPluginConfigPath(filepath.Join(dir, "no-plugin-config")),
		adaptation.WithMetrics(m),
	}, opts...)
	a, err := adaptation.New("faultline-test-runtime", "v0.0.1", syncFn, updateFn, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Stop)
	return &testRuntime{Adaptation: a, metrics: m, socket: socket}
}

// waitRegistered waits until the runtime has n plugins registered.
func (rt *testRuntime) waitRegistered(t *testing.T, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d registered plugins", n), func() bool { return rt.metrics.registered() == n })
}

// send relays one NRI event to the plugins, as the runtime does for the
// corresponding CRI request.
func (rt *testRuntime) send(event string, pod *api.PodSandbox, ctr *api.Container) error {
	ctx := context.Background()
	var err error
	switch event {
	case "RunPodSandbox":
		err = rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod})
	case "UpdatePodSandbox":
		_, err = rt.UpdatePodSandbox(ctx, &api.UpdatePodSandboxRequest{Pod: pod,
			OverheadLinuxResources: &api.LinuxResources{}, LinuxResources: &api.LinuxResources{}})
	case "PostUpdatePodSandbox":
		err = rt.PostUpdatePodSandbox(ctx, &api.PostUpdatePodSandboxRequest{Pod: pod})
	case "StopPodSandbox":
		err = rt.StopPodSandbox(ctx, &api.StopPodSandboxRequest{Pod: pod})
	case "RemovePodSandbox":
		err = rt.RemovePodSandbox(ctx, &api.RemovePodSandboxRequest{Pod: pod})
	case "CreateContainer":
		_, err = rt.CreateContainer(ctx, &api.CreateContainerRequest{Pod: pod, Container: ctr})
	case "PostCreateContainer":
		err = rt.PostCreateContainer(ctx, &api.PostCreateContainerRequest{Pod: pod, Container: ctr})
	case "StartContainer":
		err = rt.StartContainer(ctx, &api.StartContainerRequest{Pod: pod, Container: ctr})
	case "PostStartContainer":
		err = rt.PostStartContainer(ctx, &api.PostStartContainerRequest{Pod: pod, Container: ctr})
	case "UpdateContainer":
		_, err = rt.UpdateContainer(ctx, &api.UpdateContainerRequest{Pod: pod, Container: ctr,
			LinuxResources: &api.LinuxResources{}})
	case "PostUpdateContainer":
		err = rt.PostUpdateContainer(ctx, &api.PostUpdateContainerRequest{Pod: pod, Container: ctr})
	case "StopContainer":
		_, err = rt.StopContainer(ctx, &api.StopContainerRequest{Pod: pod, Container: ctr})
	case "RemoveContainer":
		err = rt.RemoveContainer(ctx, &api.RemoveContainerRequest{Pod: pod, Container: ctr})
	default:
		panic("no such event " + event)
	}
	return err
}

// syncBuffer collects a plugin's log for failed tests.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// connTracker is a plugin dialer that can cut every connection it made,
// as the death of the runtime process would.
type connTracker struct {
	mu    sync.Mutex
	conns []net.Conn
}

func (c *connTracker) dial(path string) (net.Conn, error) {
	conn, err := net.Dial("unix", path)
	if err == nil {
		c.mu.Lock()
		c.conns = append(c.conns, conn)
		c.mu.Unlock()
	}
	return conn, err
}

func (c *connTracker) cutAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.conns {
		conn.Close()
	}
	c.conns = nil
}

// instance is one running plugin instance, like one container of the
// DaemonSet pod.
type instance struct {
	*plugin.Plugin
	name, index string
	rec         *record.Recorder
	logs        *syncBuffer
	conns       *connTracker
	exits       chan int // codes passed to Exit by a crash fault
	stop        context.CancelFunc
	done        chan struct{}
	runErr      error
}

// fullName is how the runtime names the plugin.
func (in *instance) fullName() string { return in.index + "-" + in.name }

// key is the fault annotation key for event of this instance.
func (in *instance) key(event string) string { return faults.Key(in.name, event) }

type instanceOptions struct {
	stateDir string // "" keeps state in memory
	config   func(*plugin.Config)
}

func startInstance(t *testing.T, socket, name, index string, opts ...instanceOptions) *instance {
	t.Helper()
	var o instanceOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rec, err := record.New(record.Options{Plugin: name, Index: index, Dir: o.stateDir, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	cnt, err := counter.New(o.stateDir)
	if err != nil {
		t.Fatal(err)
	}
	in := &instance{
		name: name, index: index, rec: rec, logs: logs,
		conns: &connTracker{},
		exits: make(chan int, 1),
		done:  make(chan struct{}),
	}
	cfg := plugin.Config{
		Name: name, Index: index, SocketPath: socket,
		Recorder: rec, Counter: cnt, Logger: log,
		// newPod's namespace: faults act unless a test says otherwise.
		Gate:       scope.Static{"ns"},
		Exit:       func(code int) { in.exits <- code },
		Dial:       in.conns.dial,
		MinBackoff: 20 * time.Millisecond,
		MaxBackoff: 200 * time.Millisecond,
	}
	if o.config != nil {
		o.config(&cfg)
	}
	in.Plugin, err = plugin.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	in.stop = cancel
	go func() {
		defer close(in.done)
		in.runErr = in.Run(ctx)
	}()
	t.Cleanup(func() {
		in.stop()
		select {
		case <-in.done:
		case <-time.After(waitTimeout):
			t.Errorf("plugin %s did not stop", in.fullName())
		}
		rec.Close()
		if t.Failed() {
			t.Logf("log of plugin %s:\n%s", in.fullName(), logs.String())
		}
	})
	return in
}

// waitReady waits until the instance says the runtime has registered it.
func (in *instance) waitReady(t *testing.T) {
	t.Helper()
	eventually(t, in.fullName()+" ready", func() bool { return in.Ready() == nil })
}

// wait waits for Run to return and returns its error.
func (in *instance) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-in.done:
		return in.runErr
	case <-time.After(waitTimeout):
		t.Fatalf("plugin %s did not stop", in.fullName())
		return nil
	}
}

// notes counts the instance's own records of kind (e.g. record.Synchronize).
func (in *instance) notes(kind string) int {
	n := 0
	for _, e := range in.rec.List("") {
		if e.Event == kind {
			n++
		}
	}
	return n
}

// waitReconnected waits until the instance registered again after it had
// synced times, and the runtime counts n plugins.
func (in *instance) waitReconnected(t *testing.T, rt *testRuntime, synced, n int) {
	t.Helper()
	eventually(t, in.fullName()+" to reconnect", func() bool {
		return in.notes(record.Synchronize) > synced && in.Ready() == nil && rt.metrics.registered() == n
	})
}

// results summarizes an instance's records of one pod as "Event:result".
func (in *instance) results(podUID string) []string {
	var out []string
	for _, e := range in.rec.List(podUID) {
		out = append(out, e.Event+":"+string(e.Result))
	}
	return out
}

// last returns the instance's last record of event for a pod.
func (in *instance) last(t *testing.T, podUID, event string) record.Event {
	t.Helper()
	var found *record.Event
	for _, e := range in.rec.List(podUID) {
		if e.Event == event {
			found = &e
		}
	}
	if found == nil {
		t.Fatalf("%s has no %s record for pod %s; it has %v", in.fullName(), event, podUID, in.results(podUID))
	}
	return *found
}

var containerSeq struct {
	sync.Mutex
	n int
}

func newPod(uid string, annotations map[string]string) *api.PodSandbox {
	return &api.PodSandbox{
		Id: "sandbox-" + uid, Uid: uid, Name: "pod-" + uid, Namespace: "ns",
		Annotations: annotations,
	}
}

// newContainer returns a new attempt at container name; each attempt gets
// a new ID, as with a real runtime.
func newContainer(pod *api.PodSandbox, name string) *api.Container {
	containerSeq.Lock()
	containerSeq.n++
	n := containerSeq.n
	containerSeq.Unlock()
	return &api.Container{
		Id: fmt.Sprintf("ctr-%s-%d", name, n), PodSandboxId: pod.Id, Name: name,
		State: api.ContainerState_CONTAINER_CREATED,
		Labels: map[string]string{
			"io.kubernetes.pod.namespace": pod.Namespace,
			"io.kubernetes.pod.name":      pod.Name,
			"io.kubernetes.pod.uid":       pod.Uid,
		},
	}
}

func equal(a, b []string) bool { return strings.Join(a, "\n") == strings.Join(b, "\n") }
