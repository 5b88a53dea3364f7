package cri

// A target is one object a spec asks the runtime to create directly over CRI:
// a pod sandbox, or a container in the sandbox of a pod the kubelet runs.
// Direct sandboxes belong to no pod the kubelet knows, so the kubelet stops
// them as orphans soon after they are listed; the specs only need them to
// exist. Direct containers are never started, which the kubelet leaves alone.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/kubernetes/test/e2e/framework"
	e2epod "k8s.io/kubernetes/test/e2e/framework/pod"

	"github.com/faultline-k8s/faultline/fakes/nri/faults"
	"github.com/faultline-k8s/faultline/fakes/nri/nriclient"
	"github.com/faultline-k8s/faultline/fakes/runcslow/ociruntime"
	"github.com/faultline-k8s/faultline/suites/harness"
)

const (
	stageSandbox   = "RunPodSandbox"
	stageContainer = "CreateContainer"
	// requestLabel carries the request's token on the objects, for listing.
	requestLabel = "cri.faultline.k8s.io/request"
	// directContainer is the name of the containers the specs create.
	directContainer = "direct"
)

type target struct {
	stage   string
	token   string
	attempt uint32
	node    *node
	slow    slowdown
	// container stage: the host pod's sandbox and its config
	hostPod       *v1.Pod
	hostSandboxID string
	hostConfig    *runtimeapi.PodSandboxConfig
	imageID       string
	// store is containerd's own record of the containers it stored, on the
	// NRI path (metadata.go); nil where runc-slow witnesses creations.
	store *containerdStore
	// sent is when the timed-out request was sent (timeOut); released when
	// the spec let runc-slow's held creations go on (release).
	sent, released time.Time
}

// specToken names one spec's requests on the node: its namespace's name and
// the start of its UID. The name alone comes back within a run (the
// framework draws a 4-digit suffix): a spec whose namespace reused an
// earlier one's name found that spec's gate open on the node and its
// runc-slow records under its key, so its creation was not held (seen:
// CRI-CONTAINER-RETRY-IN-PROGRESS inconclusive on CRI-O, "the creation was
// not slow").
func specToken(ns *v1.Namespace) string {
	return ns.Name + "-" + string(ns.UID)[:8]
}

// newTarget prepares a target; for containers it starts the host pod first.
func newTarget(ctx context.Context, f *framework.Framework, n *node, stage string) *target {
	t := &target{stage: stage, token: specToken(f.Namespace), node: n, slow: slowdownFor(n.Runtime, stage)}
	if stage == stageContainer {
		t.startHostPod(ctx, f)
	}
	if t.slow.ViaNRI {
		// The store's goroutines outlive this setup node; they read the
		// NRI record through the first node value (its name does not
		// change when the runtime restarts), never through t.node.
		hostUID := string(t.hostPod.UID)
		t.store = watchContainerdStore(ctx, t.token, n.conn, func(ctx context.Context, id string) bool {
			return nriAttempt(ctx, n, hostUID, id)
		})
		ginkgo.DeferCleanup(t.store.close)
		framework.ExpectNoError(t.store.subscribed(ctx, 30*time.Second), "containerd's store witness")
	}
	return t
}

// reconnected points the witnesses at a new connection to the node's
// runtime (after a restart).
func (t *target) reconnected(n *node) {
	t.node = n
	if t.store != nil {
		t.store.setConn(n.conn)
	}
}

// nriAttempt reports whether the fake NRI plugin on n saw a CreateContainer
// of the direct container with this ID in the host pod.
func nriAttempt(ctx context.Context, n *node, hostUID, id string) bool {
	ids, _ := nriCreates(ctx, n, hostUID)
	return slices.Contains(ids, id)
}

// nriCreates returns the IDs of the direct container's CreateContainer calls
// the fake NRI plugin on n saw in the host pod, in order, once each.
func nriCreates(ctx context.Context, n *node, hostUID string) ([]string, error) {
	events, err := n.nriEvents(ctx, hostUID)
	var ids []string
	for _, e := range events {
		if e.Event == "CreateContainer" && e.ContainerName == directContainer && e.ContainerID != "" && !slices.Contains(ids, e.ContainerID) {
			ids = append(ids, e.ContainerID)
		}
	}
	return ids, err
}

// created returns the objects the runtime created for the token, in order:
// containerd's store on the NRI path, runc-slow's OCI creates elsewhere.
func (t *target) created(ctx context.Context) ([]string, error) {
	if t.store != nil {
		// A gap may hide a container: the list would be short.
		return t.store.createdIDs(), t.store.gap(t.sent)
	}
	return t.started(ctx)
}

