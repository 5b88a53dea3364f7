// Command cri-relay gives the CRI suite its way to a node's container runtime,
// on kind and on any existing cluster alike: it runs on the node (fixtures/cri)
// and relays TCP connections to the runtime's CRI socket, which the suite
// reaches with a port-forward and speaks real gRPC over, as critest does on
// the node itself. Its HTTP side, read through the API server's pod proxy,
// serves the log of the node's slow OCI runtime (cmd/runc-slow) and restarts
// the runtime for the restart spec.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	criSocket := flag.String("cri-socket", "", "the runtime's CRI socket inside this container")
	listen := flag.String("listen", ":10010", "TCP address relayed to the CRI socket")
	httpAddr := flag.String("http-address", ":8080", "HTTP address: /healthz, /oci-log, POST /restart-runtime")
	ociLog := flag.String("oci-log", "/var/log/faultline/runc-slow.jsonl", "the slow OCI runtime's log on the node")
	flag.Parse()
	if *criSocket == "" {
		fmt.Fprintln(os.Stderr, "cri-relay: --cri-socket is required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("cri-relay: %v", err)
	}
	go func() { <-ctx.Done(); ln.Close() }()
	go relay(ln, *criSocket)

	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		// Ready only while the runtime's socket answers.
		conn, err := net.DialTimeout("unix", *criSocket, 2*time.Second)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		conn.Close()
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/oci-log", func(w http.ResponseWriter, _ *http.Request) {
		data, err := os.ReadFile(*ociLog)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.Write(data) //nolint:errcheck // the client went away
	})
	mux.HandleFunc("/restart-runtime", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		name := r.URL.Query().Get("process")
		pids, err := signalProcesses(name, syscall.SIGTERM)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		log.Printf("sent SIGTERM to %s %v; the node's init restarts it", name, pids)
		fmt.Fprintf(w, "%v\n", pids)
	})
	server := &http.Server{Addr: *httpAddr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { <-ctx.Done(); server.Close() }()
	log.Printf("cri-relay: %s -> %s, HTTP on %s", *listen, *criSocket, *httpAddr)
	if err := server.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatalf("cri-relay: %v", err)
	}
}

// relay copies each accepted connection to a new connection to the socket.
func relay(ln net.Listener, socket string) {
	for {
		client, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer client.Close()
			runtime, err := net.DialTimeout("unix", socket, 5*time.Second)
			if err != nil {
				log.Printf("relay: %v", err)
				return
			}
			defer runtime.Close()
			done := make(chan struct{}, 2)
			go func() { io.Copy(runtime, client); done <- struct{}{} }() //nolint:errcheck // ends with either side
			go func() { io.Copy(client, runtime); done <- struct{}{} }() //nolint:errcheck
			<-done
		}()
	}
}

// signalProcesses signals every process whose command name is name. The pod
// shares the node's PID namespace (hostPID), so these are the node's.
func signalProcesses(name string, sig syscall.Signal) ([]int, error) {
	if name == "" || strings.ContainsAny(name, "/\n") {
		return nil, fmt.Errorf("want ?process=<command name>, got %q", name)
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil || strings.TrimSpace(string(comm)) != name {
			continue
		}
		if err := syscall.Kill(pid, sig); err != nil {
			return pids, fmt.Errorf("signal %s (%d): %w", name, pid, err)
		}
		pids = append(pids, pid)
	}
	if len(pids) == 0 {
		return nil, fmt.Errorf("no process named %q (is the pod in the node's PID namespace?)", name)
	}
	return pids, nil
}
