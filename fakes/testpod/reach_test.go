package main

import (
	"net"
	"strings"
	"testing"
	"time"
)

func TestReachAnswersAndMissing(t *testing.T) {
	served, err := startServing("127.0.0.1:0", "hello from node-a")
	if err != nil {
		t.Fatal(err)
	}
	addr := served.String()
	answers, err := reachAll([]string{addr}, 5*time.Second)
	if err != nil || len(answers) != 1 || answers[0] != addr+": hello from node-a" {
		t.Fatalf("reachAll(%s) = %q, %v; want its line", addr, answers, err)
	}

	// A port nobody listens on: named in the error, after the timeout.
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	answers, err = reachAll([]string{addr, deadAddr}, 2*time.Second)
	if err == nil || !strings.Contains(err.Error(), deadAddr) || len(answers) != 1 {
		t.Fatalf("reachAll with a dead target = %q, %v; want one answer and an error naming %s", answers, err, deadAddr)
	}

	if _, err := reachAll([]string{"no-port"}, time.Second); err == nil || !strings.Contains(err.Error(), "want host:port") {
		t.Fatalf("reachAll(no-port) error = %v; want a host:port complaint", err)
	}
}
