package plugin_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/net/multiplex"
	"github.com/containerd/ttrpc"

	"github.com/faultline-k8s/faultline/fakes/nri/record"
)

// dyingRuntime answers the plugin's registration, then dies before it
// configures the plugin.
type dyingRuntime struct {
	conn net.Conn
	dead chan struct{}
	once sync.Once
}

func (d *dyingRuntime) RegisterPlugin(context.Context, *api.RegisterPluginRequest) (*api.Empty, error) {
	// Die once the answer is out; nothing else is in flight then.
	time.AfterFunc(20*time.Millisecond, func() {
		d.once.Do(func() {
			d.conn.Close()
			close(d.dead)
		})
	})
	return &api.Empty{}, nil
}

func (d *dyingRuntime) UpdateContainers(context.Context, *api.UpdateContainersRequest) (*api.UpdateContainersResponse, error) {
	return &api.UpdateContainersResponse{}, nil
}

// NRI's stub blocks forever when the runtime dies between registering and
// configuring the plugin; the plugin must still come back to the next
// runtime.
func TestReconnectAfterRuntimeDiesDuringRegistration(t *testing.T) {
	socket := socketPath(t)
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	dying := &dyingRuntime{dead: make(chan struct{})}
	go func() {
		conn, err := l.Accept()
		l.Close()
		if err != nil {
			return
		}
		dying.conn = conn
		mux := multiplex.Multiplex(conn)
		rl, err := mux.Listen(multiplex.RuntimeServiceConn)
		if err != nil {
			return
		}
		srv, err := ttrpc.NewServer()
		if err != nil {
			return
		}
		defer srv.Close()
		api.RegisterRuntimeService(srv, dying)
		_ = srv.Serve(context.Background(), rl)
	}()

	a := startInstance(t, socket, "faultline-a", "10")
	select {
	case <-dying.dead:
	case <-time.After(waitTimeout):
		t.Fatal("the plugin never registered with the dying runtime")
	}

	rt := startRuntime(t, socket)
	a.waitReady(t)
	rt.waitRegistered(t, 1)
	syncs := 0
	for _, e := range a.rec.List("") {
		if e.Event == record.Synchronize {
			syncs++
			if strings.Contains(e.Message, "attempt 1)") {
				t.Errorf("registered on the first connection: %s", e.Message)
			}
		}
	}
	if syncs != 1 {
		t.Errorf("%d Synchronize records, want 1", syncs)
	}
	if !strings.Contains(a.logs.String(), "abandoning it") {
		t.Error("the plugin did not have to abandon a hung stub; the test did not test that")
	}
	pod := newPod("uid-after-hang", nil)
	if err := rt.send("RunPodSandbox", pod, nil); err != nil {
		t.Fatal(err)
	}
	if got := a.results(pod.Uid); !equal(got, []string{"RunPodSandbox:ok"}) {
		t.Errorf("a saw %v", got)
	}
}
