package nri

// NRI-POLICY-*: the per-plugin failure policy of NRI v0.12.4 (README,
// "Request Errors, Timeouts and Failure Policy"; pkg/adaptation
// handleRequestError and dropsPlugin). A plugin declares, when it
// registers, what the runtime does when the plugin fails to process a
// request: exceeds the request timeout, loses its connection or causes a
// protocol error.
//
//   - fail_request: the request fails with an error naming the plugin and
//     the request; the remaining plugins are not called. Default: the
//     request proceeds with the remaining plugins.
//   - keep_connected: a plugin that exceeds the timeout stays registered
//     and receives the next requests. Default: the runtime unregisters
//     (closes) it. A lost connection always unregisters it.
//
// An error the plugin returns is no such failure: it fails the request
// whatever the policy. A runtime whose NRI predates v0.12.4 ignores the
// policy and treats the plugin as if it had declared none; a spec that sees
// that ends with "not implemented" (policyIgnored), unless the runtime is
// known to vendor NRI >= v0.12.4 (harness.Cluster().NRIVersion), where it
// fails; where the version is unknown it is skipped ("NRI version
// unknown"): the spec cannot tell the two apart. containerd 2.4.2 vendors NRI v0.12.3 and CRI-O 1.36 v0.11.0;
// faultline builds containerd with a later NRI on --nri-version.
//
// Instance P declares fail_request and keep_connected, instance K
// keep_connected alone (fixtures/nri). A spec that stalls one of them is
// Serial: while it stalls the runtime waits for it with every pod of the
// node, and a runtime that ignores the policy drops it.
//
// NRI-REQUIRED-PLUGIN-TIMEOUT holds containerd/nri#316: the default validator's
// required plugins (validator.go) count a plugin that the runtime dropped
// mid-CreateContainer as consulted, so the container is created as if the
// plugin had seen it (Feature:NRIDefaultValidator, like validator.go).

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/test/e2e/framework"
	e2epod "k8s.io/kubernetes/test/e2e/framework/pod"

	"github.com/faultline-k8s/faultline/fakes/nri/faults"
	"github.com/faultline-k8s/faultline/fakes/nri/nriclient"
	"github.com/faultline-k8s/faultline/fakes/nri/record"
	"github.com/faultline-k8s/faultline/suites/harness"
	"github.com/faultline-k8s/faultline/vocab/needs"
)

// policyStall is how long the policy specs stall P or K: three request
// timeouts, so the runtime's timeout, not the plugin's answer, ends the
// request, and a kept plugin answers well before the kubelet retries a
// failed request (kubeletRetry); never longer than stallFor.
func policyStall() time.Duration {
	return min(3*harness.Cluster().NRIRequestTimeout, stallFor())
}

