// Package proc runs the programs a faultline run starts (go, ginkgo, docker)
// in process groups of their own, so that cancelling the run stops each of
// them with everything it started, and a terminal's Ctrl-C reaches faultline
// alone, which then stops them in order.
package proc

import (
	"context"
	"os/exec"
	"syscall"
	"time"
)

// Command is exec.CommandContext, but on cancellation the whole process group
// gets stop (SIGINT lets ginkgo report and clean up; SIGTERM for the rest),
// and SIGKILL after grace.
func Command(ctx context.Context, stop syscall.Signal, grace time.Duration, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return signalGroup(cmd, stop) }
	cmd.WaitDelay = grace
	return cmd
}

// KillGroup kills what is left of a command's process group (after Wait: a
// child that outlived its parent).
func KillGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

func signalGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	if cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, sig)
	if err == syscall.ESRCH {
		return nil
	}
	if err == nil {
		// WaitDelay kills only the leader; take the group down with it.
		go func(pid int, grace time.Duration) {
			time.Sleep(grace)
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}(cmd.Process.Pid, cmd.WaitDelay)
	}
	return err
}
