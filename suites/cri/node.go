package cri

// The suite's way to the node's runtime: gRPC to its CRI socket through the
// relay pod (port-forward, with the run's control token), the slow OCI
// runtime's log through the relay's HTTP side, and the fake NRI plugin's
// event record.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	clientset "k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/kubernetes/test/e2e/framework"
	"sigs.k8s.io/e2e-framework/klient/wait"

	"github.com/faultline-k8s/faultline/fakes/lib/podproxy"
	"github.com/faultline-k8s/faultline/fakes/nri/nriclient"
	"github.com/faultline-k8s/faultline/fakes/nri/record"
	"github.com/faultline-k8s/faultline/fakes/runcslow/ociruntime"
	"github.com/faultline-k8s/faultline/nodesetup"
	"github.com/faultline-k8s/faultline/suites/harness"
	"github.com/faultline-k8s/faultline/vocab/runtimes"
)

const (
	// relayNamespace holds the CRI relay DaemonSet (fixtures/cri; the
	// faultline-slow RuntimeClass of the set is cluster-wide).
	relayNamespace = "faultline-cri"
	relaySelector  = "app.kubernetes.io/name=cri-relay"
	relayCRIPort   = 10010
	relayHTTPPort  = "8080"
	// slowHandler is the runtime handler (and RuntimeClass) of runc-slow:
	// nodesetup's, the one place it is named.
	slowHandler = nodesetup.HandlerName
)

// runtime is the nodes' runtime (a cluster fact) as messages name it.
type runtime struct {
	runtimes.Runtime
	Version string
}

func (r runtime) String() string {
	if r.Version == "" {
		return r.Name
	}
	return r.Name + " " + r.Version
}

func clusterRuntime() runtime {
	c := harness.Cluster()
	return runtime{Runtime: c.Runtime, Version: c.RuntimeVersion}
}

// node is one node's runtime as a spec sees it.
type node struct {
	Name    string
	Runtime runtime
	CRI     runtimeapi.RuntimeServiceClient
	conn    *grpc.ClientConn
	cs      clientset.Interface
	relay   *v1.Pod
}

// connectNode finds a node test pods land on, its relay pod, and opens a CRI
// connection to its runtime; the connection is closed when the spec ends.
// It waits for a runtime that is restarting, and skips the spec when the
// runtime has no faultline-slow handler.
func connectNode(ctx context.Context, f *framework.Framework) *node {
	cs := f.ClientSet
	name, err := harness.SchedulableNode(ctx, cs)
	framework.ExpectNoError(err)
	rt := clusterRuntime()
	var n *node
	var status *runtimeapi.StatusResponse
	gomega.Eventually(ctx, func(ctx context.Context) error {
		n, status, err = dialNode(ctx, f, name, rt)
		return err
	}).WithTimeout(runtimeRestartTimeout).WithPolling(2*time.Second).Should(gomega.Succeed(),
		"the runtime on %s must answer CRI through the relay", name)
	if !hasHandler(status, slowHandler) {
		ginkgo.Skip(fmt.Sprintf("runtime %s on node %s has no %q runtime handler (runc-slow, see the README's \"existing cluster\" section)", rt, name, slowHandler))
	}
	return n
}

// runtimeRestartTimeout bounds a runtime coming back after a restart and its
// relay pod answering again.
const runtimeRestartTimeout = 2 * time.Minute

// dialNode port-forwards to the node's relay and asks the runtime for its
// status; on success the connection lives until the spec ends.
func dialNode(ctx context.Context, f *framework.Framework, name string, rt runtime) (*node, *runtimeapi.StatusResponse, error) {
	relay, err := podproxy.PodOnNode(ctx, f.ClientSet, relayNamespace, relaySelector, name)
	if err != nil {
		return nil, nil, err
	}
	addr, stop, err := podproxy.PortForward(ctx, f.ClientConfig(), relay, relayCRIPort)
	if err != nil {
		return nil, nil, err
	}
	// The relay passes calls on only with the run's control token.
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(harness.FakePods().Token().PerRPCCredentials()))
	if err != nil {
		stop()
		return nil, nil, err
	}
	n := &node{Name: name, Runtime: rt, CRI: runtimeapi.NewRuntimeServiceClient(conn), conn: conn, cs: f.ClientSet, relay: relay}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	status, err := n.CRI.Status(sctx, &runtimeapi.StatusRequest{})
	if err != nil {
		conn.Close()
		stop()
		return nil, nil, fmt.Errorf("CRI Status through the relay %s/%s: %w", relay.Namespace, relay.Name, err)
	}
	ginkgo.DeferCleanup(stop)
	ginkgo.DeferCleanup(conn.Close)
	return n, status, nil
}

func hasHandler(status *runtimeapi.StatusResponse, name string) bool {
	for _, h := range status.GetRuntimeHandlers() {
		if h.GetName() == name {
			return true
		}
	}
	return false
}

