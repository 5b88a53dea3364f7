// Command fake-nri-plugin runs one instance of faultline's fake NRI plugin:
// it connects to the runtime's NRI socket, records every pod and container
// event, injects the faults that pod annotations ask for, and serves the
// record over HTTP. Several instances (different --name and --index) run
// side by side to test how the runtime chains plugins.
//
// "fake-nri-plugin runtime-state" instead serves what the runtime holds
// for a pod (its sandboxes and containers, listed over CRI), see package
// runtimestate.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/containerd/nri/pkg/api"

	"github.com/faultline-k8s/faultline/drivers/fake/nri/counter"
	"github.com/faultline-k8s/faultline/drivers/fake/nri/plugin"
	"github.com/faultline-k8s/faultline/drivers/fake/nri/record"
	"github.com/faultline-k8s/faultline/drivers/fake/nri/runtimestate"
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
		httpAddress = fs.String("http-address", ":8083", "address for GET /runtime and GET /healthz")
		timeout     = fs.Duration("cri-timeout", 10*time.Second, "timeout of each CRI call")
	)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	client, err := runtimestate.Dial(*endpoint, *timeout)
	if err != nil {
		log.Error("cannot start", "error", err)
		return 2
	}
	defer client.Close()
	ln, err := net.Listen("tcp", *httpAddress)
	if err != nil {
		log.Error("cannot serve HTTP", "error", err)
		return 1
	}
	srv := &http.Server{Handler: runtimestate.Handler(client), ReadHeaderTimeout: 10 * time.Second}
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
		httpAddress   = flag.String("http-address", ":8080", "address for GET /events and GET /healthz")
		stateDir      = flag.String("state-dir", "", "directory that keeps the event record and fault counts across restarts of this instance (e.g. an emptyDir); empty: memory only")
		maxEvents     = flag.Int("max-events", 10000, "records kept in memory")
		validator     = flag.Bool("validator", false, "also subscribe to ValidateContainerAdjustment (the plugin then takes part in every container creation)")
		failRequest   = flag.Bool("fail-request", false, "failure policy: ask the runtime to fail a request this plugin does not answer in time (NRI >= v0.12.5 runtimes only)")
		keepConnected = flag.Bool("keep-connected", false, "failure policy: ask the runtime to keep this plugin after a request timeout (NRI >= v0.12.5 runtimes only)")
		reconnectMin  = flag.Duration("reconnect-min", 100*time.Millisecond, "first wait before reconnecting")
		reconnectMax  = flag.Duration("reconnect-max", 5*time.Second, "longest wait between reconnects")
	)
	flag.Parse()

	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if *name == "" || *index == "" {
		log.Error("--name and --index are required")
		return 2
	}

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
	p, err := plugin.New(plugin.Config{
		Name:          *name,
		Index:         *index,
		SocketPath:    *socketPath,
		Recorder:      rec,
		Counter:       cnt,
		Logger:        log,
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
	ln, err := net.Listen("tcp", *httpAddress)
	if err != nil {
		log.Error("cannot serve HTTP", "error", err)
		return 1
	}
	srv := &http.Server{Handler: record.Handler(rec, p.Ready), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Error("HTTP server failed", "error", err)
		}
	}()
	log.Info("started", "plugin", *name, "index", *index, "socket", *socketPath,
		"http", ln.Addr().String(), "stateDir", *stateDir, "boot", rec.Boot())

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
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
