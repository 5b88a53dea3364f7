package plugin

import (
	"context"
	"fmt"
	"net"
	"sync"

	"github.com/containerd/nri/pkg/api"

	"github.com/faultline-k8s/faultline/fakes/nri/record"
)

// session is the stub's plugin for one connection. A fresh one per
// connection keeps the state of a dropped connection (its socket, whether
// the runtime synchronized it) from leaking into the next.
type session struct {
	p       *Plugin
	attempt int
	gone    chan struct{} // closed when the connection is lost
	goneOne sync.Once

	mu         sync.Mutex
	conn       net.Conn
	configured bool
	synced     bool // the runtime registered the plugin on this connection
	lost       bool // the connection has closed since
}

// dial is the stub's dialer; it keeps the socket so that a disconnect
// fault can cut it.
func (s *session) dial(path string) (net.Conn, error) {
	c, err := s.p.cfg.Dial(path)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.conn = c
	s.mu.Unlock()
	return &watchedConn{Conn: c, s: s}, nil
}

// watchedConn notices the end of the connection by itself: the stub's own
// notice (OnClose) never comes when the stub hangs in registration.
type watchedConn struct {
	net.Conn
	s *session
}

func (c *watchedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil {
		c.s.markLost()
	}
	return n, err
}

// drop cuts the connection under the stub, as a dying process would.
func (s *session) drop() {
	s.mu.Lock()
	c := s.conn
	s.mu.Unlock()
	if c != nil {
		c.Close()
	}
	s.markLost()
}

// closed is the stub's OnClose callback: the runtime is gone or dropped
// us, or we stopped.
func (s *session) closed() {
	s.markLost()
	s.p.log.Warn("NRI connection closed", "attempt", s.attempt)
}

func (s *session) markLost() {
	s.mu.Lock()
	s.lost = true
	s.mu.Unlock()
	s.goneOne.Do(func() { close(s.gone) })
}

func (s *session) wasConfigured() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.configured
}

func (s *session) wasSynced() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.synced
}

// live: registered and still connected.
func (s *session) live() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.synced && !s.lost
}

// Configure subscribes to every pod and container event.
func (s *session) Configure(_ context.Context, _, runtime, version string) (api.EventMask, error) {
	s.mu.Lock()
	s.configured = true
	s.mu.Unlock()
	var events api.EventMask
	for e := range api.EventPrettyNames {
		if e != api.Event_VALIDATE_CONTAINER_ADJUSTMENT || s.p.cfg.Validator {
			events.Set(e)
		}
	}
	s.p.log.Info("configured by the runtime", "runtime", runtime, "version", version,
		"events", events.PrettyString(), "attempt", s.attempt)
	return events, nil
}

// Synchronize is the last step of registration: from now on the runtime
// sends events, so the plugin is ready.
func (s *session) Synchronize(_ context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	s.mu.Lock()
	s.synced = true
	s.mu.Unlock()
	msg := fmt.Sprintf("registered with the runtime (connection attempt %d): %d pods, %d containers",
		s.attempt, len(pods), len(ctrs))
	s.p.log.Info(msg)
	s.p.cfg.Recorder.Note(record.Synchronize, msg)
	return nil, nil
}

// Shutdown is the runtime saying it is going away.
func (s *session) Shutdown(context.Context) {
	s.p.log.Info("runtime is shutting down")
	s.p.cfg.Recorder.Note(record.Shutdown, "runtime is shutting down")
}

func (s *session) RunPodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	return s.p.handle(ctx, s, "RunPodSandbox", pod, nil)
}

func (s *session) UpdatePodSandbox(ctx context.Context, pod *api.PodSandbox, _, _ *api.LinuxResources) error {
	return s.p.handle(ctx, s, "UpdatePodSandbox", pod, nil)
}

func (s *session) PostUpdatePodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	return s.p.handle(ctx, s, "PostUpdatePodSandbox", pod, nil)
}

func (s *session) StopPodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	return s.p.handle(ctx, s, "StopPodSandbox", pod, nil)
}

func (s *session) RemovePodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	return s.p.handle(ctx, s, "RemovePodSandbox", pod, nil)
}

func (s *session) CreateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	return nil, nil, s.p.handle(ctx, s, "CreateContainer", pod, ctr)
}

func (s *session) PostCreateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	return s.p.handle(ctx, s, "PostCreateContainer", pod, ctr)
}

func (s *session) StartContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	return s.p.handle(ctx, s, "StartContainer", pod, ctr)
}

func (s *session) PostStartContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	return s.p.handle(ctx, s, "PostStartContainer", pod, ctr)
}

func (s *session) UpdateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container, _ *api.LinuxResources) ([]*api.ContainerUpdate, error) {
	return nil, s.p.handle(ctx, s, "UpdateContainer", pod, ctr)
}

func (s *session) PostUpdateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	return s.p.handle(ctx, s, "PostUpdateContainer", pod, ctr)
}

func (s *session) StopContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) ([]*api.ContainerUpdate, error) {
	return nil, s.p.handle(ctx, s, "StopContainer", pod, ctr)
}

func (s *session) RemoveContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	return s.p.handle(ctx, s, "RemoveContainer", pod, ctr)
}

// ValidateContainerAdjustment is only subscribed with Config.Validator. The
// stub turns a returned error into a rejection of the container.
func (s *session) ValidateContainerAdjustment(ctx context.Context, req *api.ValidateContainerAdjustmentRequest) error {
	return s.p.handle(ctx, s, "ValidateContainerAdjustment", req.GetPod(), req.GetContainer())
}
