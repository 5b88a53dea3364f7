package main

// The node's runtime: asked over its CRI socket (k8s.io/cri-api) whether it
// answers and which handlers it has, and restarted through systemd.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/faultline-k8s/faultline/nodesetup"
	"github.com/faultline-k8s/faultline/vocab/runtimes"
)

// criClient speaks CRI to the runtime's socket (a local path: the node's
// socket under the root the node is mounted at).
type criClient struct {
	socket string
}

// call runs f with a connection to the runtime.
func (c criClient) call(ctx context.Context, f func(ctx context.Context, rs runtimeapi.RuntimeServiceClient) error) error {
	conn, err := grpc.NewClient("unix://"+c.socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return f(ctx, runtimeapi.NewRuntimeServiceClient(conn))
}

// version asks the runtime its CRI Version.
func (c criClient) version(ctx context.Context) (*runtimeapi.VersionResponse, error) {
	var v *runtimeapi.VersionResponse
	err := c.call(ctx, func(ctx context.Context, rs runtimeapi.RuntimeServiceClient) error {
		var err error
		v, err = rs.Version(ctx, &runtimeapi.VersionRequest{})
		return err
	})
	return v, err
}

// handlerListed reports whether the runtime's CRI Status lists the handler;
// known is false when it lists no handlers at all (a runtime older than the
// field).
func (c criClient) handlerListed(ctx context.Context) (listed, known bool, err error) {
	err = c.call(ctx, func(ctx context.Context, rs runtimeapi.RuntimeServiceClient) error {
		status, err := rs.Status(ctx, &runtimeapi.StatusRequest{})
		if err != nil {
			return fmt.Errorf("CRI Status: %w", err)
		}
		for _, h := range status.GetRuntimeHandlers() {
			known = true
			if h.GetName() == nodesetup.HandlerName {
				listed = true
			}
		}
		return nil
	})
	return listed, known, err
}

// sandboxesOn lists the pod sandboxes (namespace/name) that run on handler.
func (c criClient) sandboxesOn(ctx context.Context, handler string) ([]string, error) {
	var out []string
	err := c.call(ctx, func(ctx context.Context, rs runtimeapi.RuntimeServiceClient) error {
		list, err := rs.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
		if err != nil {
			return fmt.Errorf("CRI ListPodSandbox: %w", err)
		}
		for _, sb := range list.GetItems() {
			if sb.GetRuntimeHandler() == handler {
				out = append(out, sb.GetMetadata().GetNamespace()+"/"+sb.GetMetadata().GetName())
			}
		}
		return nil
	})
	return out, err
}

// waitAnswer waits until the runtime answers CRI Version, served by a
// process other than notPID (0: any).
func (c criClient) waitAnswer(ctx context.Context, timeout time.Duration, notPID int32) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		_, err := c.version(ctx)
		if err == nil {
			pid := peerPID(c.socket)
			if notPID == 0 || pid == 0 || pid != notPID {
				return nil
			}
			err = fmt.Errorf("the socket is still served by PID %d, the runtime's before the restart", pid)
		}
		last = err
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted while waiting for the runtime on %s to answer: %w", c.socket, ctx.Err())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the runtime does not answer CRI Version on %s within %s: %w", c.socket, timeout, last)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// peerPID is the PID of the process serving the socket (SO_PEERCRED), 0
// when it is unknown: no answer, or a process outside this PID namespace
// (a pod without hostPID).
func peerPID(socket string) int32 {
	conn, err := net.DialTimeout("unix", socket, 2*time.Second)
	if err != nil {
		return 0
	}
	defer conn.Close()
	unixConn, ok := conn.(*net.UnixConn)
	if !ok {
		return 0
	}
	raw, err := unixConn.SyscallConn()
	if err != nil {
		return 0
	}
	var cred *syscall.Ucred
	if err := raw.Control(func(fd uintptr) {
		cred, err = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil || cred == nil {
		return 0
	}
	return cred.Pid
}

// restartRuntime restarts the runtime's systemd unit (<process>.service)
// with the node's own systemctl, chrooted into the node's root, then waits
// until a new process answers CRI on its socket.
//
// systemctl talks to the node's systemd over /run/systemd/private, which
// the node's root carries. In a chroot systemctl ignores start and restart
// requests unless told it is not offline (SYSTEMD_OFFLINE=0); the changed
// PID on the socket proves the restart happened, whatever systemctl said.
func restartRuntime(ctx context.Context, root string, rt runtimes.Runtime, cri criClient, timeout time.Duration, log io.Writer) error {
	unit := rt.Process + ".service"
	systemctl, err := nodeSystemctl(root)
	if err != nil {
		return err
	}
	before := peerPID(cri.socket)
	cmd := exec.CommandContext(ctx, systemctl, "restart", unit)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "SYSTEMD_OFFLINE=0", "LANG=C.UTF-8"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("systemctl restart %s (the node's systemctl, chrooted into %s): %w: %s", unit, root, err, strings.TrimSpace(string(out)))
	}
	if err := cri.waitAnswer(ctx, timeout, before); err != nil {
		return fmt.Errorf("after systemctl restart %s: %w", unit, err)
	}
	after := peerPID(cri.socket)
	switch {
	case before == 0 || after == 0:
		fmt.Fprintf(log, "node-setup: %s answers again, %s after the restart (its PID is not visible here: is the pod's hostPID on?)\n",
			rt.Name, time.Since(start).Round(100*time.Millisecond))
	default:
		fmt.Fprintf(log, "node-setup: %s answers again, %s after the restart (PID %d, was %d)\n",
			rt.Name, time.Since(start).Round(100*time.Millisecond), after, before)
	}
	return nil
}

// nodeSystemctl finds systemctl on the node: its path inside the node's root.
func nodeSystemctl(root string) (string, error) {
	for _, p := range []string{"/usr/bin/systemctl", "/bin/systemctl", "/usr/sbin/systemctl", "/sbin/systemctl"} {
		local, err := nodesetup.HostPath(root, p)
		if err != nil {
			continue
		}
		if info, err := os.Stat(local); err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New("the node has no systemctl (" + filepath.Join(root, "usr/bin/systemctl") + "): node-setup restarts runtimes through systemd only; restart the runtime yourself")
}
