package nri

// NRI-STALLED-PLUGIN-DROPPED and NRI-CRASHED-PLUGIN-DROPPED: a plugin that stalls past the runtime's request
// timeout, drops its connection or crashes mid-event suffers a fatal error:
// the runtime drops it and carries on with the other plugins, so the pod
// still starts; the plugin comes back and sees later events.
//
// These specs are Serial: while a plugin stalls, the runtime holds its NRI
// lock for every pod on the node, and an instance the runtime dropped misses
// the events of every other spec's pods.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/test/e2e/framework"
	e2epod "k8s.io/kubernetes/test/e2e/framework/pod"

	"github.com/faultline-k8s/faultline/fakes/nri/faults"
	"github.com/faultline-k8s/faultline/fakes/nri/nriclient"
	"github.com/faultline-k8s/faultline/fakes/nri/plugin"
	"github.com/faultline-k8s/faultline/fakes/nri/record"
	"github.com/faultline-k8s/faultline/suites/harness"
)

// stallFor is how long a stall fault lasts: well past the runtime's request
// timeout, so that only the runtime giving up ends it early, yet short of
// the kubelet's 30 s CRI timeout, so that a runtime that waits it out is
// seen as that and not as a kubelet timeout.
func stallFor() time.Duration {
	return min(10*harness.Cluster().NRIRequestTimeout, 20*time.Second)
}

