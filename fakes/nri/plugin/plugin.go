// Package plugin is the fake NRI plugin: an external plugin on NRI's stub
// that subscribes to every pod and container event, records each one and
// injects the faults that the pod's annotations ask for (see package
// faults), only in the namespaces its scope.Gate allows. It keeps
// reconnecting to the runtime until stopped, because the runtime drops a
// plugin that times out and forgets it when it restarts, and specs need the
// plugin back for later events.
package plugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"

	"github.com/faultline-k8s/faultline/fakes/lib/scope"
	"github.com/faultline-k8s/faultline/fakes/nri/counter"
	"github.com/faultline-k8s/faultline/fakes/nri/faults"
	"github.com/faultline-k8s/faultline/fakes/nri/record"
)

// CrashExitCode is the exit code of an injected crash, so that specs can
// tell it from other terminations (lastState.terminated.exitCode).
const CrashExitCode = 42

// ErrExited is returned by Run after an injected crash when Config.Exit
// returned instead of ending the process (tests).
var ErrExited = errors.New("plugin exited by an injected crash")

// Config configures a Plugin.
type Config struct {
	// Name and Index register the plugin as "<Index>-<Name>". Name also
	// selects the fault annotations meant for this instance.
	Name, Index string
	// SocketPath is the runtime's NRI socket.
	SocketPath string
	Recorder   *record.Recorder
	Counter    *counter.Counter
	Logger     *slog.Logger
	// Gate says in which namespaces fault annotations act; elsewhere they
	// are ignored with a log line. Required, so that no caller forgets it.
	Gate scope.Gate
	// Exit ends the process for a crash fault: os.Exit in production. A
	// test passes a function that returns; the plugin then acts dead (drops
	// its connection, Run returns ErrExited).
	Exit func(code int)
	// Dial connects to the socket; nil dials a unix socket. Tests wrap it
	// to cut connections as a dying runtime would.
	Dial func(path string) (net.Conn, error)
	// MinBackoff and MaxBackoff bound the wait between reconnects
	// (default 100ms and 5s).
	MinBackoff, MaxBackoff time.Duration
	// Validator also subscribes to ValidateContainerAdjustment. Off by
	// default: a validator takes part in every container creation.
	Validator bool
	// FailurePolicy is sent to the runtime at registration; nil keeps the
	// runtime's default. Runtimes with NRI older than v0.12.4 ignore it.
	FailurePolicy *api.FailurePolicy
}

// Plugin is one plugin instance.
type Plugin struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	current *session // nil between connections
	lastErr error    // why the last connection attempt or connection ended
	running bool
	exited  bool
	stopRun context.CancelFunc

	scopeMu sync.Mutex
	inScope map[string]bool // the gate's answer per pod sandbox ID
}

// New checks cfg and returns a plugin; Run connects it.
func New(cfg Config) (*Plugin, error) {
	if err := api.CheckPluginIndex(cfg.Index); err != nil {
		return nil, err
	}
	if err := api.CheckPluginName(cfg.Name); err != nil {
		return nil, err
	}
	if err := faults.ValidateInstance(cfg.Name); err != nil {
		return nil, err
	}
	if cfg.Recorder == nil || cfg.Counter == nil || cfg.Exit == nil || cfg.Gate == nil {
		return nil, errors.New("plugin: Recorder, Counter, Gate and Exit are required")
	}
	if cfg.SocketPath == "" {
		cfg.SocketPath = api.DefaultSocketPath
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Dial == nil {
		cfg.Dial = func(path string) (net.Conn, error) { return net.Dial("unix", path) }
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = 100 * time.Millisecond
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(5*time.Second, cfg.MinBackoff)
	}
	return &Plugin{
		cfg:     cfg,
		log:     cfg.Logger.With("plugin", cfg.Name, "index", cfg.Index),
		inScope: map[string]bool{},
	}, nil
}

// Run connects to the runtime and reconnects whenever the connection ends,
// until ctx is done (then it returns nil) or an injected crash (ErrExited).
func (p *Plugin) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p.mu.Lock()
	if p.running || p.exited {
		p.mu.Unlock()
		return errors.New("plugin: Run called twice")
	}
	p.running, p.stopRun = true, cancel
	p.mu.Unlock()

	delay := p.cfg.MinBackoff
	for attempt := 1; ; attempt++ {
		synced, err := p.connect(ctx, attempt)
		if p.hasExited() {
			return ErrExited
		}
		if ctx.Err() != nil {
			p.log.Info("stopped")
			return nil
		}
		if synced {
			delay = p.cfg.MinBackoff // it worked; come back fast
		}
		p.log.Warn("NRI connection ended, reconnecting", "error", err, "retryIn", delay.String(), "attempt", attempt)
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			p.log.Info("stopped")
			return nil
		}
		delay = min(2*delay, p.cfg.MaxBackoff)
	}
}