func (t *target) startHostPod(ctx context.Context, f *framework.Framework) {
	pod := harness.TestPod("host", "host of direct containers")
	pod.Spec.RuntimeClassName = new(string)
	*pod.Spec.RuntimeClassName = slowHandler
	if t.slow.ViaNRI {
		// Stall the first CreateContainer of the direct container in this
		// pod (fake NRI plugin instance a).
		pod.Annotations = nriclient.Annotations(nriclient.A.Fault("CreateContainer",
			faults.Fault{Mode: faults.Stall, Stall: t.slow.Delay, Times: 1, Container: directContainer}))
	}
	// Its sandbox is read from this node's runtime.
	e2epod.SetNodeSelection(&pod.Spec, e2epod.NodeSelection{Name: t.node.Name})
	t.hostPod = e2epod.NewPodClient(f).CreateSync(ctx, pod)
	sandboxes, err := t.node.CRI.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{"io.kubernetes.pod.uid": string(t.hostPod.UID)},
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
	}})
	framework.ExpectNoError(err)
	gomega.Expect(sandboxes.Items).To(gomega.HaveLen(1), "the host pod must have one ready sandbox")
	sb := sandboxes.Items[0]
	t.hostSandboxID = sb.Id
	t.hostConfig = &runtimeapi.PodSandboxConfig{
		Metadata: sb.Metadata, Labels: sb.Labels, Annotations: sb.Annotations,
		LogDirectory: fmt.Sprintf("/var/log/pods/%s_%s_%s", t.hostPod.Namespace, t.hostPod.Name, t.hostPod.UID),
		Linux:        &runtimeapi.LinuxPodSandboxConfig{},
	}
	images := runtimeapi.NewImageServiceClient(t.node.conn)
	image, err := images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: harness.Flags.FakesImage}})
	framework.ExpectNoError(err)
	gomega.Expect(image.GetImage()).NotTo(gomega.BeNil(), "the fakes image must be on the node")
	t.imageID = image.GetImage().GetId()
}

func (t *target) sandboxConfig(delay bool) *runtimeapi.PodSandboxConfig {
	d := t.slow.Delay
	if !delay {
		d = 0
	}
	name := "direct-" + t.token
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: relayNamespace, Uid: t.token, Attempt: t.attempt},
		Hostname:     name,
		LogDirectory: fmt.Sprintf("/var/log/pods/%s_%s_%s", relayNamespace, name, t.token),
		Labels:       map[string]string{requestLabel: t.token},
		Annotations:  ociruntime.SlowCreate{Request: t.token, SandboxDelay: d, Hold: true}.Annotations(),
		// A shared PID namespace: CRI-O then runs an infra container, the OCI
		// create runc-slow delays (without one, CRI-O's RunPodSandbox runs no
		// OCI runtime at all).
		Linux: &runtimeapi.LinuxPodSandboxConfig{CgroupParent: "faultline-cri.slice", SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_POD},
		}},
	}
}

func (t *target) containerConfig(delay bool) *runtimeapi.ContainerConfig {
	d := t.slow.Delay
	if !delay || t.slow.ViaNRI {
		d = 0 // the NRI stall comes from the host pod's annotation
	}
	return &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: directContainer, Attempt: t.attempt},
		Image:       &runtimeapi.ImageSpec{Image: t.imageID, UserSpecifiedImage: harness.Flags.FakesImage},
		Command:     []string{"/usr/local/bin/testpod", "--message", "direct container " + t.token},
		Labels:      map[string]string{requestLabel: t.token},
		Annotations: ociruntime.SlowCreate{Request: t.token, ContainerDelay: d, Hold: true}.Annotations(),
		// in the pod's log directory, which the kubelet made (runtimes do not)
		LogPath: fmt.Sprintf("%s-%d.log", directContainer, t.attempt),
		// as the kubelet asks for a pod that does not share its PID namespace
		Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER},
		}},
	}
}

// release lets the creations runc-slow holds for the target go on: the
// held one, and every later one at once. The fake NRI plugin's stall has no
// gate: the caller's cancel ends NRI's call of it.
func (t *target) release(ctx context.Context) {
	ginkgo.GinkgoHelper()
	if t.slow.ViaNRI || !t.released.IsZero() {
		return
	}
	harness.Ours(t.node.release(ctx, t.token, false), "open the gate of the held creation")
	t.released = time.Now()
	ginkgo.By(fmt.Sprintf("released the held creation %s after the request", t.released.Sub(t.sent).Round(time.Millisecond)))
}

