package dra

// The kubelet restarts while a DRA call is in progress (upstream
// test/e2e_node/dra_test.go's checklist): the kubelet is restarted through
// the CRI suite's relay (fixtures/cri, POST /restart-kubelet: SIGTERM to the
// node's kubelet, which systemd starts again) while a Stall fault holds the
// call in the fake driver, which the driver's record shows in progress.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/test/e2e/framework"
	admissionapi "k8s.io/pod-security-admission/api"
	"k8s.io/utils/ptr"

	"github.com/faultline-k8s/faultline/fakes/dra/calls"
	"github.com/faultline-k8s/faultline/fakes/dra/driver"
	"github.com/faultline-k8s/faultline/fakes/dra/faultspec"
	"github.com/faultline-k8s/faultline/fakes/lib/podproxy"
	"github.com/faultline-k8s/faultline/suites/harness"
)

const (
	// criFixtureSet is fixtures/cri (registered by suites/cri): the CRI
	// relay DaemonSet, whose HTTP side names a node's kubelet process
	// (/kubelet) and restarts it (POST /restart-kubelet).
	criFixtureSet = "cri"
	relaySelector = "app.kubernetes.io/name=cri-relay"
	relayHTTPPort = "8080"
)

var _ = harness.Describe(suite, func(ctx context.Context) { harness.Require(ctx, fixtureSet, criFixtureSet) }, harness.NeedsFixtures(fixtureSet, criFixtureSet),
	"kubelet restart during a DRA call", framework.WithFeature(featureDRA), framework.WithSerial(), framework.WithDisruptive(), func() {
		f := framework.NewDefaultFramework("dra-kubelet-restart")
		f.NamespacePodSecurityLevel = admissionapi.LevelRestricted
		dumpOnFailure(f)

		stall := []faultspec.Fault{{Type: faultspec.Stall, Duration: kubeletRestartStall.String(), Count: ptr.To(1)}}

		framework.It("retries a NodePrepareResources call the kubelet's restart cut: the pod runs, and the driver prepared the claim once", harness.Checks("DRA-KUBELET-RESTART-PREPARE"), framework.WithSlow(), func(ctx context.Context) {
			// The restart cuts the stall short (faultline's length).
			harness.Floor(floorKubeletRestart, floorQuietResync())
			claim := createClaim(ctx, f, "restart-prepare", []request{{name: "dev", driver: firstDriver}}, config(firstDriver, faults(stall, nil)))
			pod := scheduled(ctx, f, createPod(ctx, f, podWithClaims("restart-prepare", claim)))
			claim, _ = allocated(ctx, f, claim, firstDriver)
			node := pod.Spec.NodeName
			k := kubeletOnNode(ctx, f.ClientSet, node)

			ginkgo.By(fmt.Sprintf("waiting for the first prepare call, stalled for %s, to be in progress", kubeletRestartStall))
			waitInProgress(ctx, node, firstDriver, string(claim.UID), calls.Prepare, startSlack)
			ginkgo.By("restarting the kubelet on " + node + " while the call is in progress")
			k.restart(ctx)

			ginkgo.By(fmt.Sprintf("the new kubelet prepares the claim; the pod stays Pending until then and runs (within %s)", prepareAfterKubeletRestart()))
			pendingUntilPrepared(ctx, f, pod, firstDriver, string(claim.UID), prepareAfterKubeletRestart())
			waitRunning(ctx, f, pod)
			k.reRegistered(ctx)

			rep, err := draClient().On(node, firstDriver).Calls(ctx, string(claim.UID))
			harness.Ours(err)
			expectCut(rep, calls.Prepare)
			report("prepare calls", "%s", describeCalls(rep))
			harness.Cause("calls-wrong", func() {
				gomega.Expect(rep.Summary).To(gomega.Equal(calls.Summary{PrepareCalls: 2, PrepareFailed: 1, PrepareSucceeded: 1}),
					"the call the restart cut, then one preparation by the new kubelet, and nothing else")
			})

			ginkgo.By(fmt.Sprintf("no second preparation after success, also not at the next kubelet resync (%s)", prepareRetryMax()))
			expectNotPreparedAgain(ctx, node, claim, rep.Summary)
		})

		framework.It("retries a NodeUnprepareResources call the kubelet's restart cut: the pod's deletion completes, and the driver unprepared the claim once", harness.Checks("DRA-KUBELET-RESTART-UNPREPARE"), func(ctx context.Context) {
			harness.Floor(floorKubeletRestart)
			cs := f.ClientSet
			claim := createClaim(ctx, f, "restart-unprepare", []request{{name: "dev", driver: firstDriver}}, config(firstDriver, faults(nil, stall)))
			pod := scheduled(ctx, f, createPod(ctx, f, podWithClaims("restart-unprepare", claim)))
			claim, _ = allocated(ctx, f, claim, firstDriver)
			node := pod.Spec.NodeName
			waitRunning(ctx, f, pod)
			k := kubeletOnNode(ctx, cs, node)

			ginkgo.By(fmt.Sprintf("deleting the pod: its first unprepare call stalls for %s", kubeletRestartStall))
			harness.Ours(cs.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}))
			waitInProgress(ctx, node, firstDriver, string(claim.UID), calls.Unprepare, startSlack)
			ginkgo.By("restarting the kubelet on " + node + " while the call is in progress")
			k.restart(ctx)

			ginkgo.By(fmt.Sprintf("the pod is gone within %s, and only after its claim was unprepared", unprepareAfterKubeletRestart))
			rep := goneAfterUnprepared(ctx, f, pod, node, string(claim.UID), unprepareAfterKubeletRestart)
			k.reRegistered(ctx)

			expectCut(rep, calls.Unprepare)
			report("calls", "%s", describeCalls(rep))
			harness.Cause("calls-wrong", func() {
				gomega.Expect(rep.Summary).To(gomega.Equal(calls.Summary{
					PrepareCalls: 1, PrepareSucceeded: 1, UnprepareCalls: 2, UnprepareFailed: 1, UnprepareSucceeded: 1,
				}), "the unprepare call the restart cut, then one unpreparation by the new kubelet, and nothing else")
			})
		})
	})

