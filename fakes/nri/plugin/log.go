package plugin

import (
	"context"
	"fmt"
	"log/slog"
)

// nriLogger sends the NRI stub's own log lines to our structured log, so
// that the container log is one JSON line per entry.
type nriLogger struct{ log *slog.Logger }

func (l nriLogger) Debugf(ctx context.Context, format string, args ...any) {
	l.log.DebugContext(ctx, fmt.Sprintf(format, args...))
}

func (l nriLogger) Infof(ctx context.Context, format string, args ...any) {
	l.log.InfoContext(ctx, fmt.Sprintf(format, args...))
}

func (l nriLogger) Warnf(ctx context.Context, format string, args ...any) {
	l.log.WarnContext(ctx, fmt.Sprintf(format, args...))
}

func (l nriLogger) Errorf(ctx context.Context, format string, args ...any) {
	l.log.ErrorContext(ctx, fmt.Sprintf(format, args...))
}
