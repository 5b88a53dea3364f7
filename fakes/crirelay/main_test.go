package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestFlags(t *testing.T) {
	if err := checkFlags("/run/cri.sock", "127.0.0.1:10010", "127.0.0.1:8080", "containerd", "kubelet"); err != nil {
		t.Error(err)
	}
	for _, bad := range [][5]string{
		{"/run/cri.sock", ":10010", "127.0.0.1:8080", "containerd", "kubelet"},
		{"/run/cri.sock", "127.0.0.1:10010", "0.0.0.0:8080", "containerd", "kubelet"},
		{"/run/cri.sock", "127.0.0.1:1", "127.0.0.1:2", "", "kubelet"},
		{"", "127.0.0.1:1", "127.0.0.1:2", "crio", "kubelet"},
		{"/run/cri.sock", "127.0.0.1:1", "127.0.0.1:2", "crio", ""},
	} {
		if err := checkFlags(bad[0], bad[1], bad[2], bad[3], bad[4]); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The process is the one serving the socket, found by its peer
// credentials: here this test process, whose name is not the runtime's,
// so the relay refuses to restart it.
func TestRestartOnlyTheRuntimeServingTheSocket(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "cri.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	self, err := (&runtimeProcess{proc: "/proc"}).stat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}

	found, err := (&runtimeProcess{socket: sock, name: self.Name, proc: "/proc"}).find()
	if err != nil || found.PID != os.Getpid() || found.StartTime != self.StartTime {
		t.Fatalf("find: %+v %v, want pid %d", found, err, os.Getpid())
	}

	srv := httptest.NewServer(handler(&runtimeProcess{socket: sock, name: "containerd", proc: "/proc"}, &kubeletProcess{name: "kubelet", proc: dir}, filepath.Join(dir, "none"), t.TempDir()))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/restart-runtime", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("restart of a process that is not the runtime: %d", resp.StatusCode)
	}
	// The old door: naming any process is a 400 now.
	resp, err = http.Post(srv.URL+"/restart-runtime?process=kubelet", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("?process=kubelet: %d, want 400", resp.StatusCode)
	}

	ok := httptest.NewServer(handler(&runtimeProcess{socket: sock, name: self.Name, proc: "/proc"}, &kubeletProcess{name: "kubelet", proc: dir}, filepath.Join(dir, "none"), t.TempDir()))
	defer ok.Close()
	resp, err = http.Get(ok.URL + "/runtime")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p Process
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || p.PID != os.Getpid() {
		t.Errorf("/runtime: %+v %v", p, err)
	}
}

// fakeProc writes /proc/<pid>/stat files: comm, state and parent of each.
func fakeProc(t *testing.T, procs map[int][3]string) string {
	t.Helper()
	dir := t.TempDir()
	for pid, p := range procs {
		d := filepath.Join(dir, strconv.Itoa(pid))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		stat := fmt.Sprintf("%d (%s) %s %s 1 1 0 -1 4194560 %s%d 0 0", pid, p[0], p[1], p[2], strings.Repeat("0 ", 12), 1000+pid)
		if err := os.WriteFile(filepath.Join(d, "stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Not a process.
	if err := os.Mkdir(filepath.Join(dir, "sys"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The kubelet is the one process of its name that the node's init started:
// a container's process of that name (a shim's child), a zombie or another
// command are never picked, and two candidates are refused.
func TestFindOnlyTheKubeletInitStarted(t *testing.T) {
	procs := map[int][3]string{
		1:   {"systemd", "S", "0"},
		70:  {"containerd", "S", "1"},
		90:  {"containerd-shim", "S", "1"},
		91:  {"kubelet", "S", "90"}, // a container's process named kubelet
		95:  {"kubelet", "Z", "1"},  // a dead one, not yet reaped
		120: {"kubelet", "S", "1"},
	}
	k := &kubeletProcess{name: "kubelet", proc: fakeProc(t, procs)}
	p, err := k.find()
	if err != nil || p.PID != 120 || p.Name != "kubelet" || p.StartTime != 1120 {
		t.Errorf("find: %+v %v, want pid 120", p, err)
	}

	procs[130] = [3]string{"kubelet", "S", "1"}
	if p, err := (&kubeletProcess{name: "kubelet", proc: fakeProc(t, procs)}).find(); err == nil {
		t.Errorf("two kubelets started by init: picked %+v", p)
	}
	delete(procs, 120)
	delete(procs, 130)
	if p, err := (&kubeletProcess{name: "kubelet", proc: fakeProc(t, procs)}).find(); err == nil {
		t.Errorf("no kubelet started by init: picked %+v", p)
	}

	// Over HTTP: /kubelet names it; /restart-kubelet signals nothing when
	// there is no such process, takes no parameters and only POST.
	srv := httptest.NewServer(handler(&runtimeProcess{name: "containerd", proc: "/proc"}, k, filepath.Join(t.TempDir(), "none"), t.TempDir()))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/kubelet")
	if err != nil {
		t.Fatal(err)
	}
	var got Process
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || got.PID != 120 {
		t.Errorf("/kubelet: %+v %v", got, err)
	}
	resp.Body.Close()

	none := httptest.NewServer(handler(&runtimeProcess{name: "containerd", proc: "/proc"}, &kubeletProcess{name: "kubelet", proc: fakeProc(t, procs)}, filepath.Join(t.TempDir(), "none"), t.TempDir()))
	defer none.Close()
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{http.MethodPost, "/restart-kubelet", http.StatusServiceUnavailable},
		{http.MethodPost, "/restart-kubelet?process=containerd", http.StatusBadRequest},
		{http.MethodGet, "/restart-kubelet", http.StatusMethodNotAllowed},
	} {
		req, err := http.NewRequest(c.method, none.URL+c.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, resp.StatusCode, c.want)
		}
	}
}

func TestParseStat(t *testing.T) {
	stat := "1234 (containerd) S 1 1234 1234 0 -1 4194560 " + strings.Repeat("0 ", 12) + "987654 0 0"
	p, err := parseStat(1234, stat)
	if err != nil || p.Name != "containerd" || p.StartTime != 987654 {
		t.Errorf("%+v %v", p, err)
	}
	if p, err := parseStat(7, "7 (a) b) S 1 "+strings.Repeat("0 ", 17)+"42"); err != nil || p.Name != "a) b" || p.StartTime != 42 {
		t.Errorf("comm with ')': %+v %v", p, err)
	}
	for _, bad := range []string{"", "1 (x", "1 (x) S 1", "1 (x) S 1 " + strings.Repeat("0 ", 17) + "notanumber"} {
		if _, err := parseStat(1, bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