// waitInProgress waits until the driver's record shows a call of method m
// for the claim in progress (begun, not ended), and fails at once when one
// ended before it was seen.
func waitInProgress(ctx context.Context, node string, d driverRef, claimUID string, m calls.Method, timeout time.Duration) {
	ginkgo.GinkgoHelper()
	gomega.Eventually(ctx, func(ctx context.Context) error {
		rep, err := draClient().On(node, d).Calls(ctx, claimUID)
		if err != nil {
			return err
		}
		for _, c := range rep.Calls {
			if c.Method == m {
				return gomega.StopTrying(fmt.Sprintf("a %s call ended before it was seen in progress: %s", m, describeCalls(rep)))
			}
		}
		for _, c := range rep.InProgress {
			if c.Method == m {
				framework.Logf("%s call %d for claim %s in progress on %s since %s", m, c.Attempt, claimUID, node, c.Time.Format(time.RFC3339Nano))
				return nil
			}
		}
		return fmt.Errorf("no %s call in progress for claim %s on %s yet (the driver's record lists the calls in progress under inProgress)", m, claimUID, node)
	}).WithTimeout(timeout).WithPolling(poll).Should(gomega.Succeed())
}

// expectCut checks that the first call of method m is the one the restart
// cut: it failed as an interrupted stall, before the stall was over, and
// no call was in progress any more.
func expectCut(rep calls.Report, m calls.Method) {
	ginkgo.GinkgoHelper()
	gomega.Expect(rep.InProgress).To(gomega.BeEmpty(), "calls still in progress")
	var first *calls.Call
	for i := range rep.Calls {
		if rep.Calls[i].Method == m {
			first = &rep.Calls[i]
			break
		}
	}
	gomega.Expect(first).NotTo(gomega.BeNil(), "a %s call", m)
	gomega.Expect(first.Outcome).To(gomega.Equal(calls.Failed), "the %s call the restart cut", m)
	gomega.Expect(first.Error).To(gomega.ContainSubstring("transient/stalled"))
	stalled, err := time.ParseDuration(first.Stalled)
	framework.ExpectNoError(err, "stalled %q", first.Stalled)
	report(fmt.Sprintf("%s call cut by the kubelet restart", m), "after %s of its %s stall", stalled, kubeletRestartStall)
	gomega.Expect(stalled).To(gomega.BeNumerically("<", kubeletRestartStall),
		"the kubelet's restart, not the end of the stall, must have ended the %s call", m)
}

