package cachelock

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The holder is this test binary run again: flock conflicts only between
// open files, and a second process is what a second faultline run is.
const holderEnv = "FAULTLINE_CACHELOCK_TEST_HOLDER"

// TestHolder is the subprocess: it takes the lock on the directory in
// holderEnv ("raw:DIR" flocks without writing who it is), says "held", and
// keeps the lock until its stdin closes. "try:DIR" only tries to lock: exit
// 0 when it could, 3 when another process holds it.
func TestHolder(t *testing.T) {
	spec := os.Getenv(holderEnv)
	if spec == "" {
		t.Skip("only run as a subprocess of the other tests")
	}
	if dir, ok := strings.CutPrefix(spec, "try:"); ok {
		f, err := os.Open(filepath.Join(dir, FileName))
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			os.Exit(3)
		}
		os.Exit(0)
	}
	if dir, ok := strings.CutPrefix(spec, "raw:"); ok {
		f, err := os.OpenFile(filepath.Join(dir, FileName), os.O_RDWR|os.O_CREATE, 0o644)
		if err == nil {
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		}
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
	} else {
		l, err := Acquire(context.Background(), spec, os.Stderr)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		defer l.Release()
	}
	fmt.Println("held")
	_, _ = io.Copy(io.Discard, os.Stdin)
}

type holder struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// startHolder starts a process that holds the lock on dir, and returns once
// it does.
func startHolder(t *testing.T, spec string) *holder {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHolder$", "-test.count=1")
	cmd.Env = append(os.Environ(), holderEnv+"="+spec)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &holder{cmd: cmd, stdin: stdin}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "held" {
		t.Fatalf("holder said %q (%v)", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return h
}

// syncBuffer is a log written by one goroutine and read by the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type result struct {
	l   *Lock
	err error
}

func acquireAsync(ctx context.Context, dir string, log io.Writer) chan result {
	ch := make(chan result, 1)
	go func() {
		l, err := Acquire(ctx, dir, log)
		ch <- result{l, err}
	}()
	return ch
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A second run waits, says once which process holds the lock, and goes on
// when it is released; goroutines of one run wait together.
func TestSecondProcessWaitsAndNamesTheHolder(t *testing.T) {
	dir := t.TempDir()
	h := startHolder(t, dir)
	var log syncBuffer
	first := acquireAsync(context.Background(), dir, &log)
	second := acquireAsync(context.Background(), dir, &log)
	want := fmt.Sprintf("waiting for the cache lock at %s held by PID %d (cachelock.test, started ", filepath.Join(evalDir(t, dir), FileName), h.cmd.Process.Pid)
	waitFor(t, "the waiting message", func() bool { return strings.Contains(log.String(), want) })
	t.Logf("said: %s", strings.TrimSpace(log.String()))
	time.Sleep(5 * pollInterval) // several tries, still one message
	if n := strings.Count(log.String(), "waiting for"); n != 1 {
		t.Fatalf("%d waiting messages, want 1:\n%s", n, log.String())
	}
	select {
	case r := <-first:
		t.Fatalf("got the lock while another process holds it (%v)", r.err)
	default:
	}
	h.stdin.Close() // the holder releases and exits
	for _, ch := range []chan result{first, second} {
		select {
		case r := <-ch:
			if r.err != nil {
				t.Fatal(r.err)
			}
			defer r.l.Release()
		case <-time.After(10 * time.Second):
			t.Fatal("still waiting after the holder released the lock")
		}
	}
	if !strings.Contains(log.String(), "took the cache lock at ") {
		t.Errorf("no line once the lock was taken:\n%s", log.String())
	}
	raw, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	var info Info
	if err := json.Unmarshal(raw, &info); err != nil || info.PID != os.Getpid() {
		t.Fatalf("lock file names %+v (%v), want this process %d", info, err, os.Getpid())
	}
}

func TestCancelStopsTheWait(t *testing.T) {
	dir := t.TempDir()
	startHolder(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	ch := acquireAsync(ctx, dir, io.Discard)
	time.Sleep(3 * pollInterval)
	cancel()
	select {
	case r := <-ch:
		if !errors.Is(r.err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", r.err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the wait did not stop on cancel")
	}
}

// SIGKILL leaves no stale lock: the kernel releases it with the process, and
// the dead holder's details do not stop the next run.
func TestKilledHolderReleases(t *testing.T) {
	dir := t.TempDir()
	h := startHolder(t, dir)
	var log syncBuffer
	ch := acquireAsync(context.Background(), dir, &log)
	waitFor(t, "the waiting message", func() bool { return strings.Contains(log.String(), "waiting for") })
	if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatal(r.err)
		}
		r.l.Release()
	case <-time.After(10 * time.Second):
		t.Fatal("still waiting after the holder was killed")
	}
}

// A lock file left by a killed run names a dead PID. While a process holds
// the lock without having written its own details, the message must not
// name that dead PID.
func TestStaleInfoIsNotNamed(t *testing.T) {
	dir := t.TempDir()
	h := startHolder(t, dir)
	dead := h.cmd.Process.Pid
	_ = h.cmd.Process.Kill()
	_ = h.cmd.Wait()
	raw, _ := os.ReadFile(filepath.Join(dir, FileName))
	if !strings.Contains(string(raw), strconv.Itoa(dead)) {
		t.Fatalf("the killed holder's details are not in the file: %q", raw)
	}
	startHolder(t, "raw:"+dir)
	defer func(g time.Duration) { infoGrace = g }(infoGrace)
	infoGrace = 300 * time.Millisecond
	var log syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	ch := acquireAsync(ctx, dir, &log)
	waitFor(t, "the waiting message", func() bool { return strings.Contains(log.String(), "waiting for") })
	cancel()
	<-ch
	if got := log.String(); strings.Contains(got, strconv.Itoa(dead)) || !strings.Contains(got, "held by another process") {
		t.Fatalf("message: %q (dead holder was PID %d)", got, dead)
	}
}

// One process takes the lock once, however many builds in it ask (through
// whichever name of the directory); another process gets it only when the
// last of them releases.
func TestReentrantWithinAProcess(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(t.TempDir(), "cache")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	var locks []*Lock
	for _, d := range []string{dir, link, dir} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		l, err := Acquire(ctx, d, io.Discard)
		cancel()
		if err != nil {
			t.Fatalf("Acquire(%s) while this process holds it: %v", d, err)
		}
		locks = append(locks, l)
	}
	if otherProcessCanLock(t, dir) {
		t.Fatal("another process got the lock this process holds")
	}
	locks[0].Release()
	locks[0].Release() // twice: still one reference
	locks[1].Release()
	if otherProcessCanLock(t, dir) {
		t.Fatal("another process got the lock while one reference is left")
	}
	locks[2].Release()
	if !otherProcessCanLock(t, dir) {
		t.Fatal("the lock is still held after every reference was released")
	}
	if raw, _ := os.ReadFile(filepath.Join(dir, FileName)); len(raw) != 0 {
		t.Errorf("a released lock still names its holder: %q", raw)
	}
}

