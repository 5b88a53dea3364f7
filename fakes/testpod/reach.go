package main

// TCP answers between pods, for the pod network check: a server pod answers
// each connection with its line and closes it; a client pod dials each
// server until it answers. Nothing is read from the caller, so the server
// has nothing to parse.

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// startServing answers every connection on addr with line, in the
// background, and returns the address it listens on.
func startServing(addr, line string) (net.Addr, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			go func() {
				defer conn.Close()
				_ = conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
				_, _ = fmt.Fprintln(conn, line)
			}()
		}
	}()
	return l.Addr(), nil
}

// reachAll dials every target until it answers with a line or timeout
// passes, and returns one "<target>: <answer>" per target that answered;
// the error names those that did not, with the last reason for each.
func reachAll(targets []string, timeout time.Duration) ([]string, error) {
	deadline := time.Now().Add(timeout)
	answers := make([]string, 0, len(targets))
	var missing []string
	for _, target := range targets {
		target = strings.TrimSpace(target)
		if _, _, err := net.SplitHostPort(target); err != nil {
			return answers, fmt.Errorf("reach %q: want host:port", target)
		}
		answer, err := reachOne(target, deadline)
		if err != nil {
			missing = append(missing, fmt.Sprintf("%s (%v)", target, err))
			continue
		}
		answers = append(answers, target+": "+answer)
	}
	if len(missing) > 0 {
		return answers, fmt.Errorf("no answer within %s from %s", timeout, strings.Join(missing, ", "))
	}
	return answers, nil
}

// reachOne dials target once a second until it answers with a line or the
// deadline passes.
func reachOne(target string, deadline time.Time) (string, error) {
	for {
		answer, err := readLine(target, 3*time.Second)
		if err == nil {
			return answer, nil
		}
		if time.Now().Add(time.Second).After(deadline) {
			return "", err
		}
		time.Sleep(time.Second) // the next attempt, not a wait for a result
	}
}

func readLine(target string, timeout time.Duration) (string, error) {
	conn, err := net.DialTimeout("tcp", target, timeout)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(timeout))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("read its line: %w", err)
	}
	return strings.TrimSpace(line), nil
}