// describeCalls renders a call record for messages.
func describeCalls(rep calls.Report) string {
	var b strings.Builder
	for _, c := range rep.Calls {
		fmt.Fprintf(&b, "[%s %d %s %s", c.Method, c.Attempt, c.Time.Format("15:04:05.000"), c.Outcome)
		if c.Stalled != "" {
			fmt.Fprintf(&b, " stalled %s", c.Stalled)
		}
		b.WriteString("] ")
	}
	for _, c := range rep.InProgress {
		fmt.Fprintf(&b, "[%s %d since %s in progress] ", c.Method, c.Attempt, c.Time.Format("15:04:05.000"))
	}
	if b.Len() == 0 {
		return "no calls"
	}
	return strings.TrimSpace(b.String())
}

// kubeletProcess is the node's kubelet as the relay finds it; a restart
// gives a new PID or start time.
type kubeletProcess struct {
	Name      string `json:"name"`
	PID       int    `json:"pid"`
	StartTime uint64 `json:"startTime"`
}

// kubeletRestart restarts one node's kubelet and puts the node back.
type kubeletRestart struct {
	cs   clientset.Interface
	node string
	// opened counts each driver's health streams (KEP-4680) the kubelet
	// had opened before the restart: a new kubelet opens one when it has
	// registered the driver.
	opened map[string]int
	// signalled: the restart was asked for, so the cleanup waits for the
	// drivers to be registered again.
	signalled bool
}

// kubeletOnNode checks that the relay on node finds its kubelet, notes
// the drivers' health streams, and registers the cleanup that leaves the
// node usable whatever happens: the kubelet running, the node Ready, the
// drivers registered again, every fixture set ready.
func kubeletOnNode(ctx context.Context, cs clientset.Interface, node string) *kubeletRestart {
	ginkgo.GinkgoHelper()
	_, err := kubeletOn(ctx, cs, node)
	framework.ExpectNoError(err, "the CRI relay on %s must find the kubelet's process (--kubelet-process, started by the node's init)", node)
	k := &kubeletRestart{cs: cs, node: node, opened: map[string]int{}}
	for _, d := range drivers {
		n, err := healthStreamsOpened(ctx, node, d)
		framework.ExpectNoError(err, "%s's health streams on %s", d.Name, node)
		k.opened[d.Name] = n
	}
	ginkgo.DeferCleanup(func(ctx context.Context) {
		if !k.signalled {
			return
		}
		gomega.Eventually(ctx, func(ctx context.Context) error {
			_, err := kubeletOn(ctx, cs, node)
			return err
		}).WithTimeout(kubeletRestartTimeout).WithPolling(poll).Should(gomega.Succeed(), "a kubelet must run on %s", node)
		k.nodeReady(ctx)
		k.reRegistered(ctx)
		harness.AwaitFixtureSets(ctx)
	})
	return k
}

// kubeletOn asks the node's relay for the kubelet's process.
func kubeletOn(ctx context.Context, cs clientset.Interface, node string) (kubeletProcess, error) {
	var p kubeletProcess
	relay, err := podproxy.PodOnNode(ctx, cs, harness.FixtureSetNamespace(criFixtureSet), relaySelector, node)
	if err != nil {
		return p, err
	}
	err = harness.FakePods().GetJSON(ctx, relay, relayHTTPPort, "/kubelet", nil, &p)
	return p, err
}