// connect runs one connection until it ends. It reports whether the
// runtime accepted the plugin, and why the connection ended.
func (p *Plugin) connect(ctx context.Context, attempt int) (bool, error) {
	s := &session{p: p, attempt: attempt, gone: make(chan struct{})}
	opts := []stub.Option{
		stub.WithPluginName(p.cfg.Name),
		stub.WithPluginIdx(p.cfg.Index),
		stub.WithSocketPath(p.cfg.SocketPath),
		stub.WithDialer(s.dial),
		stub.WithOnClose(s.closed),
		stub.WithLogger(nriLogger{p.log.With("component", "nri-stub")}),
	}
	if p.cfg.FailurePolicy != nil {
		opts = append(opts, stub.WithFailurePolicy(p.cfg.FailurePolicy))
	}
	st, err := stub.New(s, opts...)
	if err != nil {
		return false, p.ended(s, err)
	}

	p.mu.Lock()
	p.current = s
	p.mu.Unlock()

	done := make(chan error, 1)
	go func() { done <- st.Run(ctx) }()
	select {
	case err = <-done:
	case <-s.gone:
		err = p.await(done, "the connection was lost")
	case <-ctx.Done():
		err = p.await(done, "the plugin is stopping")
	}
	if s.wasConfigured() && !errors.Is(err, errStubStuck) {
		st.Stop() // no-op unless the server stopped before the client noticed
	}
	if err == nil {
		err = errors.New("connection closed")
	}
	synced := s.wasSynced()
	if synced && ctx.Err() == nil {
		p.cfg.Recorder.Note(record.Disconnected, err.Error())
	}
	return synced, p.ended(s, err)
}

// stuckGrace is how long a stub may take to return after its connection
// ended before connect gives up on it.
const stuckGrace = 2 * time.Second

var errStubStuck = errors.New("the NRI stub hung in registration")

// await waits for the stub's Run to return once the connection ended. The
// stub (v0.12.5) waits for the runtime's Configure call without a timeout
// while holding its lock, so a runtime that dies between registering and
// configuring the plugin leaves stub.Run blocked forever. Then the plugin
// abandons that stub (one blocked goroutine) rather than stop reconnecting.
func (p *Plugin) await(done <-chan error, why string) error {
	t := time.NewTimer(stuckGrace)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		p.log.Error("the NRI stub did not return after "+why+"; abandoning it", "waited", stuckGrace.String())
		return errStubStuck
	}
}

// ended forgets s as the current connection and remembers why it ended.
func (p *Plugin) ended(s *session, err error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.current == s {
		p.current = nil
	}
	p.lastErr = err
	return err
}

// Ready returns nil while the runtime has the plugin registered, else why not.
func (p *Plugin) Ready() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.exited:
		return ErrExited
	case p.current != nil && p.current.live():
		return nil
	case p.lastErr != nil:
		return fmt.Errorf("not connected to the NRI runtime at %s: %w", p.cfg.SocketPath, p.lastErr)
	default:
		return fmt.Errorf("not connected to the NRI runtime at %s yet", p.cfg.SocketPath)
	}
}

// exit ends the process for a crash fault. If Exit returns (tests), the
// plugin plays dead: it drops its connection and stops reconnecting.
func (p *Plugin) exit() {
	p.cfg.Exit(CrashExitCode)
	p.mu.Lock()
	p.exited = true
	s, stop := p.current, p.stopRun
	p.mu.Unlock()
	if stop != nil {
		stop()
	}
	if s != nil {
		s.drop()
	}
}

func (p *Plugin) hasExited() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}
