// Package cachelock lets one faultline process at a time build into a cache
// directory (node image parts, build logs, patched sources, the fakes image
// archive). Two runs on one machine would otherwise write the same
// .partial directories, throwaway modules and logs at once.
//
// The lock is flock(2) on a file in the cache directory: advisory, and
// released by the kernel when the holding process exits, however it exits,
// so a killed run never leaves a stale lock. The holder writes its PID, start
// time and command line into the file so that a second run can say which run
// it waits for.
//
// The lock belongs to the process, not to a goroutine: within one process,
// Acquire on a directory already held only counts a reference, so builds
// that run side by side (or nested: a run around its builds) share it.
package cachelock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// FileName is the lock file inside the cache directory. It is never
// removed: a process that removed it could unlock a file another process
// has just opened, and a third would then lock a new one beside it.
const FileName = "faultline.lock"

var (
	// pollInterval is how often a waiter tries again: a blocking flock
	// could not be cancelled, polling stops promptly on Ctrl-C.
	pollInterval = 200 * time.Millisecond
	// infoGrace is how long a waiter waits for the holder to write who it
	// is (it writes just after it locks) before saying it does not know.
	infoGrace = 2 * time.Second
)

// processStart stands for the process's start time: package variables are
// set before main runs.
var processStart = time.Now()

// Info is what the holder writes into the lock file.
type Info struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host,omitempty"`
	Started time.Time `json:"started"` // the process's start
	Locked  time.Time `json:"locked"`  // when it took the lock
	Args    []string  `json:"args,omitempty"`
}

// Lock is one reference to this process's hold on a cache directory.
type Lock struct {
	e    *entry
	once sync.Once
}

// entry is this process's hold on one directory.
type entry struct {
	// turn is held (a value sent) by the one goroutine taking the flock, so
	// that others wait for it instead of opening a second descriptor, which
	// flock would see as a conflict with this very process.
	turn chan struct{}
	refs int      // guarded by mu
	f    *os.File // guarded by mu; nil while not held
	path string
}

var (
	mu      sync.Mutex
	entries = map[string]*entry{} // by the lock file's resolved path
)

// Acquire takes the lock on dir (created if missing) for this process. If
// another process holds it, Acquire says once on log which process that is
// and waits until it is released or ctx is done. Release the returned Lock
// when done building; the flock goes when the last reference does.
func Acquire(ctx context.Context, dir string, log io.Writer) (*Lock, error) {
	if log == nil {
		log = io.Discard
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cache directory: %w", err)
	}
	// Resolved, so that one directory reached by two names (a symlink)
	// is one entry, not two descriptors that conflict.
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("cache directory: %w", err)
	}
	real, err = filepath.Abs(real)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(real, FileName)

	mu.Lock()
	e := entries[path]
	if e == nil {
		e = &entry{turn: make(chan struct{}, 1), path: path}
		entries[path] = e
	}
	mu.Unlock()

	select {
	case e.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the cache lock at %s: %w", path, context.Cause(ctx))
	}
	defer func() { <-e.turn }()

	mu.Lock()
	if e.f != nil {
		e.refs++
		mu.Unlock()
		return &Lock{e: e}, nil
	}
	mu.Unlock()

	f, err := lockFile(ctx, path, log)
	if err != nil {
		return nil, err
	}
	mu.Lock()
	e.f, e.refs = f, 1
	mu.Unlock()
	return &Lock{e: e}, nil
}

// Release drops this reference; the last one unlocks. Calling it again does
// nothing.
func (l *Lock) Release() {
	if l == nil {
		return
	}
	l.once.Do(func() {
		mu.Lock()
		defer mu.Unlock()
		l.e.refs--
		if l.e.refs > 0 || l.e.f == nil {
			return
		}
		// Cleared first, so nobody reads this process's details after it
		// let go.
		_ = l.e.f.Truncate(0)
		_ = l.e.f.Close()
		l.e.f = nil
	})
}