// restart stops the kubelet through the relay and waits until a new
// kubelet process runs (the node's init starts it again) and the node is
// Ready: the witness of the restart is the new PID or start time.
func (k *kubeletRestart) restart(ctx context.Context) {
	ginkgo.GinkgoHelper()
	before, err := kubeletOn(ctx, k.cs, k.node)
	framework.ExpectNoError(err, "the kubelet's process on %s before the restart", k.node)
	relay, err := podproxy.PodOnNode(ctx, k.cs, harness.FixtureSetNamespace(criFixtureSet), relaySelector, k.node)
	framework.ExpectNoError(err)
	// The port-forward that carries the answer runs through the kubelet,
	// so the restart may cut it before the answer arrives: only a refusal
	// the relay sent is an error; the new process is the proof either way.
	k.signalled = true
	var signalled kubeletProcess
	if err := harness.FakePods().PostJSON(ctx, relay, relayHTTPPort, "/restart-kubelet", nil, &signalled); err != nil {
		var refused *podproxy.HTTPError
		if errors.As(err, &refused) {
			framework.Failf("the relay on %s refused to restart the kubelet: %v", k.node, err)
		}
		framework.Logf("POST /restart-kubelet got no answer (%v): the restart ends the port-forward through the kubelet", err)
	} else {
		gomega.Expect(signalled.PID).To(gomega.Equal(before.PID), "the relay must signal the kubelet that ran a moment before")
	}
	var after kubeletProcess
	gomega.Eventually(ctx, func(ctx context.Context) error {
		p, err := kubeletOn(ctx, k.cs, k.node)
		if err != nil {
			return err
		}
		if p.PID == before.PID && p.StartTime == before.StartTime {
			return fmt.Errorf("the kubelet on %s is still pid %d", k.node, p.PID)
		}
		after = p
		return nil
	}).WithTimeout(kubeletRestartTimeout).WithPolling(poll).Should(gomega.Succeed(),
		"a new kubelet process must run on %s within %s after SIGTERM to pid %d", k.node, kubeletRestartTimeout, before.PID)
	report("kubelet restart", "%s on %s: pid %d -> %d", before.Name, k.node, before.PID, after.PID)
	k.nodeReady(ctx)
}

// nodeReady waits until the node's Ready condition is True.
func (k *kubeletRestart) nodeReady(ctx context.Context) {
	ginkgo.GinkgoHelper()
	gomega.Eventually(ctx, func(ctx context.Context) (v1.ConditionStatus, error) {
		n, err := k.cs.CoreV1().Nodes().Get(ctx, k.node, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == v1.NodeReady {
				return c.Status, nil
			}
		}
		return v1.ConditionUnknown, nil
	}).WithTimeout(kubeletRestartTimeout).WithPolling(poll).Should(gomega.Equal(v1.ConditionTrue), "node %s must be Ready", k.node)
}

// reRegistered waits until the new kubelet has registered every driver
// again, so that the next spec finds them usable: it opens a new health
// stream to each driver it registered. A driver the kubelet had no stream
// to before the restart (no ResourceHealthStatus) gives no witness; then
// the node Ready is all the cleanup can wait for.
func (k *kubeletRestart) reRegistered(ctx context.Context) {
	ginkgo.GinkgoHelper()
	for _, d := range drivers {
		before := k.opened[d.Name]
		if before == 0 {
			framework.Logf("the kubelet on %s had opened no health stream to %s: no witness of its registration after the restart", k.node, d.Name)
			continue
		}
		gomega.Eventually(ctx, func(ctx context.Context) (int, error) {
			return healthStreamsOpened(ctx, k.node, d)
		}).WithTimeout(kubeletRestartTimeout).WithPolling(poll).Should(gomega.BeNumerically(">", before),
			"the restarted kubelet on %s must register %s again (a new health stream)", k.node, d.Name)
	}
}

// healthStreamsOpened counts the health streams the kubelet on node opened
// to driver d.
func healthStreamsOpened(ctx context.Context, node string, d driverRef) (int, error) {
	events, err := draClient().On(node, d).HealthStream(ctx)
	n := 0
	for _, e := range events {
		if e.Event == driver.StreamOpened {
			n++
		}
	}
	return n, err
}
