package driver

// The DRAResourceHealth streams the kubelet holds open, and the StreamDrop
// fault (FaultSpec health) that ends them: when a claim whose FaultSpec
// has one is first prepared, every open NodeWatchResources stream of this
// driver instance (this node) ends with the gRPC status Unavailable, and
// the kubelet's reconnects are refused with Unavailable until the fault's
// duration has passed; the first one after that is served again. Each
// stream event is recorded (GET /healthstream), so that a spec sees when
// and how often the kubelet reconnected.

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/faultline-k8s/faultline/fakes/dra/faultspec"
)

// StreamEventType is what happened to a health stream.
type StreamEventType string

const (
	// StreamOpened: the kubelet called NodeWatchResources and is served.
	StreamOpened StreamEventType = "Opened"
	// StreamDropped: a StreamDrop fault fired; Streams open streams ended
	// with Unavailable, and reconnects are refused until Until.
	StreamDropped StreamEventType = "Dropped"
	// StreamRefused: the kubelet called NodeWatchResources while a drop
	// refuses reconnects; it got Unavailable.
	StreamRefused StreamEventType = "Refused"
	// StreamClosed: the kubelet ended a served stream (or sending failed).
	StreamClosed StreamEventType = "Closed"
)

// StreamEvent is one entry of GET /healthstream.
type StreamEvent struct {
	Time  time.Time       `json:"time"`
	Event StreamEventType `json:"event"`
	// The claim whose StreamDrop fault dropped (Dropped) or refuses
	// (Refused) the stream.
	ClaimNamespace string `json:"claimNamespace,omitempty"`
	ClaimName      string `json:"claimName,omitempty"`
	ClaimUID       string `json:"claimUID,omitempty"`
	// Until is when reconnects are served again (Dropped, Refused).
	Until *time.Time `json:"until,omitempty"`
	// Streams is how many open streams a drop ended (Dropped).
	Streams int `json:"streams,omitempty"`
	// Error is the status a stream ended with, or was refused with.
	Error string `json:"error,omitempty"`
}

// maxStreamEvents bounds the record: the kubelet reconnects every few
// seconds while refused.
const maxStreamEvents = 2000

// healthStreams tracks the open streams and an active drop.
type healthStreams struct {
	mu sync.Mutex
	// dropped is closed by a drop, which ends every stream opened before;
	// a new channel replaces it.
	dropped chan struct{}
	// serving counts the streams being served.
	serving int
	// refuseUntil and refusal: reconnects are refused with refusal until
	// then; cause is the claim whose fault it is.
	refuseUntil time.Time
	refusal     string
	endMessage  string
	cause       ClaimRef
	events      []StreamEvent
}

func newHealthStreams() *healthStreams {
	return &healthStreams{dropped: make(chan struct{})}
}

func (h *healthStreams) recordLocked(e StreamEvent) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	h.events = appendBounded(h.events, e, maxStreamEvents)
}

// open admits a new stream: it returns the channel that a drop closes, or
// the status the kubelet is refused with while a drop is in force.
func (h *healthStreams) open() (<-chan struct{}, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	if now.Before(h.refuseUntil) {
		until := h.refuseUntil
		err := status.Error(codes.Unavailable, h.refusal)
		h.recordLocked(StreamEvent{Time: now, Event: StreamRefused, Until: &until, Error: err.Error(),
			ClaimNamespace: h.cause.Namespace, ClaimName: h.cause.Name, ClaimUID: h.cause.UID})
		return nil, err
	}
	h.serving++
	h.recordLocked(StreamEvent{Time: now, Event: StreamOpened})
	return h.dropped, nil
}

// closed records the end of a served stream: by the kubelet (err nil or a
// send error) or by a drop (the drop recorded it already).
func (h *healthStreams) closed(err error, byDrop bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.serving--
	if byDrop {
		return
	}
	e := StreamEvent{Event: StreamClosed}
	if err != nil {
		e.Error = err.Error()
	}
	h.recordLocked(e)
}

// endStatus is the status a dropped stream ends with.
func (h *healthStreams) endStatus() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return status.Error(codes.Unavailable, h.endMessage)
}

// drop ends every open stream and refuses reconnects for down (a drop
// while another is in force keeps the later end).
func (h *healthStreams) drop(ctx context.Context, claim ClaimRef, down time.Duration, message string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	what := fmt.Sprintf("faultline: health stream dropped by the StreamDrop fault of claim %s", claim)
	if message != "" {
		what += ": " + message
	}
	h.endMessage = protoString(what, 1024)
	until := now.Add(down)
	if until.After(h.refuseUntil) {
		h.refuseUntil = until
		h.cause = claim
		h.refusal = protoString(fmt.Sprintf("%s; reconnects refused until %s", what, until.UTC().Format(time.RFC3339)), 1024)
	}
	ended := h.serving
	close(h.dropped)
	h.dropped = make(chan struct{})
	stop := h.refuseUntil
	if stop.Before(now) {
		stop = now
	}
	h.recordLocked(StreamEvent{Time: now, Event: StreamDropped, Until: &stop, Streams: ended, Error: h.endMessage,
		ClaimNamespace: claim.Namespace, ClaimName: claim.Name, ClaimUID: claim.UID})
	klog.FromContext(ctx).Info("Health stream dropped (StreamDrop fault)", "claim", klog.KRef(claim.Namespace, claim.Name),
		"claimUID", claim.UID, "streams", ended, "refusedUntil", stop)
}

// record returns a copy of the events.
func (h *healthStreams) record() []StreamEvent {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]StreamEvent{}, h.events...)
}

// dropHealthStreams fires the StreamDrop faults of a claim that was just
// prepared (the first time): the longest duration wins.
func (d *Driver) dropHealthStreams(ctx context.Context, namespace, name string, uid types.UID, faults []faultspec.HealthFault) {
	var down time.Duration
	var messages []string
	for _, f := range faults {
		if f.Type != faultspec.StreamDrop {
			continue
		}
		down = max(down, f.DownDuration())
		if f.Message != "" {
			messages = append(messages, f.Message)
		}
	}
	d.streams.drop(ctx, ClaimRef{Namespace: namespace, Name: name, UID: string(uid)}, down, strings.Join(messages, "; "))
}

// HealthStreamEvents returns the record of the health streams.
func (d *Driver) HealthStreamEvents() []StreamEvent { return d.streams.record() }

// HealthStreamHandler serves GET /healthstream: every stream event, oldest
// first.
func (d *Driver) HealthStreamHandler() http.Handler {
	return serveJSON(func() any { return d.HealthStreamEvents() })
}
