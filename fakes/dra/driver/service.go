package driver

// The driver runs two kubeletplugin helpers, the way upstream's node e2e
// tests split a DRA driver: the registrar, which lives as long as the
// process, and the DRA service (dra.sock with the DRA and health gRPC
// services, and the ResourceSlice controller). An Unresponsive fault
// (FaultSpec service) stops the service for its duration and then starts
// it again. Meanwhile the kubelet keeps the driver registered (its
// registration socket is still there), its calls fail as unavailable, and
// after its wiping delay it removes the driver's ResourceSlices; the new
// controller publishes them again. Each stop and start is recorded
// (GET /service).
//
// The ResourceSlice controller is the driver's own (startSlices), not the
// helper's PublishResources, for its timers: with the library's defaults
// (a one-minute mutation cache, a 30 s sync delay) a slice the driver
// updated less than a minute before somebody deleted it (the kubelet wipes
// every slice of its node when it restarts) is never published again
// (kubernetes#140063, fixed in the v0.37 libraries). sliceSyncDelay longer
// than sliceMutationTTL closes that window, and a restarted kubelet gets
// the slices back in seconds.

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"

	"github.com/faultline-k8s/faultline/fakes/dra/faultspec"
)

// ServiceEventType is what happened to the DRA service.
type ServiceEventType string

const (
	// ServiceStopped: an Unresponsive fault stopped the service (its socket
	// is gone, it publishes nothing) until Until.
	ServiceStopped ServiceEventType = "Stopped"
	// ServiceStarted: the service serves (again) and publishes.
	ServiceStarted ServiceEventType = "Started"
	// ServiceStartFailed: starting it again failed; it is retried.
	ServiceStartFailed ServiceEventType = "StartFailed"
)

// ServiceEvent is one entry of GET /service.
type ServiceEvent struct {
	Time  time.Time        `json:"time"`
	Event ServiceEventType `json:"event"`
	// The claim whose fault stopped the service (Stopped).
	ClaimNamespace string     `json:"claimNamespace,omitempty"`
	ClaimName      string     `json:"claimName,omitempty"`
	ClaimUID       string     `json:"claimUID,omitempty"`
	Until          *time.Time `json:"until,omitempty"`
	Error          string     `json:"error,omitempty"`
}

// ServiceState is GET /service: whether the DRA service answers now, and
// its history.
type ServiceState struct {
	Answering bool           `json:"answering"`
	Events    []ServiceEvent `json:"events"`
}

// maxServiceEvents bounds the record; a failing restart is retried every
// second.
const maxServiceEvents = 500

// restartInterval is how often a failed restart of the service is retried.
const restartInterval = time.Second

// The ResourceSlice controller's timers (see the top of the file): a sync
// runs sliceSyncDelay after the last change it saw, by when every write of
// its own older than sliceMutationTTL has left its cache. The TTL only has
// to outlast the informer's lag behind the controller's own writes.
const (
	sliceMutationTTL = 3 * time.Second
	sliceSyncDelay   = 5 * time.Second
)

// service owns the helper that serves dra.sock and the controller that
// publishes the slices; both run while the service does.
type service struct {
	// ctx ends with the driver; a pending restart is then dropped.
	ctx   context.Context
	start func(context.Context) (*kubeletplugin.Helper, error)
	// startSlices starts publishing resources; the first publish of each
	// start of the service calls it.
	startSlices func(context.Context, *resourceslice.DriverResources) (*resourceslice.Controller, error)
	// republish publishes the inventory through the new helper.
	republish func(context.Context) error

	mu     sync.Mutex
	helper *kubeletplugin.Helper     // nil while stopped
	slices *resourceslice.Controller // nil while stopped or before the first publish
	events []ServiceEvent
	wg     sync.WaitGroup
}

// takeLocked ends the current service's run and returns what has to be
// stopped (outside the lock: Stop waits for the helper's handlers).
func (s *service) takeLocked() (*kubeletplugin.Helper, *resourceslice.Controller) {
	h, c := s.helper, s.slices
	s.helper, s.slices = nil, nil
	return h, c
}

// stopBoth stops a helper and a slice controller; both may be nil.
func stopBoth(h *kubeletplugin.Helper, c *resourceslice.Controller) {
	h.Stop()
	c.Stop()
}

func (s *service) recordLocked(e ServiceEvent) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	s.events = appendBounded(s.events, e, maxServiceEvents)
}

// run starts the service; the driver's Start calls it once.
func (s *service) run() error {
	h, err := s.start(s.ctx)
	if err != nil {
		return err
	}
	s.serving(h)
	return nil
}

// serving makes h the helper that serves, and records that.
func (s *service) serving(h *kubeletplugin.Helper) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.helper = h
	s.recordLocked(ServiceEvent{Event: ServiceStarted})
}

