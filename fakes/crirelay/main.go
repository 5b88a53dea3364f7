// Command cri-relay gives the CRI suite its way to a node's container runtime,
// on kind and on any existing cluster alike: it runs on the node (fixtures/cri)
// and proxies gRPC calls to the runtime's CRI socket (proxy.go), which the
// suite reaches with a port-forward and speaks real gRPC over, as critest
// does on the node itself. Its HTTP side serves the log of the node's slow OCI
// runtime (fakes/runcslow/cmd/runc-slow), names the runtime's and the kubelet's processes,
// and restarts either for the restart specs (the CRI suite's runtime
// restart, the DRA suite's kubelet restarts).
//
// Both sides listen on the pod's loopback only: the CRI socket grants full
// control of the node, so only a port-forward may reach it. pods/portforward
// is in the built-in edit and admin roles, so every gRPC call and every HTTP
// request but GET /healthz (the readiness probe's) must also carry the run's
// control token, which only the suite process holds (--control-token-sha256,
// package control). The processes it restarts are the one serving
// the CRI socket (its peer credentials), and only if its name is the runtime
// the cluster facts name (--runtime-process), and the one process named
// --kubelet-process whose parent is the node's init: nothing else on the node
// can be signalled through it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/faultline-k8s/faultline/fakes/lib/control"
	"github.com/faultline-k8s/faultline/fakes/lib/loopback"
	"github.com/faultline-k8s/faultline/fakes/lib/query"
	"github.com/faultline-k8s/faultline/fakes/runcslow/ociruntime"
)

func main() {
	criSocket := flag.String("cri-socket", "", "the runtime's CRI socket inside this container")
	listen := flag.String("listen", "127.0.0.1:10010", "loopback TCP address whose gRPC calls are passed on to the CRI socket")
	httpAddr := flag.String("http-address", "127.0.0.1:8080", "loopback HTTP address: /healthz, /oci-log, POST /release, /runtime, POST /restart-runtime, /kubelet, POST /restart-kubelet")
	ociLog := flag.String("oci-log", "/var/log/faultline/runc-slow.jsonl", "the slow OCI runtime's log on the node")
	gateDir := flag.String("gate-dir", ociruntime.GateDir, "where POST /release opens the gate of a creation runc-slow holds (the node's directory)")
	process := flag.String("runtime-process", "", "command name of the runtime's process (vocab/runtimes Process); the only process /restart-runtime signals")
	kubelet := flag.String("kubelet-process", "kubelet", "command name of the kubelet's process; /restart-kubelet signals the one process of this name whose parent is the node's init")
	tokenHash := flag.String(control.Flag, "", control.FlagUsage)
	flag.Parse()
	if err := checkFlags(*criSocket, *listen, *httpAddr, *process, *kubelet); err != nil {
		fmt.Fprintf(os.Stderr, "cri-relay: %v\n", err)
		os.Exit(2)
	}
	verifier, err := control.NewVerifier(*tokenHash, log.Printf)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cri-relay: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	ln, err := loopback.Listen(*listen)
	if err != nil {
		log.Fatalf("cri-relay: %v", err)
	}
	proxy, backend, err := newCRIProxy(*criSocket, verifier)
	if err != nil {
		log.Fatalf("cri-relay: %v", err)
	}
	defer backend.Close()
	go func() { <-ctx.Done(); proxy.Stop() }()
	go func() {
		if err := proxy.Serve(ln); err != nil {
			log.Printf("cri-relay: CRI proxy: %v", err)
		}
	}()

	r := &runtimeProcess{socket: *criSocket, name: *process, proc: "/proc"}
	httpLn, err := loopback.Listen(*httpAddr)
	if err != nil {
		log.Fatalf("cri-relay: %v", err)
	}
	k := &kubeletProcess{name: *kubelet, proc: "/proc"}
	server := &http.Server{Handler: httpHandler(verifier, r, k, *ociLog, *gateDir), ReadHeaderTimeout: 10 * time.Second}
	go func() { <-ctx.Done(); server.Close() }()
	log.Printf("cri-relay: %s -> %s, HTTP on %s, runtime process %q, kubelet process %q", *listen, *criSocket, *httpAddr, *process, *kubelet)
	if err := server.Serve(httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatalf("cri-relay: %v", err)
	}
}