var _ = describe("NRI per-plugin failure policy", framework.WithFeature(featureNRI), framework.WithFeature(featureFailurePolicy), func() {
	f := framework.NewDefaultFramework("nri-policy")

	for _, event := range []string{"RunPodSandbox", "CreateContainer"} {
		framework.It(fmt.Sprintf("a plugin that declares fail_request and stalls in %s past the request timeout fails that request with an error naming the plugin and the request; the plugins after it never see that attempt, and the pod runs once the stall clears", event), framework.WithSerial(), harness.Checks("NRI-POLICY-FAIL-REQUEST"), func(ctx context.Context) {
			// The stall's length is faultline's: only the timeout counts.
			harness.Floor(append([]harness.Part{floorRequestTimeout()}, floorRetries(event, 1)...)...)
			registeredAround(ctx, f)
			timeout := harness.Cluster().NRIRequestTimeout
			stall := policyStall()
			pod, node := createVictim(ctx, f, VictimPod("fail-request-"+lower(event),
				P.Fault(event, faults.Fault{Mode: faults.Stall, Stall: stall, Times: 1, Container: faultContainer(event)})))
			harness.Cause("not-running", func() {
				framework.ExpectNoError(e2epod.WaitTimeoutForPodRunningInNamespace(ctx, f.ClientSet, pod.Name, pod.Namespace, retryTimeout(1)+stall),
					"the pod must run once %s's stall has cleared", P)
			})

			stalled := eventuallyAnswered(ctx, node, P, pod, event, stall+reregisterTimeout())
			first := stalled[0]
			gomega.Expect(first.Result).To(gomega.Equal(record.Stalled), nriclient.FormatEvents(stalled))
			failedID := attemptID(first)
			ginkgo.By(fmt.Sprintf("%s stalled %s in %s of attempt %.12s (connection lost meanwhile: %v)",
				P, first.End.Sub(first.Start).Round(time.Millisecond), event, failedID, first.Interrupted))

			// The runtime called the plugins before P for the attempt.
			for _, inst := range Instances {
				if inst.Index < P.Index {
					saw := findAttempt(eventsOf(ctx, f, node, inst, pod), event, failedID)
					harness.Cause("earlier-plugin-skipped", func() {
						gomega.Expect(saw).NotTo(gomega.BeNil(), "%s (before %s) must have seen the attempt %.12s", inst, P, failedID)
					})
				}
			}
			// Did the request go on past P?
			var saw []string
			var later *record.Event
			for _, inst := range laterInstances(P) {
				if got := findAttempt(eventsOf(ctx, f, node, inst, pod), event, failedID); got != nil {
					saw = append(saw, inst.String())
					if later == nil {
						later = got
					}
				}
			}
			if later != nil {
				events, err := harness.PodEvents(ctx, f.ClientSet, pod)
				harness.Ours(err)
				if FindEvent(events, failureReason(event), P.String()) == nil {
					// A failure only where the runtime is known to honour
					// the policy; otherwise policyIgnored ends the spec
					// without one.
					harness.Cause("policy-ignored", func() {
						policyIgnored(P, fmt.Sprintf("%s stalled in %s of attempt %.12s; the runtime %s and went on with the plugins after it (%s saw the attempt), and the request did not fail\n%s",
							P, event, failedID, howHandled(P, first, *later, timeout), strings.Join(saw, ", "), nriclient.FormatEvents(stalled)))
					})
				}
			}
			harness.Cause("later-plugin-called", func() {
				gomega.Expect(saw).To(gomega.BeEmpty(),
					"fail_request: the runtime must fail the request at %s and call none of the plugins after it for the attempt %.12s", P, failedID)
			})

			var ev *v1.Event
			harness.Cause("message-missing", func() {
				ev = EventuallyPodEvent(ctx, f.ClientSet, pod, failureReason(event), P.String(), eventDelivery)
				ginkgo.By("the kubelet reports: " + ev.Message)
				gomega.Expect(ev.Message).To(gomega.ContainSubstring(event),
					"the error must name the request as well as the plugin %s", P)
			})

			records := nriclient.Only(eventsOf(ctx, f, node, P, pod), event)
			harness.Cause("retries-wrong", func() {
				gomega.Expect(nriclient.Results(records, event)).To(gomega.Equal([]record.Result{record.Stalled, record.OK}),
					"%s must stall the first %s and pass the kubelet's retry:\n%s", P, event, nriclient.FormatEvents(records))
			})
			retryID := attemptID(records[1])
			harness.Cause("retries-wrong", func() {
				gomega.Expect(retryID).NotTo(gomega.Equal(failedID), "the retry is a new attempt with a new ID")
			})
			for _, inst := range laterInstances(P) {
				// Premise of "never called": the plugins after P were
				// registered all along.
				gomega.Expect(findAttempt(eventsOf(ctx, f, node, inst, pod), event, retryID)).NotTo(gomega.BeNil(),
					"%s must see the retry %.12s, so it was registered all along", inst, retryID)
			}
			s := runtimeStateOf(ctx, f, node, pod)
			harness.Cause("wrong-attempt-runs", func() {
				gomega.Expect(heldIDs(s)).To(gomega.ContainElement(retryID),
					"the pod must run with the retry %.12s that every plugin passed:\n%s", retryID, FormatState(s))
			})
		})
	}

	for _, event := range []string{"RunPodSandbox", "CreateContainer"} {
		framework.It(fmt.Sprintf("a plugin that declares keep_connected and stalls in %s past the request timeout stays registered: the request goes on without it, the pod starts, and the plugin gets the next events on the same connection", event), framework.WithSerial(), harness.Checks("NRI-POLICY-KEEP-CONNECTED"), func(ctx context.Context) {
			harness.Floor(floorRequestTimeout())
			registeredAround(ctx, f)
			timeout := harness.Cluster().NRIRequestTimeout
			stall := policyStall()
			pod, node := createVictim(ctx, f, VictimPod("keep-connected-"+lower(event),
				K.Fault(event, faults.Fault{Mode: faults.Stall, Stall: stall, Times: 1, Container: faultContainer(event)})))
			harness.Cause("not-running", func() {
				framework.ExpectNoError(e2epod.WaitTimeoutForPodRunningInNamespace(ctx, f.ClientSet, pod.Name, pod.Namespace, podStart+timeout),
					"without fail_request, the runtime must go on without the stalled plugin after its request timeout and start the pod")
			})
			expectNoFailureEvents(ctx, f, pod)

			stalled := eventuallyAnswered(ctx, node, K, pod, event, stall+podStart)
			first := stalled[0]
			gomega.Expect(first.Result).To(gomega.Equal(record.Stalled), nriclient.FormatEvents(stalled))
			took := first.End.Sub(first.Start)
			next := findAttempt(eventsOf(ctx, f, node, C, pod), event, attemptID(first))
			harness.Cause("later-plugin-skipped", func() {
				gomega.Expect(next).NotTo(gomega.BeNil(), "the request must go on with %s for the same attempt %.12s", C, attemptID(first))
				gomega.Expect(next.Result).To(gomega.Equal(record.OK))
			})

			if lost := connectionChanges(ctx, node, K, first); first.Interrupted || len(lost) > 0 {
				harness.Cause("policy-ignored", func() {
					policyIgnored(K, fmt.Sprintf("%s stalled in %s; the runtime %s, went on without it, and %s registered again:\n%s",
						K, event, howHandled(K, first, *next, timeout), K, nriclient.FormatEvents(append([]record.Event{first}, lost...))))
				})
			}
			waited := next.Start.Sub(first.Start)
			harness.Cause("waited-out", func() {
				gomega.Expect(next.Start.Before(first.End)).To(gomega.BeTrueBecause(
					"the runtime must give up on %s after its request timeout (%s), not wait for the kept plugin's answer: %s was called %s after %s began to stall, which answered after %s",
					K, timeout, C, waited.Round(time.Millisecond), K, took.Round(time.Millisecond)))
			})
			harness.Cause("dropped-early", func() {
				gomega.Expect(waited).To(gomega.BeNumerically(">=", timeout-100*time.Millisecond),
					"the runtime must not give up on %s before its request timeout (%s)", K, timeout)
			})
			ginkgo.By(fmt.Sprintf("the runtime went on with %s after %s and kept %s, which answered after %s",
				C, waited.Round(time.Millisecond), K, took.Round(time.Millisecond)))

			ginkgo.By("deleting the pod: the kept plugin must see it stop on the same connection")
			deleteNow(ctx, f, pod)
			var stops []record.Event
			harness.Cause("later-events-missed", func() {
				stops = eventuallyRecorded(ctx, f, node, K, pod, "StopPodSandbox", record.OK, podDeletion)
			})
			gomega.Expect(stops[0].Seq).To(gomega.BeNumerically(">", first.Seq))
			lost := connectionChanges(ctx, node, K, first)
			harness.Cause("connection-lost", func() {
				gomega.Expect(lost).To(gomega.BeEmpty(),
					"keep_connected: %s must get the next events on the connection it stalled on, without losing it or registering again:\n%s",
					K, nriclient.FormatEvents(lost))
			})
		})
	}

	for _, event := range []string{"RunPodSandbox", "CreateContainer"} {
		framework.It(fmt.Sprintf("an error that a plugin with a failure policy returns in %s still fails the request with the plugin's message: the policy covers timeouts and lost connections, not returned errors; the plugin stays registered", event), harness.Checks("NRI-POLICY-RETURNED-ERROR-FAILS"), func(ctx context.Context) {
			harness.Floor(floorRetries(event, 1)...)
			// K declares keep_connected without fail_request: for a
			// failure the policy covered, the request would go on.
			pod, node := createVictim(ctx, f, VictimPod("policy-error-"+lower(event),
				K.Fault(event, faults.Fault{Mode: faults.Error, Times: 1, Container: faultContainer(event)})))
			want := K.ErrorText(event, pod, faultContainer(event))
			var ev *v1.Event
			harness.Cause("message-missing", func() { ev = EventuallyPodEvent(ctx, f.ClientSet, pod, failureReason(event), want, retryTimeout(1)) })
			ginkgo.By("the kubelet reports: " + ev.Message)
			harness.Cause("not-running", func() {
				framework.ExpectNoError(e2epod.WaitTimeoutForPodRunningInNamespace(ctx, f.ClientSet, pod.Name, pod.Namespace, retryTimeout(1)),
					"the pod must run once the fault has fired")
			})

			records := nriclient.Only(eventsOf(ctx, f, node, K, pod), event)
			harness.Cause("retries-wrong", func() {
				gomega.Expect(nriclient.Results(records, event)).To(gomega.Equal([]record.Result{record.Error, record.OK}),
					"%s must fail the first %s and pass the retry:\n%s", K, event, nriclient.FormatEvents(records))
			})
			failedID := attemptID(records[0])
			for _, inst := range laterInstances(K) {
				got := eventsOf(ctx, f, node, inst, pod)
				harness.Cause("later-plugin-called", func() {
					gomega.Expect(findAttempt(got, event, failedID)).To(gomega.BeNil(),
						"the error %s returned must fail the request whatever its policy (%s): %s must not see the attempt %.12s:\n%s",
						K, K.Policy(), inst, failedID, nriclient.FormatEvents(nriclient.Only(got, event)))
				})
			}
			lost := connectionChanges(ctx, node, K, records[0])
			harness.Cause("connection-lost", func() {
				gomega.Expect(lost).To(gomega.BeEmpty(), "a returned error must not cost %s its registration:\n%s", K, nriclient.FormatEvents(lost))
			})
		})
	}
})