// failHeld releases the creation runc-slow holds for the target failing:
// its OCI create fails, so the runtime's request fails after its caller
// has gone, when the spec says. Later creations of the target run at once.
func (t *target) failHeld(ctx context.Context) {
	ginkgo.GinkgoHelper()
	harness.Ours(t.node.release(ctx, t.token, true), "fail the held creation through its gate")
	t.released = time.Now()
	ginkgo.By(fmt.Sprintf("failed the held creation %s after the request", t.released.Sub(t.sent).Round(time.Millisecond)))
}

// failedHow says how the held creation ended in failure, as runc-slow's
// records show it: its OCI create failed at the spec's release, or the
// runtime gave the creation up first (abandoned). "" while it has not
// ended, or when it did not fail.
func (t *target) failedHow(ctx context.Context) (string, error) {
	records, err := t.node.ociRecords(ctx, t.token)
	if err != nil {
		return "", err
	}
	for _, r := range records {
		if r.Command == "create" && r.Kind == t.kind() && r.Failed {
			return fmt.Sprintf("runc-slow failed the OCI create of %s at the spec's release (%s)", r.ID, r.Time.Format("15:04:05.000")), nil
		}
	}
	if _, err := t.finished(ctx); errors.Is(err, errAbandoned) {
		return err.Error(), nil
	}
	return "", nil
}

// create sends the request with the given deadline. delay false asks for
// no slowdown (the changed request of CHANGED-REQUEST).
func (t *target) create(ctx context.Context, deadline time.Duration, delay bool) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	if t.stage == stageSandbox {
		resp, err := t.node.CRI.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: t.sandboxConfig(delay), RuntimeHandler: slowHandler})
		return resp.GetPodSandboxId(), err
	}
	resp, err := t.node.CRI.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: t.hostSandboxID, Config: t.containerConfig(delay), SandboxConfig: t.hostConfig,
	})
	return resp.GetContainerId(), err
}

// listed returns the IDs the runtime lists for this target's token.
func (t *target) listed(ctx context.Context) ([]string, error) {
	selector := map[string]string{requestLabel: t.token}
	var ids []string
	if t.stage == stageSandbox {
		resp, err := t.node.CRI.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: selector}})
		for _, s := range resp.GetItems() {
			ids = append(ids, s.Id)
		}
		return ids, err
	}
	resp, err := t.node.CRI.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: selector}})
	for _, c := range resp.GetContainers() {
		ids = append(ids, c.Id)
	}
	return ids, err
}

// status asks the runtime about one ID: an operation a timed-out, unclaimed
// object must not answer.
func (t *target) status(ctx context.Context, id string) error {
	if t.stage == stageSandbox {
		_, err := t.node.CRI.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
		return err
	}
	_, err := t.node.CRI.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	return err
}

