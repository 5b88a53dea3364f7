package cri

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The retry loops report the runtime's last answer: an attempt the poll's
// own deadline cut short does not replace it; the first such attempt, with
// nothing before it, an attempt within the poll's time, and any other
// error, do.
func TestRuntimesAnswerOutlivesThePollDeadline(t *testing.T) {
	refused := status.Error(codes.FailedPrecondition, "failed to reserve sandbox name")
	cut := status.Error(codes.DeadlineExceeded, "context deadline exceeded")
	other := status.Error(codes.Unknown, "boom")
	for name, c := range map[string]struct {
		cut          bool
		last, answer error
		want         error
	}{
		"cut by the poll, runtime answered before": {true, refused, cut, refused},
		"cut by the poll, nothing before":          {true, nil, cut, cut},
		"the attempt's own deadline":               {false, refused, cut, cut},
		"another error at the poll's end":          {true, refused, other, other},
		"success":                                  {true, refused, nil, nil},
	} {
		if got := runtimesAnswer(c.cut, c.last, c.answer); !errors.Is(got, c.want) {
			t.Errorf("%s: %v, want %v", name, got, c.want)
		}
	}
}

func TestPollBounds(t *testing.T) {
	poll, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if pollBounds(poll, 5*time.Second) {
		t.Error("an attempt of 5s in a poll with 10s left is its own")
	}
	if !pollBounds(poll, 20*time.Second) {
		t.Error("an attempt of 20s in a poll with 10s left ends with the poll")
	}
	if pollBounds(context.Background(), time.Hour) {
		t.Error("a poll without a deadline bounds nothing")
	}
}