var _ = describe("NRI required plugin that times out", framework.WithFeature(featureNRI), framework.WithFeature(featureValidator), framework.WithSerial(), func() {
	f := framework.NewDefaultFramework("nri-required-timeout")

	framework.It("a container whose required plugin stalls in CreateContainer past the request timeout is not created as if the plugin had been consulted: the container that runs is one whose CreateContainer the plugin answered", harness.Checks("NRI-REQUIRED-PLUGIN-TIMEOUT"), harness.Needs(needs.NRIValidator), func(ctx context.Context) {
		// The container's creation, refused for the required plugin, is
		// retried at once (floorRetries); the plugin's return is the fake's.
		harness.Floor(floorRequestTimeout())
		registeredAround(ctx, f)
		// B declares no failure policy: the runtime drops it after the
		// timeout and goes on with the remaining plugins, then asks the
		// default validator whether the required plugins took part.
		required := B
		timeout := harness.Cluster().NRIRequestTimeout
		pod, node := createVictim(ctx, f, VictimPod("required-plugin-timeout",
			required.Fault("CreateContainer", faults.Fault{Mode: faults.Stall, Stall: stallFor(), Times: 1, Container: TestContainer}),
			nriclient.Annotation{Key: requiredPluginsAnnotation + "/container." + TestContainer, Value: fmt.Sprintf("[%q]", required.Name)}))

		stalled := eventuallyAnswered(ctx, node, required, pod, "CreateContainer", podStart+stallFor())
		first := stalled[0]
		gomega.Expect(first.Result).To(gomega.Equal(record.Stalled), nriclient.FormatEvents(stalled))
		// A runtime that kept the plugin breaks NRI-STALLED-PLUGIN-DROPPED,
		// and that spec says so; this one then has no timed-out plugin to
		// ask the validator about: inconclusive, never a pass or ours.
		harness.Premise("the runtime dropped "+required.String()+" at its request timeout ("+timeout.String()+")", first.Interrupted,
			"NRI-STALLED-PLUGIN-DROPPED checks the drop itself; the plugin's record:\n"+nriclient.FormatEvents(stalled))
		attempt := first.ContainerID
		ginkgo.By(fmt.Sprintf("the runtime dropped %s after %s in CreateContainer of container %.12s",
			required, first.End.Sub(first.Start).Round(time.Millisecond), attempt))

		harness.Cause("not-running", func() {
			framework.ExpectNoError(e2epod.WaitTimeoutForPodRunningInNamespace(ctx, f.ClientSet, pod.Name, pod.Namespace, retryTimeout(2)+reregisterTimeout()),
				"the container must be created once %s is registered again and answers", required)
		})
		s := runtimeStateOf(ctx, f, node, pod)
		var running []string
		for _, c := range s.Containers {
			if c.Name == TestContainer && c.State == "CONTAINER_RUNNING" {
				running = append(running, c.ID)
			}
		}
		if slices.Contains(running, attempt) {
			harness.Cause("timeout-counted", func() {
				framework.Failf("containerd/nri#316: the runtime created and started container %.12s in the CreateContainer that its required plugin %s never answered: "+
					"the runtime dropped %s after its request timeout (%s) and the default validator still counted it as consulted "+
					"(or the validator is not enabled: see NRI-REQUIRED-PLUGIN-MISSING)\n%s%s",
					attempt, required, required, timeout, nriclient.FormatEvents(stalled), FormatState(s))
			})
		}
		var answered []string
		for _, c := range nriclient.Only(eventsOf(ctx, f, node, required, pod), "CreateContainer") {
			if c.Result == record.OK {
				answered = append(answered, c.ContainerID)
			}
		}
		harness.Cause("not-running", func() {
			gomega.Expect(running).To(gomega.HaveLen(1), FormatState(s))
		})
		harness.Cause("unanswered-runs", func() {
			gomega.Expect(answered).To(gomega.ContainElement(running[0]),
				"the container that runs must be one whose CreateContainer its required plugin %s answered:\n%s", required, FormatState(s))
		})
		var ev *v1.Event
		harness.Cause("message-missing", func() { ev = EventuallyPodEvent(ctx, f.ClientSet, pod, "Failed", required.Name, eventDelivery) })
		ginkgo.By("the kubelet reports: " + ev.Message)
	})
})

