// Command testpod is the workload of faultline's specs: it prints one line that a
// spec reads back from the pod's log, then waits to be stopped.
//
// The multi-node clusters' pod network check (clusters/kindcluster) runs it
// two more ways: with --serve it also answers TCP connections with its line,
// and with --reach it dials other pods until each answers, then exits.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	message := flag.String("message", "faultline testpod running", "line to print once started")
	serve := flag.String("serve", "", "also answer every TCP connection on this address (e.g. :8080) with the message line")
	reach := flag.String("reach", "", "comma-separated host:port list: dial each until it answers with a line, print the answers, exit 0 when all answered (1 after --reach-timeout)")
	reachTimeout := flag.Duration("reach-timeout", time.Minute, "how long --reach keeps trying")
	flag.Parse()
	if flag.NArg() > 0 {
		fail("unexpected arguments %q", flag.Args())
	}
	if *reach != "" {
		if *serve != "" {
			fail("--reach and --serve exclude each other")
		}
		answers, err := reachAll(strings.Split(*reach, ","), *reachTimeout)
		for _, a := range answers {
			fmt.Println(a)
		}
		if err != nil {
			fail("%v", err)
		}
		return
	}
	fmt.Println(*message)
	if *serve != "" {
		if _, err := startServing(*serve, *message); err != nil {
			fail("%v", err)
		}
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	<-signals
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "testpod: "+format+"\n", args...)
	os.Exit(1)
}
