// Command fake-dra-driver is faultline's fake DRA kubelet plugin. It runs as
// a DaemonSet, publishes --devices fake devices per node and injects the
// failures that each ResourceClaim declares in its opaque FaultSpec config.
//
// HTTP (--http-address, loopback only, so nothing on the pod network may
// reach it; tests reach it through port-forward, the readiness probe through
// /usr/local/bin/probe). Every request but GET /healthz must carry the run's
// control token (--control-token-sha256, package control): pods/portforward
// is in the built-in edit and admin roles.
//
//	GET  /healthz              200 once the kubelet registered the plugin
//	GET  /calls[?claimUID=U]   call record and per-claim summary (JSON)
//	GET  /devices              devices and their injected failures (JSON)
//	POST /devices/fail?device=dev-N[&effect=E][&message=M]
//	                           break a device now (taint, health, claim status)
//	POST /devices/repair?device=dev-N
//	                           repair one device
//	POST /reset                repair all devices (taints, health)
//	GET  /healthstream         the kubelet's health streams: opened, dropped
//	                           by a StreamDrop fault, refused, closed (JSON)
//	GET  /service              the DRA service: answering now, and when an
//	                           Unresponsive fault stopped it and it started
//	                           again (JSON)
//	GET  /podresources?namespace=NS&pod=P
//	                           the kubelet's PodResources Get for a pod in
//	                           faultline's namespaces: its containers'
//	                           claims, devices and CDI IDs as the kubelet
//	                           holds them (JSON; --pod-resources-socket)
//
// Two subcommands run inside a test container (the fakes image holds this
// binary), for claims whose FaultSpec asks for CDI devices:
//
//	fake-dra-driver cdi-hook <CDI ID>  the devices' OCI startContainer hook:
//	                                   appends the ID to /dev/shm/faultline-cdi-hooks
//	fake-dra-driver cdi-witness        prints the container's CDI environment
//	                                   variables and that record, then waits
//	                                   for SIGTERM
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"

	"github.com/faultline-k8s/faultline/fakes/dra/calls"
	"github.com/faultline-k8s/faultline/fakes/dra/driver"
	"github.com/faultline-k8s/faultline/fakes/dra/podresources"
	"github.com/faultline-k8s/faultline/fakes/lib/control"
	"github.com/faultline-k8s/faultline/fakes/lib/loopback"
	"github.com/faultline-k8s/faultline/fakes/lib/query"
	"github.com/faultline-k8s/faultline/fakes/lib/scope"
	"github.com/faultline-k8s/faultline/vocab/fakemodes"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case driver.CDIHookCommand:
			os.Exit(driver.RunCDIHook(os.Args[2:], driver.CDIHookRecord, os.Stderr))
		case driver.CDIWitnessCommand:
			os.Exit(cdiWitness())
		}
	}
	klog.InitFlags(nil)
	var (
		driverName     = flag.String("driver-name", driver.DefaultDriverName, "DRA driver name; DeviceClass selectors and claim configs must use the same")
		nodeName       = flag.String("node-name", os.Getenv("NODE_NAME"), "name of this node (default $NODE_NAME); also the pool name")
		devices        = flag.Int("devices", 4, "number of devices to publish (dev-0 .. dev-N-1)")
		httpAddress    = flag.String("http-address", "127.0.0.1:8080", "listen address of the HTTP API (/healthz, /calls, /devices, /devices/fail, /devices/repair, /reset); the host must be a loopback IP")
		pluginDataDir  = flag.String("plugin-data-dir", "", "directory for dra.sock (default "+kubeletplugin.KubeletPluginsDir+"/<driver-name>)")
		registrarDir   = flag.String("registrar-dir", kubeletplugin.KubeletRegistryDir, "kubelet plugin registration directory")
		kubeconfig     = flag.String("kubeconfig", "", "kubeconfig for running outside a cluster (default: in-cluster config)")
		healthInterval = flag.Duration("health-interval", 10*time.Second, "how often device health is re-sent to the kubelet")
		gcInterval     = flag.Duration("gc-interval", 10*time.Second, "how often failed devices of deleted claims are repaired")
		claimStatus    = flag.Bool("claim-status", true, "write per-device conditions into ResourceClaim status.devices")
		cdiDir         = flag.String("cdi-dir", "", "the runtime's CDI spec directory (e.g. /var/run/cdi), for claims whose FaultSpec asks for CDI devices; empty: such claims fail to prepare")
		cdiHookPath    = flag.String("cdi-hook-path", driver.DefaultCDIHookPath, "the CDI devices' startContainer hook binary (this binary) as test containers see it")
		tokenHash      = flag.String(control.Flag, "", control.FlagUsage)
		podResources   = flag.String("pod-resources-socket", "", "the kubelet's PodResources socket (e.g. "+podresources.DefaultSocket+"), read for GET /podresources; empty: that endpoint answers 501")
		fakeModes      = flag.String("fake-mode", "", "comma-separated documented misbehaviours (vocab/fakemodes) for negative controls; empty: none")
	)
	flag.Parse()
	if err := loopbackOnly(*httpAddress); err != nil {
		fmt.Fprintln(os.Stderr, "fake-dra-driver:", err)
		os.Exit(2)
	}
	modes, err := parseFakeModes(*fakeModes)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake-dra-driver:", err)
		os.Exit(2)
	}

	if err := run(config{
		driverName: *driverName, nodeName: *nodeName, devices: *devices, httpAddress: *httpAddress,
		pluginDataDir: *pluginDataDir, registrarDir: *registrarDir, kubeconfig: *kubeconfig,
		healthInterval: *healthInterval, gcInterval: *gcInterval, claimStatus: *claimStatus,
		cdiDir: *cdiDir, cdiHookPath: *cdiHookPath, tokenHash: *tokenHash, podResourcesSocket: *podResources,
		fakeModes: modes,
	}); err != nil {
		klog.ErrorS(err, "fake-dra-driver failed")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

type config struct {
	driverName, nodeName, httpAddress, pluginDataDir, registrarDir, kubeconfig string
	cdiDir, cdiHookPath, tokenHash, podResourcesSocket                         string
	devices                                                                    int
	healthInterval, gcInterval                                                 time.Duration
	claimStatus                                                                bool
	fakeModes                                                                  []string

	// For tests: a ready client instead of kubeconfig/in-cluster config,
	// and a hook that learns the HTTP listen address.
	client      kubernetes.Interface
	onListening func(addr string)
}

// parseFakeModes reads --fake-mode: modes of this fake only, each once.
func parseFakeModes(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	modes := strings.Split(s, ",")
	if err := fakemodes.Check(modes, fakemodes.DRA); err != nil {
		return nil, fmt.Errorf("--fake-mode: %w", err)
	}
	return modes, nil
}

// loopbackOnly refuses an --http-address off the pod's loopback
// (loopback.Check): the HTTP API breaks devices on request.
func loopbackOnly(address string) error {
	if err := loopback.Check(address); err != nil {
		return fmt.Errorf("--http-address: %w", err)
	}
	return nil
}

func run(cfg config) error {
	if cfg.nodeName == "" {
		return errors.New("--node-name or $NODE_NAME is required")
	}
	// main refused it already; checked here too because run is what listens.
	if err := loopbackOnly(cfg.httpAddress); err != nil {
		return err
	}
	verifier, err := control.NewVerifier(cfg.tokenHash, func(format string, args ...any) {
		klog.InfoS(fmt.Sprintf(format, args...))
	})
	if err != nil {
		return err
	}
	if cfg.pluginDataDir == "" {
		cfg.pluginDataDir = path.Join(kubeletplugin.KubeletPluginsDir, cfg.driverName)
	}
	// kubeletplugin requires the directory. The DaemonSet's hostPath
	// (DirectoryOrCreate) creates it already; this is for running elsewhere.
	if err := os.MkdirAll(cfg.pluginDataDir, 0o750); err != nil {
		return fmt.Errorf("create plugin data directory: %w", err)
	}
	// The runtime's directory: not created here (the DaemonSet's hostPath
	// is), a typo must not go unnoticed until a claim asks for CDI.
	if cfg.cdiDir != "" {
		if st, err := os.Stat(cfg.cdiDir); err != nil || !st.IsDir() {
			return fmt.Errorf("--cdi-dir %s: not a directory (%v)", cfg.cdiDir, err)
		}
	}

	client := cfg.client
	if client == nil {
		var err error
		if client, err = newClient(cfg.kubeconfig, cfg.nodeName); err != nil {
			return err
		}
	}

	// SIGTERM (kubelet stopping the pod) and SIGINT end the context; the
	// deferred Stop then closes the gRPC servers, which removes both
	// sockets so that the kubelet notices the plugin is gone.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	logger := klog.FromContext(ctx)

	// FaultSpecs only act in namespaces labelled by faultline's specs
	// (scope.NamespaceLabel); the gate reads the labels from the API server.
	gate, err := scope.NewAPIGate(ctx, client)
	if err != nil {
		return err
	}

	recorder := calls.NewRecorder()
	drv, err := driver.Start(ctx, driver.Config{
		DriverName:     cfg.driverName,
		NodeName:       cfg.nodeName,
		KubeClient:     client,
		Gate:           gate,
		Devices:        cfg.devices,
		PluginDataDir:  cfg.pluginDataDir,
		RegistrarDir:   cfg.registrarDir,
		Recorder:       recorder,
		HealthInterval: cfg.healthInterval,
		GCInterval:     cfg.gcInterval,
		ClaimStatus:    cfg.claimStatus,
		FakeModes:      cfg.fakeModes,
		CDIDir:         cfg.cdiDir,
		CDIHookPath:    cfg.cdiHookPath,
		OnFatal:        cancel,
	})
	if err != nil {
		return err
	}
	defer drv.Stop()

	mux := http.NewServeMux()
	mux.Handle("/calls", recorder.Handler())
	mux.Handle("/devices", drv.DevicesHandler())
	mux.Handle("/devices/fail", drv.FailHandler())
	mux.Handle("/devices/repair", drv.RepairHandler())
	mux.Handle("/reset", drv.ResetHandler())
	mux.Handle("/healthstream", drv.HealthStreamHandler())
	mux.Handle("/service", drv.ServiceHandler())
	mux.Handle("/podresources", podresources.Handler(cfg.podResourcesSocket, gate))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, req *http.Request) {
		if _, ok := query.Request(w, req); !ok {
			return
		}
		notified, registered, reason := drv.Registration()
		switch {
		case registered:
			fmt.Fprintln(w, "ok")
		case notified:
			http.Error(w, "kubelet rejected the plugin registration: "+reason, http.StatusServiceUnavailable)
		default:
			http.Error(w, "waiting for the kubelet to register the plugin", http.StatusServiceUnavailable)
		}
	})
	listener, err := loopback.Listen(cfg.httpAddress)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.httpAddress, err)
	}
	server := &http.Server{Handler: verifier.HTTP(mux), ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- server.Serve(listener) }()
	logger.Info("HTTP API listening", "address", listener.Addr().String())
	if cfg.onListening != nil {
		cfg.onListening(listener.Addr().String())
	}

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		cancel(fmt.Errorf("HTTP server: %w", err))
	}
	logger.Info("Shutting down", "cause", context.Cause(ctx))
	shutdownCtx, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	_ = server.Shutdown(shutdownCtx)
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

func newClient(kubeconfig, nodeName string) (kubernetes.Interface, error) {
	var restConfig *rest.Config
	var err error
	if kubeconfig != "" {
		restConfig, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		restConfig, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes client config: %w", err)
	}
	restConfig.UserAgent = "fake-dra-driver/" + nodeName
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return client, nil
}

// cdiWitness is the command of a test container whose claims ask for CDI
// devices: it prints what the runtime injected (driver.CDIWitness) and
// then waits to be stopped, like fakes/testpod.
func cdiWitness() int {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	if err := driver.CDIWitness(os.Stdout, os.Environ(), driver.CDIHookRecord); err != nil {
		fmt.Fprintln(os.Stderr, "fake-dra-driver cdi-witness:", err)
		return 1
	}
	<-signals
	return 0
}