// started returns the IDs the runtime began to create for the token, in
// order: runc-slow's create records, or the fake NRI plugin's
// CreateContainer events on containerd.
func (t *target) started(ctx context.Context) ([]string, error) {
	var ids []string
	seen := map[string]bool{}
	add := func(id string) {
		if id != "" && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	if t.slow.ViaNRI {
		return nriCreates(ctx, t.node, string(t.hostPod.UID))
	}
	records, err := t.node.ociRecords(ctx, t.token)
	for _, r := range records {
		if r.Command == "create" && r.Phase == "begin" && r.Kind == t.kind() {
			add(r.ID)
		}
	}
	return ids, err
}

// errAbandoned marks a creation the runtime gave up instead of finishing.
var errAbandoned = errors.New("creation abandoned")

// abandonGrace is how long after its delay a creation must show in the
// runtime's store before it counts as given up (NRI path).
const abandonGrace = 5 * time.Second

// finished reports whether the slow step of every started creation is over
// (runc-slow handed over to runc; containerd stored the container). It
// returns an error when the runtime gave the creation up instead: it deleted
// the object before the OCI create ran, or containerd never stored the
// container the timed-out request began.
func (t *target) finished(ctx context.Context) (bool, error) {
	if t.store != nil {
		ids, err := t.started(ctx)
		if err != nil || len(ids) == 0 {
			return false, err
		}
		if stored, _ := t.store.stored(ids[0]); stored {
			return true, nil
		}
		if time.Since(t.sent) > t.slow.Delay+abandonGrace {
			// "Never stored" needs a witness that saw everything since the
			// request: one that was interrupted may have missed it.
			if err := t.store.gap(t.sent); err != nil {
				return false, err
			}
			return false, fmt.Errorf("%w: %s never stored the container %s that the timed-out request began (%s after the request, its delay was %s): "+
				"it gave the creation up when the caller's deadline passed, so nothing is kept for the retry", errAbandoned, t.node.Runtime, ids[0], time.Since(t.sent).Round(time.Second), t.slow.Delay)
		}
		return false, nil
	}
	records, err := t.node.ociRecords(ctx, t.token)
	if err != nil {
		return false, err
	}
	pending := map[string]bool{}
	for _, r := range records {
		switch {
		case r.Command == "create" && r.Kind == t.kind() && r.Delay != "" && r.Phase == "begin":
			pending[r.ID] = true
		case r.Command == "create" && r.Phase == "exec":
			delete(pending, r.ID)
		case r.Command == "delete" && pending[r.ID]:
			return false, fmt.Errorf("%w: %s gave the creation of %s up when the caller's deadline passed: it deleted the object "+
				"before its OCI create finished, so nothing is kept for the retry", errAbandoned, t.node.Runtime, r.ID)
		}
	}
	return len(records) > 0 && len(pending) == 0, nil
}

// removed reports whether the runtime dropped the object: it does not know
// the ID, and its own record says it deleted it (runc-slow: the OCI runtime
// was told to delete it; containerd: its store deleted the container, or
// never stored it).
func (t *target) removed(ctx context.Context, id string) (bool, error) {
	if err := t.status(ctx, id); status.Code(err) != codes.NotFound {
		return false, nil
	}
	if t.store != nil {
		stored, deleted := t.store.stored(id)
		if !stored {
			// Never stored, unless the witness missed it.
			if err := t.store.gap(t.sent); err != nil {
				return false, err
			}
			return true, nil
		}
		return deleted, nil
	}
	records, err := t.node.ociRecords(ctx, t.token)
	for _, r := range records {
		if r.ID == id && r.Command == "delete" {
			return true, err
		}
	}
	return false, err
}

func (t *target) kind() string {
	if t.stage == stageSandbox {
		return "sandbox"
	}
	return "container"
}

// cleanup removes whatever the target left in the runtime, after letting
// anything held go on.
func (t *target) cleanup(ctx context.Context) {
	if !t.slow.ViaNRI {
		if err := t.node.release(ctx, t.token, false); err != nil {
			framework.Logf("cleanup: %v (runc-slow lets the creation go after %s)", err, t.slow.Delay)
		}
	}
	started, _ := t.started(ctx)
	listed, _ := t.listed(ctx)
	ids := append(started, listed...)
	if t.store != nil { // off the NRI path, created is started
		ids = append(ids, t.store.createdIDs()...)
	}
	slices.Sort(ids)
	for _, id := range slices.Compact(ids) {
		if t.stage == stageSandbox {
			_, _ = t.node.CRI.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id})
			_, _ = t.node.CRI.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
		} else {
			_, _ = t.node.CRI.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id})
		}
	}
}

// explain is a failure message for gomega: format, then what the runtime
// and the witnesses say (describe), read only if the check fails.
func (t *target) explain(ctx context.Context, format string, args ...any) func() string {
	return func() string { return fmt.Sprintf(format, args...) + "\n" + t.describe(ctx) }
}

// describe renders what the runtime and the witnesses say, for failures.
func (t *target) describe(ctx context.Context) string {
	listed, lerr := t.listed(ctx)
	started, serr := t.started(ctx)
	records, _ := t.node.ociRecords(ctx, t.token)
	s := fmt.Sprintf("%s %s (attempt %d) on %s, runtime %s; %s\n  listed: %v (%v)\n  creations started: %v (%v)\n  runc-slow records:\n%s",
		t.stage, t.token, t.attempt, t.node.Name, t.node.Runtime, t.slow, listed, lerr, started, serr, describeRecords(records))
	if t.store != nil {
		s += "  " + t.store.String() + "\n"
	}
	if t.slow.ViaNRI {
		events, err := t.node.nriEvents(ctx, string(t.hostPod.UID))
		s += fmt.Sprintf("  fake NRI plugin events of the host pod (%v):\n", err)
		for _, e := range events {
			s += fmt.Sprintf("    %s %s %s %s %s\n", e.Event, e.ContainerName, e.ContainerID, e.Result, e.Message)
		}
	}
	return s
}