func checkFlags(criSocket, listen, httpAddr, process, kubelet string) error {
	if criSocket == "" {
		return errors.New("--cri-socket is required")
	}
	if process == "" {
		return errors.New("--runtime-process is required (the runtime's command name, e.g. containerd or crio)")
	}
	if kubelet == "" {
		return errors.New("--kubelet-process must not be empty (the kubelet's command name, kubelet)")
	}
	for _, a := range []struct{ flag, addr string }{{"--listen", listen}, {"--http-address", httpAddr}} {
		if err := loopback.Check(a.addr); err != nil {
			return fmt.Errorf("%s: %w", a.flag, err)
		}
	}
	return nil
}

// httpHandler is the HTTP side as served: everything but GET /healthz wants
// the run's control token.
func httpHandler(v *control.Verifier, r *runtimeProcess, k *kubeletProcess, ociLog, gateDir string) http.Handler {
	return v.HTTP(handler(r, k, ociLog, gateDir))
}

func handler(r *runtimeProcess, k *kubeletProcess, ociLog, gateDir string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, req *http.Request) {
		if _, ok := query.Request(w, req); !ok {
			return
		}
		// Ready only while the runtime's socket answers.
		conn, err := net.DialTimeout("unix", r.socket, 2*time.Second)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		conn.Close()
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/oci-log", func(w http.ResponseWriter, req *http.Request) {
		if _, ok := query.Request(w, req); !ok {
			return
		}
		data, err := os.ReadFile(ociLog)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.Write(data) //nolint:errcheck // the client went away
	})
	// POST /release?request=<token> opens the gate of the request's held
	// creations (ociruntime.Release): they go on at once, and so does every
	// later one of the request. With fail=once the held creation fails
	// instead, once (ociruntime.ReleaseFailing).
	mux.HandleFunc("POST /release", func(w http.ResponseWriter, req *http.Request) {
		q, ok := query.Request(w, req, "request", "fail")
		if !ok {
			return
		}
		if err := ociruntime.CheckRequest(q.Get("request")); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		release := ociruntime.Release
		switch q.Get("fail") {
		case "":
		case "once":
			release = ociruntime.ReleaseFailing
		default:
			http.Error(w, fmt.Sprintf("fail=%q: want once, or no fail", q.Get("fail")), http.StatusBadRequest)
			return
		}
		if err := release(gateDir, q.Get("request")); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeJSON(w, map[string]string{"released": q.Get("request")})
	})
	mux.HandleFunc("/runtime", func(w http.ResponseWriter, req *http.Request) {
		if _, ok := query.Request(w, req); !ok {
			return
		}
		p, err := r.find()
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		writeJSON(w, p)
	})
	mux.HandleFunc("/restart-runtime", func(w http.ResponseWriter, req *http.Request) {
		restart(w, req, r.find)
	})
	mux.HandleFunc("/kubelet", func(w http.ResponseWriter, req *http.Request) {
		if _, ok := query.Request(w, req); !ok {
			return
		}
		p, err := k.find()
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		writeJSON(w, p)
	})
	mux.HandleFunc("/restart-kubelet", func(w http.ResponseWriter, req *http.Request) {
		restart(w, req, k.find)
	})
	return mux
}

// restart serves POST /restart-runtime and /restart-kubelet: SIGTERM to the
// one process find names (no parameters: nothing else can be named), which
// the node's init starts again (Restart=always). It answers with the
// process it signalled.
func restart(w http.ResponseWriter, req *http.Request, find func() (Process, error)) {
	if req.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	if _, ok := query.Request(w, req); !ok {
		return
	}
	p, err := find()
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	if err := syscall.Kill(p.PID, syscall.SIGTERM); err != nil {
		http.Error(w, fmt.Sprintf("SIGTERM %s (pid %d): %v", p.Name, p.PID, err), http.StatusInternalServerError)
		return
	}
	log.Printf("sent SIGTERM to %s (pid %d); the node's init restarts it", p.Name, p.PID)
	writeJSON(w, p)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v) //nolint:errcheck // the client went away
}