var _ = describe("NRI fatal plugin errors", framework.WithFeature(featureNRI), framework.WithSerial(), framework.WithLabel("ci"), func() {
	f := framework.NewDefaultFramework("nri-fatal")

	// Every spec here leaves the plugin instances registered again, for
	// the specs after it.
	ginkgo.BeforeEach(func(ctx context.Context) {
		framework.ExpectNoError(harness.WaitForDaemonSets(ctx, f.ClientSet, PluginNamespace, reregisterTimeout()),
			"every plugin instance must be registered before a spec drops one")
		ginkgo.DeferCleanup(func(ctx context.Context) {
			framework.ExpectNoError(harness.WaitForDaemonSets(ctx, f.ClientSet, PluginNamespace, restartTimeout()),
				"the plugin instances must be registered again after the spec")
		})
	})

	for _, event := range []string{"RunPodSandbox", "CreateContainer"} {
		framework.It(fmt.Sprintf("a plugin that stalls in %s past the runtime's request timeout is disconnected, the pod still starts, and the plugin reconnects and sees later events", event), harness.Checks("NRI-STALLED-PLUGIN-DROPPED"), func(ctx context.Context) {
			// The plugin's reconnect and readiness are the fake's own.
			harness.Floor(floorRequestTimeout())
			stall := stallFor()
			pod, node := createVictim(ctx, f, VictimPod(strings.ToLower("stall-"+event),
				B.Fault(event, faults.Fault{Mode: faults.Stall, Stall: stall, Times: 1})))
			harness.Cause("not-running", func() {
				framework.ExpectNoError(e2epod.WaitTimeoutForPodRunningInNamespace(ctx, f.ClientSet, pod.Name, pod.Namespace, podStart+harness.Cluster().NRIRequestTimeout),
					"the runtime must give up on the stalled plugin after its request timeout and start the pod")
			})
			expectNoFailureEvents(ctx, f, pod)

			// The pod may start before the stall has ended: a runtime that
			// kept the plugin (it did not drop it, and went on without
			// its answer) leaves the stall running its whole length.
			// Judged once the record is finished, whichever it is.
			stalled := eventuallyAnswered(ctx, node, B, pod, event, stall+podStart)
			first := stalled[0]
			took := first.End.Sub(first.Start)
			gomega.Expect(first.Result).To(gomega.Equal(record.Stalled), nriclient.FormatEvents(stalled))
			harness.Cause("not-dropped", func() {
				gomega.Expect(first.Interrupted).To(gomega.BeTrueBecause(
					"the runtime must drop a plugin that does not answer within its request timeout (%s); %s stalled %s without being dropped:\n%s",
					harness.Cluster().NRIRequestTimeout, B, took, nriclient.FormatEvents(stalled)))
				gomega.Expect(took).To(gomega.BeNumerically("<", stall), "the stall ended early, when the runtime dropped the plugin")
			})
			harness.Cause("dropped-early", func() {
				gomega.Expect(took).To(gomega.BeNumerically(">=", harness.Cluster().NRIRequestTimeout-100*time.Millisecond),
					"the runtime must not drop the plugin before its request timeout")
			})
			ginkgo.By(fmt.Sprintf("the runtime dropped %s after %s: %s", B, took.Round(time.Millisecond), first.Message))

			next := findAttempt(eventsOf(ctx, f, node, C, pod), event, attemptID(first))
			harness.Cause("later-plugin-skipped", func() {
				gomega.Expect(next).NotTo(gomega.BeNil(), "the runtime must go on with %s for the same attempt %.12s", C, attemptID(first))
				gomega.Expect(next.Result).To(gomega.Equal(record.OK))
			})

			expectReconnected(ctx, f, node, B, first, false)
			expectSeesLaterEvents(ctx, f, node, B, pod)
		})
	}

	// A plugin that crashes, and the same for one that drops its connection.
	for _, tc := range []struct {
		event string
		inst  Instance
		mode  faults.Mode
	}{
		{"RunPodSandbox", A, faults.Crash},
		{"CreateContainer", B, faults.Crash},
		{"StartContainer", B, faults.Disconnect},
	} {
		what := "crashes"
		if tc.mode == faults.Disconnect {
			what = "drops its connection"
		}
		framework.It(fmt.Sprintf("a plugin that %s mid-%s does not fail the pod: the pod starts, the plugin comes back and sees later events", what, tc.event), harness.Checks("NRI-CRASHED-PLUGIN-DROPPED"), func(ctx context.Context) {
			// The runtime sees the connection go at once, and the kubelet
			// restarts a crashed container the first time without back-off.
			harness.Floor()
			restarts := instanceRestarts(ctx, f, tc.inst)
			pod, node := createVictim(ctx, f, VictimPod(strings.ToLower(string(tc.mode)+"-"+tc.event),
				tc.inst.Fault(tc.event, faults.Fault{Mode: tc.mode, Times: 1})))
			harness.Cause("not-running", func() {
				framework.ExpectNoError(e2epod.WaitTimeoutForPodRunningInNamespace(ctx, f.ClientSet, pod.Name, pod.Namespace, podStart+harness.Cluster().NRIRequestTimeout),
					"the runtime must carry on without the plugin and start the pod")
			})
			expectNoFailureEvents(ctx, f, pod)

			var records []record.Event
			gomega.Eventually(ctx, func(ctx context.Context) ([]record.Event, error) {
				events, err := plugins().On(node, tc.inst).Events(ctx, string(pod.UID))
				records = nriclient.Only(events, tc.event)
				return records, err
			}).WithTimeout(restartTimeout()).ShouldNot(gomega.BeEmpty(),
				"%s keeps its record across a crash; it must show %s", tc.inst, tc.event)
			first := records[0]
			gomega.Expect(first.Result).To(gomega.Equal(record.Result(tc.mode)), nriclient.FormatEvents(records))
			ginkgo.By(fmt.Sprintf("%s %s mid-%s: %s", tc.inst, tc.mode, tc.event, first.Message))

			for _, inst := range Instances {
				if inst.Index <= tc.inst.Index {
					continue
				}
				next := findAttempt(eventsOf(ctx, f, node, inst, pod), tc.event, attemptID(first))
				harness.Cause("later-plugin-skipped", func() {
					gomega.Expect(next).NotTo(gomega.BeNil(), "the runtime must go on with %s for the same attempt %.12s", inst, attemptID(first))
					gomega.Expect(next.Result).To(gomega.Equal(record.OK))
				})
			}

			expectReconnected(ctx, f, node, tc.inst, first, tc.mode == faults.Crash)
			if tc.mode == faults.Crash {
				p, err := plugins().Pod(ctx, node)
				framework.ExpectNoError(err)
				st := containerStatus(p, tc.inst.Container)
				gomega.Expect(st.RestartCount).To(gomega.BeNumerically(">", restarts[node]), "the kubelet restarted the crashed instance")
				gomega.Expect(st.LastTerminationState.Terminated).NotTo(gomega.BeNil())
				gomega.Expect(st.LastTerminationState.Terminated.ExitCode).To(gomega.Equal(int32(plugin.CrashExitCode)),
					"the instance ended by the injected crash")
			}
			expectSeesLaterEvents(ctx, f, node, tc.inst, pod)
		})
	}
})

