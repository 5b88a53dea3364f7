package interrupt

import (
	"context"
	"io"
	"syscall"
	"testing"
	"time"
)

func TestFirstSignalCancelsWorkSecondCancelsCleanup(t *testing.T) {
	s := Watch(context.Background(), io.Discard)
	defer s.Stop()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Work.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("work not cancelled by SIGINT")
	}
	caught, ok := Caught(s.Work)
	if !ok || caught.ExitCode() != 130 {
		t.Fatalf("Caught = %v, %v; want SIGINT, exit code 130", caught, ok)
	}
	if s.Cleanup.Err() != nil {
		t.Fatal("cleanup cancelled by the first signal")
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Cleanup.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("cleanup not cancelled by the second signal")
	}
}

func TestStopWithoutSignalIsNotAnInterrupt(t *testing.T) {
	s := Watch(context.Background(), io.Discard)
	s.Stop()
	if _, ok := Caught(s.Work); ok {
		t.Error("Stop looked like an interrupt")
	}
	if (&Error{Signal: syscall.SIGTERM}).ExitCode() != 143 {
		t.Error("SIGTERM's exit code is not 143")
	}
}
