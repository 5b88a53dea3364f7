// Command testpod is the workload of faultline's specs: it prints one line that a
// spec reads back from the pod's log, then waits to be stopped.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	message := flag.String("message", "faultline testpod running", "line to print once started")
	flag.Parse()
	fmt.Println(*message)
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	<-signals
}
