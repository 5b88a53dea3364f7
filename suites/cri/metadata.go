package cri

// containerd's CreateContainer runs no OCI create (the OCI runtime runs at
// StartContainer), so runc-slow cannot witness it; the fake NRI plugin that
// slows it only sees the hook calls that reach it. The witness here is
// containerd's own store: its events service (/containers/create and
// /containers/delete in the k8s.io namespace) and its container list,
// spoken over the same socket as CRI (containerd serves both), through the
// relay. Every container containerd stores passes through both; the CRI
// layer's cache, if it had one, could not hide from them.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	eventtypes "github.com/containerd/containerd/api/events"
	containersapi "github.com/containerd/containerd/api/services/containers/v1"
	eventsapi "github.com/containerd/containerd/api/services/events/v1"
	sandboxapi "github.com/containerd/containerd/api/services/sandbox/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// containerdNamespace is where containerd's CRI plugin keeps Kubernetes'
// containers.
const containerdNamespace = "k8s.io"

// containerdStore records the containers containerd stored for one target's
// token, from the start of the spec on.
type containerdStore struct {
	token string
	// ours says whether an ID is a creation of the spec (the NRI record's
	// attempts), for containers deleted before their labels could be read.
	ours func(ctx context.Context, id string) bool

	mu      sync.Mutex
	cc      *grpc.ClientConn // the node's connection now (setConn after a runtime restart)
	created []string         // in the order containerd stored them
	seen    map[string]bool
	deleted map[string]bool
	// listedOnce: containers a list showed; only those can be known
	// deleted by a later list that lacks them.
	listedOnce map[string]bool
	lastErr    error
	// lastErrAt is when lastErr came; upSince when the events stream last
	// subscribed, zero while it is down. Together they tell whether the
	// witness saw everything since a time (gap).
	lastErrAt time.Time
	upSince   time.Time
	stop      context.CancelFunc
	done      chan struct{}
}

// watchContainerdStore starts following containerd's store; stop it with
// close. It subscribes to the events and also lists the token's containers
// every 200 ms, so that neither the subscription's start nor a runtime
// restart loses a container that lives longer than that.
func watchContainerdStore(ctx context.Context, token string, cc *grpc.ClientConn, ours func(context.Context, string) bool) *containerdStore {
	ctx, cancel := context.WithCancel(metadata.AppendToOutgoingContext(context.WithoutCancel(ctx), "containerd-namespace", containerdNamespace))
	s := &containerdStore{token: token, cc: cc, ours: ours, seen: map[string]bool{}, deleted: map[string]bool{}, listedOnce: map[string]bool{}, stop: cancel, done: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.follow(ctx) }()
	go func() { defer wg.Done(); s.poll(ctx) }()
	go func() { wg.Wait(); close(s.done) }()
	s.list(ctx) // the state before the first request
	return s
}

// setConn switches to a new connection to the node's runtime.
func (s *containerdStore) setConn(cc *grpc.ClientConn) {
	s.mu.Lock()
	s.cc = cc
	s.mu.Unlock()
}

func (s *containerdStore) conn() *grpc.ClientConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cc
}

func (s *containerdStore) close() {
	s.stop()
	<-s.done
}

// follow reads the events stream, subscribing again after it breaks.
func (s *containerdStore) follow(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for ctx.Err() == nil {
		err := s.subscribe(ctx)
		s.mu.Lock()
		s.upSince = time.Time{}
		s.mu.Unlock()
		s.note(err)
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

func (s *containerdStore) subscribe(ctx context.Context) error {
	stream, err := eventsapi.NewEventsClient(s.conn()).Subscribe(ctx, &eventsapi.SubscribeRequest{Filters: []string{
		fmt.Sprintf(`namespace==%q,topic=="/containers/create"`, containerdNamespace),
		fmt.Sprintf(`namespace==%q,topic=="/containers/delete"`, containerdNamespace),
	}})
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.upSince = time.Now()
	s.mu.Unlock()
	for {
		env, err := stream.Recv()
		if err != nil {
			return err
		}
		switch env.GetTopic() {
		case "/containers/create":
			var e eventtypes.ContainerCreate
			if err := env.GetEvent().UnmarshalTo(&e); err != nil {
				s.note(fmt.Errorf("decode %s: %w", env.GetTopic(), err))
				continue
			}
			if mine, known := s.labelled(ctx, e.GetID()); mine || (!known && s.ours(ctx, e.GetID())) {
				s.add(e.GetID())
			}
		case "/containers/delete":
			var e eventtypes.ContainerDelete
			if err := env.GetEvent().UnmarshalTo(&e); err != nil {
				s.note(fmt.Errorf("decode %s: %w", env.GetTopic(), err))
				continue
			}
			s.mu.Lock()
			if s.seen[e.GetID()] { // the stream is ordered: ours were added at their create
				s.deleted[e.GetID()] = true
			}
			s.mu.Unlock()
		}
	}
}

// labelled reads a new container's labels: whether it carries the token,
// and whether it could be read at all (a container already deleted again
// counts only if the NRI record names it: ours).
func (s *containerdStore) labelled(ctx context.Context, id string) (mine, known bool) {
	resp, err := containersapi.NewContainersClient(s.conn()).Get(ctx, &containersapi.GetContainerRequest{ID: id})
	if err != nil {
		return false, false
	}
	return resp.GetContainer().GetLabels()[requestLabel] == s.token, true
}

func (s *containerdStore) poll(ctx context.Context) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			s.list(ctx)
		}
	}
}