// instanceRestarts returns the restart count of the instance's container
// on every node.
func instanceRestarts(ctx context.Context, f *framework.Framework, inst Instance) map[string]int32 {
	ginkgo.GinkgoHelper()
	pods, err := plugins().Pods(ctx)
	framework.ExpectNoError(err)
	out := map[string]int32{}
	for i := range pods {
		if st := containerStatus(&pods[i], inst.Container); st != nil {
			out[pods[i].Spec.NodeName] = st.RestartCount
		}
	}
	return out
}

// expectReconnected waits for the instance to be registered again after
// the fault in record first: it must record the loss of its connection and
// a new registration after it (in a new process if it crashed).
func expectReconnected(ctx context.Context, f *framework.Framework, node string, inst Instance, first record.Event, crashed bool) {
	ginkgo.GinkgoHelper()
	timeout := reregisterTimeout()
	if crashed {
		timeout = restartTimeout()
	}
	harness.Cause("not-reconnected", func() {
		framework.ExpectNoError(plugins().WaitReady(ctx, node, timeout, inst), "%s must come back", inst)
	})
	own, err := plugins().On(node, inst).OwnEvents(ctx)
	harness.Ours(err)
	var lost, synced *record.Event
	for i := range own {
		e := &own[i]
		if e.Seq <= first.Seq {
			continue
		}
		switch e.Event {
		case record.Disconnected, record.PluginStart:
			if lost == nil {
				lost = e
			}
		case record.Synchronize:
			if lost != nil && synced == nil {
				synced = e
			}
		}
	}
	var mine []record.Event
	for _, e := range own {
		if e.PodUID == "" && e.Seq > first.Seq {
			mine = append(mine, e)
		}
	}
	// The plugin's own record of its connection: its loss is the fault's
	// doing (faultline's), the new registration the runtime's.
	gomega.Expect(lost).NotTo(gomega.BeNil(), "%s must record the loss of its connection after the fault:\n%s", inst, nriclient.FormatEvents(mine))
	harness.Cause("not-reconnected", func() {
		gomega.Expect(synced).NotTo(gomega.BeNil(), "%s must register with the runtime again:\n%s", inst, nriclient.FormatEvents(mine))
	})
	if crashed {
		gomega.Expect(synced.Boot).To(gomega.BeNumerically(">", first.Boot), "a new process registered:\n%s", nriclient.FormatEvents(mine))
	}
	ginkgo.By(fmt.Sprintf("%s registered again (%s)", inst, synced.Message))
}

// expectSeesLaterEvents deletes pod and waits for the instance to see the
// pod being stopped: the runtime sends events to the returned plugin.
func expectSeesLaterEvents(ctx context.Context, f *framework.Framework, node string, inst Instance, pod *v1.Pod) {
	ginkgo.GinkgoHelper()
	ginkgo.By("deleting the pod: the returned plugin must see it stop")
	deleteNow(ctx, f, pod)
	harness.Cause("later-events-missed", func() {
		eventuallyRecorded(ctx, f, node, inst, pod, "StopPodSandbox", record.OK, podDeletion)
	})
}