// registeredAround, in a spec that stalls or drops an instance, waits until
// every instance is registered, and again when the spec ends, for the
// specs after it.
func registeredAround(ctx context.Context, f *framework.Framework) {
	ginkgo.GinkgoHelper()
	framework.ExpectNoError(harness.WaitForDaemonSets(ctx, f.ClientSet, PluginNamespace, reregisterTimeout()),
		"every plugin instance must be registered before a spec stalls one")
	ginkgo.DeferCleanup(func(ctx context.Context) {
		framework.ExpectNoError(harness.WaitForDaemonSets(ctx, f.ClientSet, PluginNamespace, restartTimeout()),
			"the plugin instances must be registered again after the spec")
	})
}

// laterInstances are the instances the runtime calls after inst.
func laterInstances(inst Instance) []Instance {
	var out []Instance
	for _, i := range Instances {
		if i.Index > inst.Index {
			out = append(out, i)
		}
	}
	return out
}

// faultContainer is the container a fault in event is limited to: the
// victim's for container events, none for pod events.
func faultContainer(event string) string {
	if faults.IsContainerEvent(event) {
		return TestContainer
	}
	return ""
}

// failureReason is the reason of the kubelet's event when a RunPodSandbox
// or CreateContainer fails.
func failureReason(event string) string {
	if faults.IsContainerEvent(event) {
		return "Failed"
	}
	return "FailedCreatePodSandBox"
}