// lockFile opens path and flocks it, waiting while another process holds it.
func lockFile(ctx context.Context, path string, log io.Writer) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	writable := err == nil
	if errors.Is(err, os.ErrPermission) {
		// A cache another user made: a read-only descriptor locks too,
		// it just cannot say who holds it.
		f, err = os.Open(path)
	}
	if err != nil {
		return nil, fmt.Errorf("cache lock: %w", err)
	}
	start := time.Now()
	told := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("cache lock %s: %w", path, err)
		}
		if !told {
			info, known := readHolder(path)
			if known && info.PID == os.Getpid() && info.Started.Equal(processStart) {
				// Only a second name for this directory that resolves to
				// another file (a bind mount) gets here; waiting would be forever.
				f.Close()
				return nil, fmt.Errorf("the cache lock at %s is held by this process under another path", path)
			}
			if known || time.Since(start) >= infoGrace {
				fmt.Fprintln(log, waitingMessage(path, info, known, time.Now()))
				told = true
			}
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for the cache lock at %s: %w", path, context.Cause(ctx))
		case <-time.After(pollInterval):
		}
	}
	if told {
		fmt.Fprintf(log, "took the cache lock at %s after %s\n", path, roundWait(time.Since(start)))
	}
	if writable {
		host, _ := os.Hostname()
		raw, _ := json.Marshal(Info{PID: os.Getpid(), Host: host, Started: processStart, Locked: time.Now(), Args: os.Args})
		// Best effort: the details only serve the message of a waiter.
		if f.Truncate(0) == nil {
			_, _ = f.WriteAt(append(raw, '\n'), 0)
		}
	}
	return f, nil
}

// readHolder reads the holder's details; known is false when there are none
// or they are stale: left by a killed process (its PID is gone), or not yet
// replaced by the holder that just took the lock.
func readHolder(path string) (info Info, known bool) {
	raw, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(raw, &info) != nil || info.PID <= 0 {
		return Info{}, false
	}
	host, _ := os.Hostname()
	if info.Host != "" && info.Host != host {
		return info, true // another machine's PID: nothing to check here
	}
	return info, alive(info.PID)
}

// alive says whether a process with this PID exists (EPERM: it does, as
// another user's).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// waitingMessage is the one line a waiter prints.
func waitingMessage(path string, info Info, known bool, now time.Time) string {
	if !known {
		return fmt.Sprintf("waiting for the cache lock at %s, held by another process (it has not said which)", path)
	}
	who := fmt.Sprintf("PID %d", info.PID)
	if host, _ := os.Hostname(); info.Host != "" && info.Host != host {
		who += " on " + info.Host
	}
	var details []string
	if c := command(info.Args); c != "" {
		details = append(details, c)
	}
	if !info.Started.IsZero() {
		details = append(details, "started "+clock(info.Started, now)+", "+ago(now.Sub(info.Started)))
	}
	if len(details) == 0 {
		return fmt.Sprintf("waiting for the cache lock at %s held by %s", path, who)
	}
	return fmt.Sprintf("waiting for the cache lock at %s held by %s (%s)", path, who, strings.Join(details, ", "))
}

// command is the program's name and its subcommand: "faultline e2e", not
// every flag.
func command(args []string) string {
	if len(args) == 0 {
		return ""
	}
	parts := []string{filepath.Base(args[0])}
	for _, a := range args[1:] {
		if strings.HasPrefix(a, "-") || len(parts) == 3 {
			break
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// clock is the time of day, with the date when it is not today's.
func clock(t, now time.Time) string {
	t, now = t.Local(), now.Local()
	if y, m, d := t.Date(); y == now.Year() && m == now.Month() && d == now.Day() {
		return t.Format("15:04:05")
	}
	return t.Format("2006-01-02 15:04:05")
}

func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s ago", max(0, int(d.Seconds())))
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	default:
		return fmt.Sprintf("%d h %d min ago", int(d.Hours()), int(d.Minutes())%60)
	}
}

func roundWait(d time.Duration) time.Duration {
	if d < time.Minute {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}
