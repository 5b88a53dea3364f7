package cri

import (
	"context"
	"errors"
	"testing"
)

// The retry loops report the runtime's last answer: an attempt the poll's
// own deadline cut short does not replace it; the first such attempt, with
// nothing before it, and any attempt while the poll runs, do.
func TestRuntimesAnswerOutlivesThePollDeadline(t *testing.T) {
	refused := errors.New("failed to reserve sandbox name")
	cut := context.DeadlineExceeded
	running := context.Background()
	over, cancel := context.WithCancel(context.Background())
	cancel()
	for name, c := range map[string]struct {
		poll         context.Context
		last, answer error
		want         error
	}{
		"poll over, runtime answered before": {over, refused, cut, refused},
		"poll over, nothing before":          {over, nil, cut, cut},
		"poll running":                       {running, refused, cut, cut},
		"success":                            {over, refused, nil, nil},
	} {
		if got := runtimesAnswer(c.poll, c.last, c.answer); !errors.Is(got, c.want) {
			t.Errorf("%s: %v, want %v", name, got, c.want)
		}
	}
}