// eventuallyAnswered waits until the instance recorded event for pod and
// finished its first record (a stall ends when its time is up or the
// connection is lost), and returns the records of that event.
func eventuallyAnswered(ctx context.Context, node string, inst Instance, pod *v1.Pod, event string, timeout time.Duration) []record.Event {
	ginkgo.GinkgoHelper()
	var got []record.Event
	gomega.Eventually(ctx, func(ctx context.Context) (string, error) {
		events, err := plugins().On(node, inst).Events(ctx, string(pod.UID))
		if err != nil {
			return "", err
		}
		got = nriclient.Only(events, event)
		switch {
		case len(got) == 0:
			return "no " + event + " yet", nil
		case got[0].Result == record.Pending:
			return "the first " + event + " still pending", nil
		}
		return "finished", nil
	}).WithTimeout(timeout).WithPolling(time.Second).Should(gomega.Equal("finished"),
		"%s must record %s of pod %s and finish it", inst, event, pod.Name)
	return got
}

// connectionChanges returns what the instance recorded about its own
// connection after its record after (a lost connection, a new process, a
// new registration) that can be the runtime's answer to that record. A
// loss that every other instance shared, later than afterwardsWindow
// after the record ended, is the runtime dropping every plugin at once for
// a reason of its own: CRI-O does so when it ends a RunPodSandbox whose
// caller has given up (docs/findings/crio-nri-expired-context-defeats-sandbox-cache.md),
// which the CRI suite's slow creations cause beside this spec. It and the
// reconnection after it are logged and left out.
func connectionChanges(ctx context.Context, node string, inst Instance, after record.Event) []record.Event {
	ginkgo.GinkgoHelper()
	records := map[string][]record.Event{}
	for _, i := range Instances {
		own, err := plugins().On(node, i).OwnEvents(ctx)
		harness.Ours(err)
		records[i.Name] = own
	}
	mine, shared := ownConnectionChanges(inst, after, records)
	if len(shared) > 0 {
		ginkgo.By(fmt.Sprintf("left out: the runtime dropped every plugin at once, %s among them, later than %s after its record %d; the changes:\n%s",
			inst, afterwardsWindow, after.Seq, nriclient.FormatEvents(shared)))
	}
	return mine
}