// publish hands the resources to the service's slice controller, starting
// it the first time. While the service is stopped it does nothing: the
// restart publishes the inventory as it is then.
func (s *service) publish(ctx context.Context, res resourceslice.DriverResources) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.helper == nil {
		return nil
	}
	if s.slices != nil {
		s.slices.Update(&res)
		return nil
	}
	c, err := s.startSlices(s.ctx, &res)
	if err != nil {
		return err
	}
	s.slices = c
	return nil
}

// stopFor stops the service and starts it again after down. It returns
// false when the service is stopped already (by another claim's fault),
// which then keeps its own end.
func (s *service) stopFor(ctx context.Context, cause ClaimRef, down time.Duration) bool {
	s.mu.Lock()
	if s.helper == nil {
		s.mu.Unlock()
		return false
	}
	h, slices := s.takeLocked()
	until := time.Now().Add(down)
	s.wg.Add(1)
	s.mu.Unlock()
	logger := klog.FromContext(ctx)
	logger.Info("Unresponsive fault: stopping the DRA service", "claim", klog.KRef(cause.Namespace, cause.Name), "claimUID", cause.UID, "until", until)
	go func() {
		defer s.wg.Done()
		// Stopped outside the gRPC handler that fired the fault: the
		// helper's Stop closes that handler's own connection. Recorded
		// once it is done: the socket is gone, the slice controller ended.
		stopBoth(h, slices)
		s.mu.Lock()
		s.recordLocked(ServiceEvent{Event: ServiceStopped, ClaimNamespace: cause.Namespace, ClaimName: cause.Name, ClaimUID: cause.UID, Until: &until})
		s.mu.Unlock()
		t := time.NewTimer(time.Until(until))
		defer t.Stop()
		select {
		case <-t.C:
		case <-s.ctx.Done():
			return
		}
		s.restart(logger)
	}()
	return true
}

// restart starts the service again, retrying until it works or the
// driver stops.
func (s *service) restart(logger klog.Logger) {
	for {
		h, err := s.start(s.ctx)
		if err == nil {
			s.serving(h)
			logger.Info("Unresponsive fault over: the DRA service serves again")
			if err := s.republish(s.ctx); err != nil {
				logger.Error(err, "Publishing the ResourceSlices again failed")
			}
			return
		}
		logger.Error(err, "Starting the DRA service again failed, retrying", "interval", restartInterval)
		s.mu.Lock()
		s.recordLocked(ServiceEvent{Event: ServiceStartFailed, Error: err.Error()})
		s.mu.Unlock()
		select {
		case <-time.After(restartInterval):
		case <-s.ctx.Done():
			return
		}
	}
}

// stop stops the service for good (the driver stops).
func (s *service) stop() {
	s.mu.Lock()
	h, c := s.takeLocked()
	s.mu.Unlock()
	stopBoth(h, c) // nil-safe
	s.wg.Wait()
	// A restart that raced with the driver's end: its ctx was done, so
	// the helper it may have started stops with it; Stop waits for that.
	s.mu.Lock()
	h, c = s.takeLocked()
	s.mu.Unlock()
	stopBoth(h, c)
}

// state returns GET /service's content.
func (s *service) state() ServiceState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ServiceState{Answering: s.helper != nil, Events: append([]ServiceEvent(nil), s.events...)}
}

// unresponsive fires the first Unresponsive fault of a claim's first
// prepare: the call that fired it is left unanswered (its connection is
// closed under it), which returns the text recorded for it.
func (d *Driver) unresponsive(ctx context.Context, namespace, name string, uid types.UID, faults []faultspec.ServiceFault) (string, bool) {
	for _, f := range faults {
		if f.Type != faultspec.Unresponsive {
			continue
		}
		down := f.DownDuration()
		if !d.service.stopFor(ctx, ClaimRef{Namespace: namespace, Name: name, UID: string(uid)}, down) {
			return "", false
		}
		// The helper's Stop closes this call's connection, which ends ctx;
		// bounded in case the kubelet had given up on it already.
		t := time.NewTimer(sideEffectTimeout)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		return fmt.Sprintf("left unanswered: an Unresponsive fault stopped the driver's DRA service for %s", down), true
	}
	return "", false
}

// appendBounded appends e to a record that holds at most limit entries:
// when it is full, the older half goes first.
func appendBounded[E any](record []E, e E, limit int) []E {
	if len(record) >= limit {
		record = append(record[:0:0], record[len(record)-limit/2:]...)
	}
	return append(record, e)
}

// ServiceHandler serves GET /service.
func (d *Driver) ServiceHandler() http.Handler {
	return serveJSON(func() any { return d.service.state() })
}
