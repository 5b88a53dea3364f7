package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Process is the runtime's process as /runtime and /restart-runtime report
// it. A restart shows as a new PID or start time; the restart spec checks
// that it saw one.
type Process struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
	// StartTime is the process's start in clock ticks after boot
	// (/proc/<pid>/stat field 22): with the PID, it names one process for
	// the life of the node.
	StartTime uint64 `json:"startTime"`
}

// runtimeProcess finds the process serving the CRI socket.
type runtimeProcess struct {
	socket string // the runtime's CRI socket
	name   string // its command name must be this
	proc   string // /proc of the node's PID namespace (the pod has hostPID)
}

// find asks the kernel which process listens on the CRI socket: the peer
// credentials of a connection to it (SO_PEERCRED) are those of the process
// that called listen, translated into this PID namespace. No process name
// search is involved, so another process of the same name (a second
// containerd, Docker's) can never be picked.
func (r *runtimeProcess) find() (Process, error) {
	conn, err := net.DialTimeout("unix", r.socket, 2*time.Second)
	if err != nil {
		return Process{}, fmt.Errorf("the runtime's socket: %w", err)
	}
	defer conn.Close()
	raw, err := conn.(*net.UnixConn).SyscallConn()
	if err != nil {
		return Process{}, err
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return Process{}, err
	}
	if credErr != nil {
		return Process{}, fmt.Errorf("peer credentials of %s: %w", r.socket, credErr)
	}
	pid := int(cred.Pid)
	if pid <= 1 {
		// 0: the listener is in another PID namespace; 1: init holds the
		// socket (socket activation), and init is not the runtime.
		return Process{}, fmt.Errorf("the socket %s is held by pid %d, not by a runtime this pod can see (is the pod in the node's PID namespace?)", r.socket, pid)
	}
	p, err := r.stat(pid)
	if err != nil {
		return Process{}, err
	}
	if p.Name != r.name {
		return Process{}, fmt.Errorf("the socket %s is served by %q (pid %d), not by the runtime %q the cluster facts name: refusing to touch it", r.socket, p.Name, pid, r.name)
	}
	return p, nil
}

// stat reads a process's command name and start time.
func (r *runtimeProcess) stat(pid int) (Process, error) {
	data, err := os.ReadFile(filepath.Join(r.proc, strconv.Itoa(pid), "stat"))
	if err != nil {
		return Process{}, err
	}
	return parseStat(pid, string(data))
}

// parseStat reads /proc/<pid>/stat: "pid (comm) state ppid ... starttime"
// where comm may hold spaces and parentheses, so it ends at the last ')'.
func parseStat(pid int, stat string) (Process, error) {
	open, end := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
	if open < 0 || end < open {
		return Process{}, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	fields := strings.Fields(stat[end+1:])
	// fields[0] is field 3 (state); starttime is field 22.
	if len(fields) < 20 {
		return Process{}, fmt.Errorf("short /proc/%d/stat", pid)
	}
	start, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return Process{}, fmt.Errorf("/proc/%d/stat starttime: %w", pid, err)
	}
	return Process{Name: stat[open+1 : end], PID: pid, StartTime: start}, nil
}

// kubeletProcess finds the node's kubelet by its command name. Unlike the
// runtime it serves no socket this pod mounts, so it is found in /proc: the
// one process named name whose parent is the node's init (pid 1 in the
// node's PID namespace: systemd starts the kubelet). A container's process
// of that name has a runtime shim for parent, never init, so no pod can
// offer itself to be signalled; more than one candidate is refused.
type kubeletProcess struct {
	name string // --kubelet-process
	proc string // /proc of the node's PID namespace (the pod has hostPID)
}

func (k *kubeletProcess) find() (Process, error) {
	entries, err := os.ReadDir(k.proc)
	if err != nil {
		return Process{}, err
	}
	var found []Process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 1 {
			continue
		}
		data, err := os.ReadFile(filepath.Join(k.proc, e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		p, ppid, state, err := parseStatParent(pid, string(data))
		if err != nil || p.Name != k.name || ppid != 1 || state == "Z" {
			continue
		}
		found = append(found, p)
	}
	switch len(found) {
	case 0:
		return Process{}, fmt.Errorf("no process %q with the node's init (pid 1) for parent in %s: is the kubelet running, and is this pod in the node's PID namespace?", k.name, k.proc)
	case 1:
		return found[0], nil
	}
	return Process{}, fmt.Errorf("%d processes %q with the node's init for parent (%+v): refusing to pick one", len(found), k.name, found)
}

// parseStatParent is parseStat with the state (field 3) and the parent's
// pid (field 4).
func parseStatParent(pid int, stat string) (p Process, ppid int, state string, err error) {
	if p, err = parseStat(pid, stat); err != nil {
		return p, 0, "", err
	}
	fields := strings.Fields(stat[strings.LastIndexByte(stat, ')')+1:])
	if ppid, err = strconv.Atoi(fields[1]); err != nil {
		return p, 0, "", fmt.Errorf("/proc/%d/stat ppid: %w", pid, err)
	}
	return p, ppid, fields[0], nil
}