// ociRecords returns the slow OCI runtime's records of one request.
func (n *node) ociRecords(ctx context.Context, request string) ([]ociruntime.Record, error) {
	raw, err := harness.FakePods().Get(ctx, n.relay, relayHTTPPort, "/oci-log", nil)
	if err != nil {
		return nil, fmt.Errorf("read the slow OCI runtime's log: %w", err)
	}
	all := ociruntime.ParseLog(raw)
	ids := map[string]bool{}
	var out []ociruntime.Record
	for _, r := range all {
		if r.Request == request && r.Request != "" {
			ids[r.ID] = true
		}
	}
	for _, r := range all {
		if ids[r.ID] {
			out = append(out, r)
		}
	}
	return out, nil
}

// release opens the gate of a request's held creations (runc-slow holds
// them until then: ociruntime.Release); failing, the held one fails its OCI
// create instead (ociruntime.ReleaseFailing).
func (n *node) release(ctx context.Context, request string, failing bool) error {
	params := map[string]string{"request": request}
	if failing {
		params["fail"] = "once"
	}
	var answer map[string]string
	if err := harness.FakePods().PostJSON(ctx, n.relay, relayHTTPPort, "/release", params, &answer); err != nil {
		return fmt.Errorf("release the held creations of %s: %w", request, err)
	}
	return nil
}

// runtimeProcess is the process serving the node's CRI socket, as the relay
// finds it (its peer credentials); a restart gives a new PID or start time.
type runtimeProcess struct {
	Name      string `json:"name"`
	PID       int    `json:"pid"`
	StartTime uint64 `json:"startTime"`
}

func (n *node) runtimeProcess(ctx context.Context) (runtimeProcess, error) {
	var p runtimeProcess
	err := harness.FakePods().GetJSON(ctx, n.relay, relayHTTPPort, "/runtime", nil, &p)
	return p, err
}

// restartRuntime stops the runtime's process (vocab/runtimes Process,
// the one the relay was deployed for) and waits until a new runtime process
// serves the CRI socket: the node's init starts it again (Restart=always in
// kind's and faultline's units). It returns the old and the new process, so
// a spec can show that the restart happened.
func (n *node) restartRuntime(ctx context.Context) (before, after runtimeProcess, err error) {
	if before, err = n.runtimeProcess(ctx); err != nil {
		return before, after, fmt.Errorf("the runtime's process before the restart: %w", err)
	}
	// The port-forward that carries the answer runs through the runtime,
	// so the restart may cut it before the answer arrives: only a refusal
	// the relay sent is an error; the new process is the proof either way.
	var signalled runtimeProcess
	if err := harness.FakePods().PostJSON(ctx, n.relay, relayHTTPPort, "/restart-runtime", nil, &signalled); err != nil {
		var refused *podproxy.HTTPError
		if errors.As(err, &refused) {
			return before, after, err
		}
		framework.Logf("POST /restart-runtime got no answer (%v): the restart ends the port-forward through the runtime", err)
	} else if signalled.PID != before.PID {
		return before, after, fmt.Errorf("the relay signalled pid %d, but pid %d served the CRI socket a moment before", signalled.PID, before.PID)
	}
	var last error
	werr := wait.For(func(ctx context.Context) (bool, error) {
		after, last = n.runtimeProcess(ctx)
		return last == nil && after.PID != 0 && (after.PID != before.PID || after.StartTime != before.StartTime), nil
	}, wait.WithContext(ctx), wait.WithTimeout(runtimeRestartTimeout), wait.WithInterval(time.Second))
	if werr != nil {
		return before, after, fmt.Errorf("no new %s process serves the CRI socket within %s after SIGTERM to pid %d (last: %+v, %v): %w",
			before.Name, runtimeRestartTimeout, before.PID, after, last, werr)
	}
	framework.Logf("%s restarted: pid %d -> %d", before.Name, before.PID, after.PID)
	return before, after, nil
}

// nriEvents returns the fake NRI plugin's (instance a, which slows
// containerd's CreateContainer: slowdown.go) records of a pod, from the nri
// set's deployment. The NRI suite's specs run on the same plugin instances
// at the same time; the record of a pod only holds that pod's events, and a
// fault only fires for the pod whose annotation asks for it.
func (n *node) nriEvents(ctx context.Context, podUID string) ([]record.Event, error) {
	return nriclient.New(harness.FakePods(), harness.FixtureSetNamespace(nriFixtureSet)).On(n.Name, nriclient.A).Events(ctx, podUID)
}

// describeRecords renders records for a failure message.
func describeRecords(records []ociruntime.Record) string {
	var b strings.Builder
	for _, r := range records {
		fmt.Fprintf(&b, "  %s %s %s %s %s %s %s\n", r.Time.Format("15:04:05.000"), r.Command, r.Phase, r.Kind, r.ID, r.Delay, r.Error)
	}
	if b.Len() == 0 {
		return "  (none)\n"
	}
	return b.String()
}
