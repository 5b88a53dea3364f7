// Package interrupt_test proves that a Ctrl-C stops a real e2e run in time
// and leaves nothing running: it starts `faultline e2e`, interrupts it while
// kind is creating the cluster, and looks for what could be left. It needs a
// machine that can run kind (root, a Docker engine or the means to start
// one, the node image cached or buildable), so it runs only when asked:
//
//	FAULTLINE_INTERRUPT_TEST=1 go test ./test/interrupt -v -timeout 30m
package interrupt_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	cluster = "faultline-interrupt"
	// exitWithin is the longest a run may take from Ctrl-C to exit.
	exitWithin = 30 * time.Second
	// toCreation bounds reaching cluster creation: engine, test binary,
	// node and fakes images, with a cold cache.
	toCreation = 25 * time.Minute
)

func TestInterruptDuringClusterCreation(t *testing.T) {
	// Interrupt once kind has made a node container: creation is under way.
	interruptRun(t, []string{"--suite", "dra", "--label-filter", "smoke"}, "== create cluster", func() bool {
		return len(nodeContainers(t)) > 0
	})
}

func TestInterruptDuringSuites(t *testing.T) {
	// Interrupt once Ginkgo runs the specs (a transient-retry spec takes a
	// minute or more): ginkgo, its processes and their port-forwards must go
	// with the run, and the cluster and engine after them.
	interruptRun(t, []string{"--suite", "dra", "--focus", "transient failure until it succeeds"}, "Running in parallel across", func() bool {
		return specPodExists(t, "dra-prepare-")
	})
}

// specPodExists reports whether a pod runs in a namespace of the spec
// (the e2e framework names them <basename>-<n>), asked on the node.
func specPodExists(t *testing.T, namespacePrefix string) bool {
	t.Helper()
	out, err := exec.Command("docker", "exec", cluster+"-control-plane", "kubectl", "--kubeconfig", "/etc/kubernetes/admin.conf",
		"get", "pods", "-A", "--no-headers", "-o", "custom-columns=NS:.metadata.namespace").Output()
	if err != nil {
		return false
	}
	for _, ns := range strings.Fields(string(out)) {
		if strings.HasPrefix(ns, namespacePrefix) {
			return true
		}
	}
	return false
}

// interruptRun starts `faultline e2e args`, waits for a line containing
// trigger and then for ready (if any), sends SIGINT to the run's process
// group as a terminal's Ctrl-C would, and checks the exit code, the time it
// took and that nothing the run started is left.
func interruptRun(t *testing.T, args []string, trigger string, ready func() bool) {
	if os.Getenv("FAULTLINE_INTERRUPT_TEST") != "1" {
		t.Skip("set FAULTLINE_INTERRUPT_TEST=1 to run a real e2e run and interrupt it (needs root and a machine that runs kind)")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "faultline")
	build := exec.Command("go", "build", "-o", bin, "./cmd/faultline")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build faultline: %v\n%s", err, out)
	}
	engineBefore := dockerdRunning()
	if exists(t, cluster) {
		t.Fatalf("a cluster %q exists before the test: remove it (kind delete cluster --name %s)", cluster, cluster)
	}

	artifacts := t.TempDir()
	run := exec.Command(bin, append([]string{"e2e", "--cluster-name", cluster, "--artifacts", artifacts}, args...)...)
	run.Dir = root
	// A group of its own, signalled as a whole: what a terminal's Ctrl-C does.
	run.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := run.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	run.Stdout = run.Stderr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := run.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })

	reached := make(chan struct{})
	var log strings.Builder
	lines := make(chan string, 1024)
	go func() {
		scanner := bufio.NewScanner(out)
		for scanner.Scan() {
			lines <- scanner.Text()
		}
		close(lines)
	}()
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		once := false
		for line := range lines {
			log.WriteString(line + "\n")
			if !once && strings.Contains(line, trigger) {
				once = true
				close(reached)
			}
		}
	}()

	select {
	case <-reached:
	case <-readDone:
		t.Fatalf("the run ended before %q", trigger)
	case <-time.After(toCreation):
		t.Fatalf("the run did not reach %q within %s", trigger, toCreation)
	}
	if ready != nil {
		deadline := time.Now().Add(2 * time.Minute)
		for !ready() {
			if time.Now().After(deadline) {
				t.Fatal("the moment to interrupt did not come within 2m")
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	interrupted := time.Now()
	if err := syscall.Kill(-pgid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { <-readDone; waited <- run.Wait() }()
	select {
	case err = <-waited:
	case <-time.After(exitWithin + 30*time.Second):
		t.Fatalf("the run had not exited %s after SIGINT\n%s", time.Since(interrupted), log.String())
	}
	took := time.Since(interrupted)
	t.Logf("the run's output:\n%s", log.String())
	t.Logf("exited %s after SIGINT", took.Round(100*time.Millisecond))

	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 {
		t.Errorf("exit: %v, want code 130", err)
	}
	if took > exitWithin {
		t.Errorf("took %s from SIGINT to exit, want at most %s", took, exitWithin)
	}
	if left := nodeContainers(t); len(left) > 0 {
		t.Errorf("node containers left: %v", left)
	}
	if exists(t, cluster) {
		t.Errorf("cluster %s is left", cluster)
	}
	if !engineBefore && dockerdRunning() {
		t.Errorf("the run started dockerd and left it running")
	}
	if err := syscall.Kill(-pgid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("processes of the run's group are left: %v", processesOfGroup(pgid))
	}
	for _, name := range []string{"ginkgo", "faultline.test", "kind"} {
		if pids := processesNamed(name); len(pids) > 0 {
			t.Errorf("%s processes left: %v", name, pids)
		}
	}
	if !strings.Contains(log.String(), "interrupted") {
		t.Errorf("the run did not say it was interrupted")
	}
}

func nodeContainers(t *testing.T) []string {
	t.Helper()
	if !dockerAnswers() {
		return nil
	}
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label=io.x-k8s.kind.cluster="+cluster).Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	return strings.Fields(string(out))
}

func exists(t *testing.T, name string) bool {
	t.Helper()
	if !dockerAnswers() {
		return false
	}
	out, err := exec.Command("docker", "ps", "-a", "--format", "{{.Label \"io.x-k8s.kind.cluster\"}}").Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	for _, c := range strings.Fields(string(out)) {
		if c == name {
			return true
		}
	}
	return false
}

func dockerAnswers() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, "docker", "info").Run() == nil
}

func dockerdRunning() bool { return len(processesNamed("dockerd")) > 0 }

// processesNamed lists live processes whose command name is name.
func processesNamed(name string) []string {
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil || strings.TrimSpace(string(comm)) != name {
			continue
		}
		if state(e.Name()) != "Z" {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

func processesOfGroup(pgid int) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 2 && fields[2] == fmt.Sprint(pgid) {
			comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
			out = append(out, e.Name()+" "+strings.TrimSpace(string(comm)))
		}
	}
	return out
}

func state(pid string) string {
	stat, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return ""
	}
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) == 0 {
		return ""
	}
	return fields[0]
}
