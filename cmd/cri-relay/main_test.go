package main

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFlags(t *testing.T) {
	if err := checkFlags("/run/cri.sock", "127.0.0.1:10010", "127.0.0.1:8080", "containerd"); err != nil {
		t.Error(err)
	}
	for _, bad := range [][4]string{
		{"/run/cri.sock", ":10010", "127.0.0.1:8080", "containerd"},
		{"/run/cri.sock", "127.0.0.1:10010", "0.0.0.0:8080", "containerd"},
		{"/run/cri.sock", "127.0.0.1:1", "127.0.0.1:2", ""},
		{"", "127.0.0.1:1", "127.0.0.1:2", "crio"},
	} {
		if err := checkFlags(bad[0], bad[1], bad[2], bad[3]); err == nil {
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

	srv := httptest.NewServer(handler(&runtimeProcess{socket: sock, name: "containerd", proc: "/proc"}, filepath.Join(dir, "none")))
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

	ok := httptest.NewServer(handler(&runtimeProcess{socket: sock, name: self.Name, proc: "/proc"}, filepath.Join(dir, "none")))
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
