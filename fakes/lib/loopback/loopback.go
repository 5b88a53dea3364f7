// Package loopback is the one rule for every port faultline's pods serve
// (the fakes' HTTP sides, the CRI relay): the pod's loopback only, reached
// through a port-forward, so that nothing on the pod network can read a
// fake's records, trigger its controls or reach the node's CRI socket.
package loopback

import (
	"fmt"
	"net"
)

// Check accepts a host:port address whose host is a literal loopback IP
// (127.0.0.0/8, ::1). Names such as localhost are refused: the container's
// /etc/hosts decides what they mean.
func Check(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%q is not on a loopback IP such as 127.0.0.1: nothing on the pod network may reach it (use a port-forward)", addr)
	}
	return nil
}

// Listen listens on addr, which Check must accept.
func Listen(addr string) (net.Listener, error) {
	if err := Check(addr); err != nil {
		return nil, err
	}
	return net.Listen("tcp", addr)
}
