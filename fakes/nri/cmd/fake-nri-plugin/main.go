// Command fake-nri-plugin runs one instance of faultline's fake NRI plugin:
// it connects to the runtime's NRI socket, records every pod and container
// event, injects the faults that pod annotations ask for, and serves the
// record over HTTP. Several instances (different --name and --index) run
// side by side to test how the runtime chains plugins.
//
// "fake-nri-plugin runtime-state" instead serves what the runtime holds
// for a pod (its sandboxes and containers, listed over CRI), see package
// runtimestate.
//
// Every HTTP server listens on loopback only (127.0.0.1 by default; any
// other --http-address is refused): the specs reach it through port
// forwarding, and nothing on the pod network may read the records or the
// runtime's state. A port-forward is open to anyone with the edit role in
// the namespace, so every request but GET /healthz (the readiness probe's)
// must also carry the run's control token (--control-token-sha256, package
// control). Faults act only in the namespaces --allow-faults-in allows.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/nri/pkg/api"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/faultline-k8s/faultline/fakes/lib/control"
	"github.com/faultline-k8s/faultline/fakes/lib/loopback"
	"github.com/faultline-k8s/faultline/fakes/lib/scope"
	"github.com/faultline-k8s/faultline/fakes/nri/counter"
	"github.com/faultline-k8s/faultline/fakes/nri/plugin"
	"github.com/faultline-k8s/faultline/fakes/nri/record"
	"github.com/faultline-k8s/faultline/fakes/nri/runtimestate"
)

// The default HTTP addresses: loopback, as checkLoopback demands.
const (
	defaultPluginAddress       = "127.0.0.1:8080"
	defaultRuntimeStateAddress = "127.0.0.1:8083"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "runtime-state" {
		os.Exit(runRuntimeState(os.Args[2:]))
	}
	os.Exit(run())
}

// runRuntimeState serves GET /runtime and /healthz from the runtime's CRI
// socket until SIGTERM.
func runRuntimeState(args []string) int {
	fs := flag.NewFlagSet("runtime-state", flag.ContinueOnError)
	var (
		endpoint    = fs.String("cri-endpoint", "unix:///run/containerd/containerd.sock", "the runtime's CRI socket")
		httpAddress = fs.String("http-address", defaultRuntimeStateAddress, "loopback address for GET /runtime and GET /healthz")
		timeout     = fs.Duration("cri-timeout", 10*time.Second, "timeout of each CRI call")
		tokenHash   = fs.String(control.Flag, "", control.FlagUsage)
	)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if err := checkLoopback(*httpAddress); err != nil {
		log.Error(err.Error())
		return 2
	}
	verifier, err := newVerifier(*tokenHash, log)
	if err != nil {
		log.Error(err.Error())
		return 2
	}
	client, err := runtimestate.Dial(*endpoint, *timeout)
	if err != nil {
		log.Error("cannot start", "error", err)
		return 2
	}
	defer client.Close()
	ln, err := loopback.Listen(*httpAddress)
	if err != nil {
		log.Error("cannot serve HTTP", "error", err)
		return 1
	}
	srv := &http.Server{Handler: runtimeStateHandler(verifier, client), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Info("serving the runtime's state", "cri", *endpoint, "http", ln.Addr().String())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		log.Error("HTTP server failed", "error", err)
		return 1
	}
	return 0
}

