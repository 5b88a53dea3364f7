// Package interrupt turns SIGINT and SIGTERM into cancellation: the first
// signal cancels the work, a second one cancels the cleanup too. Commands then
// exit with the shell's code for the signal (130 for INT, 143 for TERM).
package interrupt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Signals watches for the two signals.
type Signals struct {
	// Work is cancelled at the first signal; its cause is an *Error.
	Work context.Context
	// Cleanup is cancelled at the second signal: cleanup that takes it stops
	// and says what it left.
	Cleanup context.Context
	stop    func()
}

// Error is the cancellation cause of a signal.
type Error struct{ Signal os.Signal }

func (e *Error) Error() string {
	switch e.Signal {
	case syscall.SIGINT:
		return "interrupted (SIGINT)"
	case syscall.SIGTERM:
		return "terminated (SIGTERM)"
	}
	return fmt.Sprintf("stopped by signal %s", e.Signal)
}

// ExitCode is 128 + the signal's number, as shells report it.
func (e *Error) ExitCode() int {
	if s, ok := e.Signal.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 130
}

// Watch starts watching. Messages for the user go to out.
func Watch(parent context.Context, out io.Writer) *Signals {
	work, cancelWork := context.WithCancelCause(parent)
	cleanup, cancelCleanup := context.WithCancelCause(context.WithoutCancel(parent))
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			fmt.Fprintf(out, "\nfaultline: %v: stopping and cleaning up (signal again to skip the cleanup)\n", &Error{Signal: s})
			cancelWork(&Error{Signal: s})
		case <-done:
			return
		}
		select {
		case s := <-ch:
			fmt.Fprintf(out, "\nfaultline: %v again: skipping the rest of the cleanup\n", &Error{Signal: s})
			cancelCleanup(&Error{Signal: s})
		case <-done:
		}
	}()
	return &Signals{Work: work, Cleanup: cleanup, stop: func() {
		signal.Stop(ch)
		close(done)
		cancelWork(nil)
		cancelCleanup(nil)
	}}
}

// Stop stops watching.
func (s *Signals) Stop() { s.stop() }

// Caught returns the signal that cancelled ctx, if one did.
func Caught(ctx context.Context) (*Error, bool) {
	var e *Error
	if errors.As(context.Cause(ctx), &e) {
		return e, true
	}
	return nil, false
}