// otherProcessCanLock tries a non-blocking flock from a child process.
func otherProcessCanLock(t *testing.T, dir string) bool {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHolder$", "-test.count=1")
	cmd.Env = append(os.Environ(), holderEnv+"=try:"+dir)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return true
	case errors.As(err, &exit) && exit.ExitCode() == 3:
		return false
	}
	t.Fatalf("%v: %s", err, out)
	return false
}

func TestWaitingMessage(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 7, 10, 0, time.Local)
	host, _ := os.Hostname()
	info := Info{PID: 4242, Host: host, Started: time.Date(2026, 11, 24, 12, 3, 4, 0, time.Local),
		Args: []string{"/tmp/go-build1/exe/faultline", "e2e", "--runtime", "all"}}
	got := waitingMessage("/c/faultline.lock", info, true, now)
	want := "waiting for the cache lock at /c/faultline.lock held by PID 4242 (faultline e2e, started 12:03:04, 4 min ago)"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	info.Started = now.Add(-26 * time.Hour)
	if got := waitingMessage("/c/faultline.lock", info, true, now); !strings.Contains(got, "started 2026-11-23 10:07:10, 26 h 0 min ago") {
		t.Errorf("a day-old holder: %q", got)
	}
	if got := waitingMessage("/c/faultline.lock", Info{}, false, now); got != "waiting for the cache lock at /c/faultline.lock, held by another process (it has not said which)" {
		t.Errorf("unknown holder: %q", got)
	}
}

func evalDir(t *testing.T, dir string) string {
	t.Helper()
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return real
}