func run() int {
	var (
		name          = flag.String("name", "", "plugin instance name; registers as <index>-<name> and selects annotations nri.faultline.k8s.io/<name>.<Event> (required)")
		index         = flag.String("index", "", "two-digit plugin index, sets the call order among plugins (required)")
		socketPath    = flag.String("socket-path", api.DefaultSocketPath, "the runtime's NRI socket")
		httpAddress   = flag.String("http-address", defaultPluginAddress, "loopback address for GET /events and GET /healthz")
		allowFaultsIn = flag.String("allow-faults-in", "api", `where fault annotations act: "api" = namespaces labelled `+scope.NamespaceLabel+"="+scope.NamespaceLabelValue+
			" (read from the API server with the pod's service account), or a comma-separated list of namespaces (outside a cluster)")
		stateDir      = flag.String("state-dir", "", "directory that keeps the event record and fault counts across restarts of this instance (e.g. an emptyDir); empty: memory only")
		maxEvents     = flag.Int("max-events", 10000, "records kept in memory")
		validator     = flag.Bool("validator", false, "also subscribe to ValidateContainerAdjustment (the plugin then takes part in every container creation)")
		failRequest   = flag.Bool("fail-request", false, "failure policy: ask the runtime to fail a request this plugin does not answer in time (honoured by runtimes with NRI >= v0.12.4; older ones ignore it)")
		keepConnected = flag.Bool("keep-connected", false, "failure policy: ask the runtime to keep this plugin after a request timeout (honoured by runtimes with NRI >= v0.12.4; older ones ignore it)")
		reconnectMin  = flag.Duration("reconnect-min", 100*time.Millisecond, "first wait before reconnecting")
		reconnectMax  = flag.Duration("reconnect-max", 5*time.Second, "longest wait between reconnects")
		tokenHash     = flag.String(control.Flag, "", control.FlagUsage)
	)
	flag.Parse()

	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if *name == "" || *index == "" {
		log.Error("--name and --index are required")
		return 2
	}
	if err := checkLoopback(*httpAddress); err != nil {
		log.Error(err.Error())
		return 2
	}
	verifier, err := newVerifier(*tokenHash, log)
	if err != nil {
		log.Error(err.Error())
		return 2
	}
	namespaces, err := parseAllowFaultsIn(*allowFaultsIn)
	if err != nil {
		log.Error(err.Error())
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	rec, err := record.New(record.Options{Plugin: *name, Index: *index, Dir: *stateDir, Logger: log, Max: *maxEvents})
	if err != nil {
		log.Error("cannot start", "error", err)
		return 1
	}
	defer rec.Close()
	cnt, err := counter.New(*stateDir)
	if err != nil {
		log.Error("cannot start", "error", err)
		return 1
	}
	var policy *api.FailurePolicy
	if *failRequest || *keepConnected {
		policy = &api.FailurePolicy{FailRequest: *failRequest, KeepConnected: *keepConnected}
	}
	gate, err := newGate(ctx, namespaces, log)
	if err != nil {
		log.Error("cannot start", "error", err)
		return 1
	}
	p, err := plugin.New(plugin.Config{
		Name:          *name,
		Index:         *index,
		SocketPath:    *socketPath,
		Recorder:      rec,
		Counter:       cnt,
		Logger:        log,
		Gate:          gate,
		Exit:          os.Exit,
		MinBackoff:    *reconnectMin,
		MaxBackoff:    *reconnectMax,
		Validator:     *validator,
		FailurePolicy: policy,
	})
	if err != nil {
		log.Error("cannot start", "error", err)
		return 2
	}

	// Listen before connecting so that a port clash fails at once.
	ln, err := loopback.Listen(*httpAddress)
	if err != nil {
		log.Error("cannot serve HTTP", "error", err)
		return 1
	}
	srv := &http.Server{Handler: pluginHandler(verifier, rec, p.Ready), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Error("HTTP server failed", "error", err)
		}
	}()
	log.Info("started", "plugin", *name, "index", *index, "socket", *socketPath,
		"http", ln.Addr().String(), "stateDir", *stateDir, "boot", rec.Boot(), "allowFaultsIn", *allowFaultsIn)

	runErr := p.Run(ctx)

	shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	if runErr != nil {
		log.Error("stopped", "error", fmt.Sprint(runErr))
		return 1
	}
	return 0
}

// checkLoopback refuses an --http-address off the pod's loopback
// (loopback.Check): ":8080" would serve the records and the runtime's state
// to the whole pod network.
func checkLoopback(addr string) error {
	if err := loopback.Check(addr); err != nil {
		return fmt.Errorf("--http-address: %w", err)
	}
	return nil
}

// newVerifier checks the control token against --control-token-sha256,
// which is required: without it anyone who may port-forward to the pod
// could read the records. Refusals are logged as warnings.
func newVerifier(hash string, log *slog.Logger) (*control.Verifier, error) {
	return control.NewVerifier(hash, func(format string, args ...any) {
		log.Warn(fmt.Sprintf(format, args...))
	})
}

// pluginHandler serves an instance's record; only /healthz without the token.
func pluginHandler(v *control.Verifier, rec *record.Recorder, ready func() error) http.Handler {
	return v.HTTP(record.Handler(rec, ready))
}

// runtimeStateHandler serves the runtime's state; only /healthz without the token.
func runtimeStateHandler(v *control.Verifier, client *runtimestate.Client) http.Handler {
	return v.HTTP(runtimestate.Handler(client))
}

// parseAllowFaultsIn reads --allow-faults-in: "api" gives nil (ask the API
// server), anything else is a comma-separated list of namespaces.
func parseAllowFaultsIn(v string) ([]string, error) {
	if v == "api" {
		return nil, nil
	}
	var namespaces []string
	for n := range strings.SplitSeq(v, ",") {
		n = strings.TrimSpace(n)
		if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
			return nil, fmt.Errorf(`--allow-faults-in %q: %q is no namespace name (%s); want "api" or a comma-separated list of namespaces`, v, n, strings.Join(errs, "; "))
		}
		namespaces = append(namespaces, n)
	}
	return namespaces, nil
}

// newGate returns scope.Static for a list of namespaces, else a
// scope.APIGate with the pod's in-cluster identity (it needs get, list
// and watch on namespaces, fixtures/nri).
func newGate(ctx context.Context, namespaces []string, log *slog.Logger) (scope.Gate, error) {
	if namespaces != nil {
		return scope.Static(namespaces), nil
	}
	// client-go logs with klog: keep the container log one JSON stream.
	klog.SetSlogLogger(log.With("component", "client-go"))
	config, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("--allow-faults-in=api needs the in-cluster API server: %w", err)
	}
	config.UserAgent = "fake-nri-plugin"
	cs, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	return scope.NewAPIGate(ctx, cs)
}
