package proc

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Cancelling a command stops its children too: a grandchild that ignores
// nothing still goes with its group.
func TestCancelStopsTheWholeGroup(t *testing.T) {
	pidFile := t.TempDir() + "/child.pid"
	ctx, cancel := context.WithCancel(context.Background())
	cmd := Command(ctx, syscall.SIGTERM, 2*time.Second, "sh", "-c", "sleep 300 & echo $! > "+pidFile+"; wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var child int
	deadline := time.Now().Add(10 * time.Second)
	for child == 0 {
		raw, _ := os.ReadFile(pidFile)
		child, _ = strconv.Atoi(strings.TrimSpace(string(raw)))
		if time.Now().After(deadline) {
			t.Fatal("the child did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	_ = cmd.Wait()
	deadline = time.Now().Add(5 * time.Second)
	for {
		err := syscall.Kill(child, 0)
		if errors.Is(err, syscall.ESRCH) {
			return
		}
		if stat, _ := os.ReadFile("/proc/" + strconv.Itoa(child) + "/stat"); strings.Contains(string(stat), ") Z ") {
			return // exited, waiting to be reaped by init
		}
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d still runs after cancel", child)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
