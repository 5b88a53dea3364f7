package ociruntime

// Gates: a creation runc-slow holds until the spec releases it, so that a
// spec fixes the interleaving it checks (released before the caller's
// deadline, after it, while a retry waits) instead of betting on a delay.
// The spec releases a request through the CRI relay, which makes the
// request's file in the gate directory; runc-slow polls for it. A gate is
// released once for a request: every later creation of it runs at once.
// The delay the annotations ask is the hold's bound, so a spec that never
// releases (interrupted, or killed) cannot wedge the node. A release can
// also fail the held creation, once (ReleaseFailing): the runtime's create
// then fails after its caller has gone, at the moment the spec chooses.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

const (
	// HoldAnnotation ("true") turns the delay of a creation into a hold:
	// runc-slow waits until the request is released, at most the delay.
	HoldAnnotation = "cri.faultline.k8s.io/hold-until-released"
	// GateDir is where releases are made, on the node (a tmpfs: a reboot
	// forgets them).
	GateDir = "/run/faultline/gates"
	// gatePoll is how often a hold looks for its release.
	gatePoll = 20 * time.Millisecond
	// maxRequest bounds a request's name: a spec's token is a namespace
	// name.
	maxRequest = 63
)

// CheckRequest says whether request can name a gate: a DNS label, so that
// it is one plain file name.
func CheckRequest(request string) error {
	if request == "" || len(request) > maxRequest {
		return fmt.Errorf("request %s: want 1 to %d characters", quote(request), maxRequest)
	}
	for i, c := range request {
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' && i > 0 && i < len(request)-1
		if !ok {
			return fmt.Errorf("request %s: want lower-case letters, digits and inner '-'", quote(request))
		}
	}
	return nil
}

// Release opens the gate of request in dir (idempotent).
func Release(dir, request string) error {
	if err := CheckRequest(request); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, request), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// failSuffix names a gate's failure mark: "<request>.fail" is no request's
// name (a request has no dot), so marks and gates never collide.
const failSuffix = ".fail"

// ReleaseFailing opens the gate of request in dir and marks it to fail the
// creation it holds: the first hold to take the mark (TakeFailure) fails its
// create; every later creation of the request runs as released.
func ReleaseFailing(dir, request string) error {
	if err := CheckRequest(request); err != nil {
		return err
	}
	mark, err := os.OpenFile(filepath.Join(dir, request+failSuffix), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if err := mark.Close(); err != nil {
		return err
	}
	return Release(dir, request)
}

// TakeFailure takes request's failure mark in dir, if there is one: true for
// exactly one caller (removing a file succeeds once), so one creation fails.
func TakeFailure(dir, request string) bool {
	if CheckRequest(request) != nil {
		return false
	}
	return os.Remove(filepath.Join(dir, request+failSuffix)) == nil
}

// Released reports whether the gate of request in dir is open. A request
// that cannot name a gate is never released (its hold runs to its bound).
func Released(dir, request string) bool {
	if CheckRequest(request) != nil {
		return false
	}
	_, err := os.Stat(filepath.Join(dir, request))
	return err == nil || !errors.Is(err, os.ErrNotExist)
}

// Hold waits until released says so or bound passes, and reports whether
// it was released.
func Hold(bound time.Duration, released func() bool) bool {
	end := time.Now().Add(bound)
	for {
		if released() {
			return true
		}
		left := time.Until(end)
		if left <= 0 {
			return false
		}
		time.Sleep(min(gatePoll, left))
	}
}
