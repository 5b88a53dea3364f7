// Package engine makes sure a Docker engine that can run privileged kind nodes
// answers, and stops only an engine it started itself.
//
// Where a working engine exists (a GitHub runner, a workstation) it does
// nothing. Otherwise it installs Debian's docker.io and starts dockerd in a
// session of its own (a Ctrl-C in the terminal must not kill the engine under
// running nodes: the run stops it in order). On hosts whose capability bounding
// set is incomplete it registers runc-capfilter as the default runtime, so that
// --privileged containers can start.
package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/faultline-k8s/faultline/clusters/engine/capfilter"
)

// Options say where the engine's files go.
type Options struct {
	// RepoRoot is the faultline checkout runc-capfilter is built from.
	RepoRoot string
	// StateDir holds the marker of an engine faultline started.
	StateDir string
	// LogFile is dockerd's log.
	LogFile string
	// Wrapper is where runc-capfilter is installed.
	Wrapper string
	// Out gets one line per thing done.
	Out io.Writer
}

// DefaultOptions are the engine's paths on a machine faultline set up.
func DefaultOptions(repoRoot string, out io.Writer) Options {
	return Options{
		RepoRoot: repoRoot,
		StateDir: "/run/faultline-engine",
		LogFile:  "/var/log/faultline-dockerd.log",
		Wrapper:  "/usr/local/libexec/faultline/runc-capfilter",
		Out:      out,
	}
}

// Engine is the engine a run uses.
type Engine struct {
	opts Options
	// Started: this process started dockerd and must stop it.
	Started bool
	cmd     *exec.Cmd
	exited  chan struct{}
}

const answerTimeout = 60 * time.Second

// Answers reports whether a Docker engine answers.
func Answers(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, "docker", "info").Run() == nil
}

// Ensure uses an engine that answers, or installs and starts one. The
// returned Engine is non-nil whenever dockerd was started, also with an error
// (it started but did not answer in time): Stop it.
func Ensure(ctx context.Context, opts Options) (*Engine, error) {
	e := &Engine{opts: opts}
	if Answers(ctx) {
		e.say("a Docker engine answers; using it")
		return e, nil
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("the Docker engine does not answer and only root can start one here")
	}
	if err := install(ctx, opts.Out); err != nil {
		return nil, err
	}
	args := []string{"--pidfile", filepath.Join(opts.StateDir, "dockerd.pid")}
	missing, err := capfilter.HostMissing()
	if err != nil {
		return nil, fmt.Errorf("read the host's capability bounding set: %w", err)
	}
	if len(missing) > 0 {
		e.say("host lacks %s from its capability bounding set: using runc-capfilter", strings.Join(missing, " "))
		if err := buildWrapper(ctx, opts); err != nil {
			return nil, err
		}
		args = append(args, "--add-runtime", "faultline-capfilter="+opts.Wrapper, "--default-runtime", "faultline-capfilter")
	}
	for _, dir := range []string{opts.StateDir, filepath.Dir(opts.LogFile)} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	log, err := os.OpenFile(opts.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	e.say("starting dockerd (log: %s)", opts.LogFile)
	cmd := exec.Command("dockerd", args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start dockerd: %w", err)
	}
	// From here on the engine is ours, whatever happens next: the marker
	// lets `faultline engine stop` find it if this process is killed.
	e.Started, e.cmd, e.exited = true, cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(e.exited) }()
	if err := writeMarker(opts.StateDir, cmd.Process.Pid); err != nil {
		return e, err
	}
	deadline := time.Now().Add(answerTimeout)
	for !Answers(ctx) {
		select {
		case <-e.exited:
			return e, fmt.Errorf("dockerd exited while starting; see %s", opts.LogFile)
		case <-ctx.Done():
			return e, context.Cause(ctx)
		case <-time.After(500 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return e, fmt.Errorf("dockerd did not answer within %s; see %s", answerTimeout, opts.LogFile)
		}
	}
	e.say("dockerd is up")
	return e, nil
}

// Stop stops dockerd if this process started it: SIGTERM (dockerd stops its
// containers), SIGKILL after the context's deadline.
func (e *Engine) Stop(ctx context.Context) error {
	if e == nil || !e.Started {
		return nil
	}
	e.say("stopping dockerd (pid %d)", e.cmd.Process.Pid)
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.exited:
	case <-ctx.Done():
		_ = e.cmd.Process.Kill()
		<-e.exited
		e.say("dockerd did not stop in time; killed it")
	}
	_ = os.Remove(markerPath(e.opts.StateDir))
	e.Started = false
	return nil
}