func (s *containerdStore) list(ctx context.Context) {
	resp, err := containersapi.NewContainersClient(s.conn()).List(ctx, &containersapi.ListContainersRequest{
		Filters: []string{fmt.Sprintf(`labels.%q==%q`, requestLabel, s.token)},
	})
	if err != nil {
		s.note(err)
		return
	}
	ids := make([]string, 0, len(resp.GetContainers()))
	listed := map[string]bool{}
	for _, c := range resp.GetContainers() {
		ids = append(ids, c.GetID())
		listed[c.GetID()] = true
	}
	sort.Strings(ids) // containerd lists in no particular order; events keep the real one
	for _, id := range ids {
		s.add(id)
	}
	// A container seen before and no longer stored was deleted, also
	// while the events stream was down (a runtime restart). The list may
	// cross an event on the way, so each list also sets the record
	// straight for what it shows.
	s.mu.Lock()
	for id := range s.seen {
		s.deleted[id] = !listed[id] && (s.deleted[id] || s.listedOnce[id])
	}
	for id := range listed {
		s.listedOnce[id] = true
	}
	s.mu.Unlock()
}

func (s *containerdStore) add(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.seen[id] {
		s.seen[id] = true
		s.created = append(s.created, id)
	}
}

func (s *containerdStore) note(err error) {
	if err == nil || errors.Is(err, context.Canceled) || status.Code(err) == codes.Canceled {
		return
	}
	s.mu.Lock()
	s.lastErr, s.lastErrAt = err, time.Now()
	s.mu.Unlock()
}

// errWitnessGap says containerd's store witness may have missed a
// container: its port-forward, events stream or list failed. What the
// witness did not see then is unknown, never "not stored": a spec that
// needs it fails as faultline's own failure.
var errWitnessGap = errors.New("containerd's store witness was interrupted")

// gap returns an errWitnessGap error when the witness may have missed a
// container stored at or after since: the events stream is down or was
// subscribed only after since, or the stream or the list failed since.
func (s *containerdStore) gap(since time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.upSince.IsZero():
		return fmt.Errorf("%w: its events stream is down (last error: %v)", errWitnessGap, s.lastErr)
	case s.upSince.After(since):
		return fmt.Errorf("%w: its events stream subscribed again at %s, after %s (last error: %v)",
			errWitnessGap, s.upSince.Format("15:04:05.000"), since.Format("15:04:05.000"), s.lastErr)
	case s.lastErr != nil && !s.lastErrAt.Before(since):
		return fmt.Errorf("%w at %s: %v", errWitnessGap, s.lastErrAt.Format("15:04:05.000"), s.lastErr)
	}
	return nil
}

// subscribed waits until the events stream is up, so that a gap is not
// just its start.
func (s *containerdStore) subscribed(ctx context.Context, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for {
		s.mu.Lock()
		up, last := !s.upSince.IsZero(), s.lastErr
		s.mu.Unlock()
		if up {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("containerd's events stream did not subscribe within %s (last error: %v)", within, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// createdIDs returns the containers containerd stored for the token so far.
func (s *containerdStore) createdIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.created...)
}

// stored reports whether containerd stored id, and whether it deleted it
// since.
func (s *containerdStore) stored(id string) (created, deleted bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[id], s.deleted[id]
}

func (s *containerdStore) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var gone []string
	for id, deleted := range s.deleted {
		if deleted {
			gone = append(gone, id)
		}
	}
	sort.Strings(gone)
	if s.lastErr == nil {
		return fmt.Sprintf("containerd stored %v, deleted %v (no witness error)", s.created, gone)
	}
	return fmt.Sprintf("containerd stored %v, deleted %v (last witness error at %s: %v)", s.created, gone, s.lastErrAt.Format("15:04:05.000"), s.lastErr)
}

// containerdKnows reports whether containerd's own stores still hold id:
// its sandbox store (what it recovers sandboxes from after a restart) or
// its container store. A runtime without that API over its socket (CRI-O
// answers Unimplemented) holds nothing there.
func containerdKnows(ctx context.Context, cc *grpc.ClientConn, id string) (bool, error) {
	ctx = metadata.AppendToOutgoingContext(ctx, "containerd-namespace", containerdNamespace)
	_, err := sandboxapi.NewStoreClient(cc).Get(ctx, &sandboxapi.StoreGetRequest{SandboxID: id})
	switch status.Code(err) {
	case codes.OK:
		return true, nil
	case codes.Unimplemented:
		return false, nil
	case codes.NotFound:
	default:
		return false, err
	}
	_, err = containersapi.NewContainersClient(cc).Get(ctx, &containersapi.GetContainerRequest{ID: id})
	switch status.Code(err) {
	case codes.OK:
		return true, nil
	case codes.NotFound, codes.Unimplemented:
		return false, nil
	}
	return false, err
}