// afterwardsWindow bounds how long after a plugin's answer the runtime's
// reaction to it can come: the runtime drops a plugin in the call that
// got the answer. sharedDropWindow is how close together the plugins'
// records of one drop of them all are.
const (
	afterwardsWindow = time.Second
	sharedDropWindow = time.Second
)

// ownConnectionChanges splits inst's connection records after its record
// after into its own and those of a drop of every instance at once (each
// other instance recorded a loss within sharedDropWindow) that
// came later than afterwardsWindow after that record ended, with the
// reconnection that followed it.
func ownConnectionChanges(inst Instance, after record.Event, records map[string][]record.Event) (mine, shared []record.Event) {
	sharedDrop := func(lost record.Event) bool {
		if lost.Start.Sub(after.End) <= afterwardsWindow {
			return false
		}
		for _, other := range Instances {
			if other.Name == inst.Name {
				continue
			}
			if !slices.ContainsFunc(records[other.Name], func(e record.Event) bool {
				d := e.Start.Sub(lost.Start)
				return e.Event == record.Disconnected && d >= -sharedDropWindow && d <= sharedDropWindow
			}) {
				return false
			}
		}
		return true
	}
	inShared := false
	for _, e := range records[inst.Name] {
		if e.Seq <= after.Seq || e.PodUID != "" {
			continue
		}
		switch e.Event {
		case record.Disconnected:
			inShared = sharedDrop(e)
		case record.PluginStart, record.Synchronize:
		default:
			continue
		}
		if inShared && e.Event != record.PluginStart {
			shared = append(shared, e)
			continue
		}
		inShared = false
		mine = append(mine, e)
	}
	return mine, shared
}

// howHandled says what the runtime did with inst, which stalled in the
// record stalled, judging by when it called the plugin after it (next, the
// same attempt).
func howHandled(inst Instance, stalled, next record.Event, timeout time.Duration) string {
	took := stalled.End.Sub(stalled.Start).Round(time.Millisecond)
	switch {
	case stalled.Interrupted:
		return fmt.Sprintf("closed %s's connection after %s (request timeout %s)", inst, took, timeout)
	case !next.Start.Before(stalled.End):
		return fmt.Sprintf("waited out %s's stall of %s for its answer", inst, took)
	}
	return fmt.Sprintf("kept %s registered but gave up on it after %s", inst, next.Start.Sub(stalled.Start).Round(time.Millisecond))
}

func lower(s string) string {
	out := []rune{}
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				out = append(out, '-')
			}
			r += 'a' - 'A'
		}
		out = append(out, r)
	}
	return string(out)
}