// Keep leaves the engine running after this process (a --keep run): the
// marker stays so `faultline engine stop` can stop it later.
func (e *Engine) Keep() {
	if e != nil && e.Started {
		e.say("keeping dockerd (pid %d) running; `faultline engine stop` stops it", e.cmd.Process.Pid)
		e.Started = false
	}
}

// StopStarted stops an engine an earlier faultline process started and left
// (a --keep run, or one that was killed), after checking that the marker's
// process is still that dockerd.
func StopStarted(ctx context.Context, opts Options) error {
	pid, err := readMarker(opts.StateDir)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintln(opts.Out, "no engine started by faultline; leaving any other alone")
		return nil
	}
	if err != nil {
		return err
	}
	if !isDockerd(pid) {
		fmt.Fprintf(opts.Out, "the engine faultline started (pid %d) is gone; removing its marker\n", pid)
		return os.Remove(markerPath(opts.StateDir))
	}
	fmt.Fprintf(opts.Out, "stopping dockerd (pid %d)\n", pid)
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for isDockerd(pid) {
		select {
		case <-ctx.Done():
			_ = syscall.Kill(pid, syscall.SIGKILL)
			return fmt.Errorf("dockerd (pid %d) did not stop in time; killed it", pid)
		case <-time.After(250 * time.Millisecond):
		}
	}
	return os.Remove(markerPath(opts.StateDir))
}

func (e *Engine) say(format string, args ...any) {
	fmt.Fprintf(e.opts.Out, "engine: "+format+"\n", args...)
}

func markerPath(stateDir string) string { return filepath.Join(stateDir, "started-by-faultline") }

func writeMarker(stateDir string, pid int) error {
	return os.WriteFile(markerPath(stateDir), []byte(strconv.Itoa(pid)+"\n"), 0o644)
}

func readMarker(stateDir string) (int, error) {
	raw, err := os.ReadFile(markerPath(stateDir))
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return 0, fmt.Errorf("engine marker %s: %w", markerPath(stateDir), err)
	}
	return pid, nil
}

// isDockerd reports whether pid is a running dockerd (a recycled PID is not).
func isDockerd(pid int) bool {
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err == nil {
		// a zombie has exited; only its parent has not reaped it yet
		if fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(fields) > 0 && fields[0] == "Z" {
			return false
		}
	}
	return strings.TrimSpace(string(comm)) == "dockerd"
}

func install(ctx context.Context, out io.Writer) error {
	if _, err := exec.LookPath("dockerd"); err == nil {
		return nil
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return errors.New("no Docker engine and no apt-get: install a Docker engine, then re-run")
	}
	fmt.Fprintln(out, "engine: installing Debian's docker.io")
	return AptInstall(ctx, out, "docker.io")
}

// AptInstall installs Debian packages (as root), after one apt-get update.
func AptInstall(ctx context.Context, out io.Writer, packages ...string) error {
	if len(packages) == 0 {
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("missing %s: install them (Debian: apt-get install %s)", strings.Join(packages, " "), strings.Join(packages, " "))
	}
	env := append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	update := exec.CommandContext(ctx, "apt-get", "update", "-qq")
	update.Env = env
	if err := update.Run(); err != nil {
		fmt.Fprintf(out, "apt-get update reported errors (%v); trying the install anyway\n", err)
	}
	install := exec.CommandContext(ctx, "apt-get", append([]string{"install", "-y", "-qq", "--no-install-recommends"}, packages...)...)
	install.Env = env
	if raw, err := install.CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get install %s: %v\n%s", strings.Join(packages, " "), err, raw)
	}
	return nil
}

func buildWrapper(ctx context.Context, opts Options) error {
	if err := os.MkdirAll(filepath.Dir(opts.Wrapper), 0o755); err != nil {
		return err
	}
	build := exec.CommandContext(ctx, "go", "build", "-o", opts.Wrapper, "./clusters/engine/cmd/runc-capfilter")
	build.Dir = opts.RepoRoot
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if raw, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build runc-capfilter: %v\n%s", err, raw)
	}
	return nil
}
