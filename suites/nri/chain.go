package nri

// NRI-ERROR-STOPS-CHAIN: a failing plugin stops the chain: plugins with a higher
// index do not see that event; plugins with a lower index did, and in
// index order.

import (
	"context"
	"fmt"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"k8s.io/kubernetes/test/e2e/framework"
	e2epod "k8s.io/kubernetes/test/e2e/framework/pod"

	"github.com/faultline-k8s/faultline/fakes/nri/faults"
	"github.com/faultline-k8s/faultline/fakes/nri/nriclient"
	"github.com/faultline-k8s/faultline/fakes/nri/record"
	"github.com/faultline-k8s/faultline/suites/harness"
)

var _ = describe("NRI plugin chain", framework.WithFeature(featureNRI), framework.WithLabel("ci"), func() {
	f := framework.NewDefaultFramework("nri-chain")

	for _, tc := range []struct {
		event   string
		failing Instance
	}{
		{"RunPodSandbox", B},
		{"CreateContainer", B},
		{"CreateContainer", A},
	} {
		framework.It(fmt.Sprintf("an error from %s in %s stops the chain: the plugins before it saw that attempt in index order, the plugins after it never see it", tc.failing, tc.event), harness.Checks("NRI-ERROR-STOPS-CHAIN"), func(ctx context.Context) {
			harness.Floor(floorRetries(tc.event, 1)...)
			name := strings.ToLower(fmt.Sprintf("chain-%s-%s", tc.event, tc.failing.Container))
			pod, node := createVictim(ctx, f, VictimPod(name, tc.failing.Fault(tc.event, faults.Fault{Mode: faults.Error, Times: 1})))
			harness.Cause("not-running", func() {
				framework.ExpectNoError(e2epod.WaitTimeoutForPodRunningInNamespace(ctx, f.ClientSet, pod.Name, pod.Namespace, retryTimeout(1)),
					"the pod must run once the fault has fired")
			})

			records := map[Instance][]record.Event{}
			for _, inst := range Instances {
				records[inst] = nriclient.Only(eventsOf(ctx, f, node, inst, pod), tc.event)
			}
			failing := records[tc.failing]
			harness.Cause("retries-wrong", func() {
				gomega.Expect(nriclient.Results(failing, tc.event)).To(gomega.Equal([]record.Result{record.Error, record.OK}),
					"%s must fail the first %s and pass the retry:\n%s", tc.failing, tc.event, nriclient.FormatEvents(failing))
			})
			failedID, passedID := attemptID(failing[0]), attemptID(failing[1])
			harness.Cause("retries-wrong", func() {
				gomega.Expect(failedID).NotTo(gomega.Equal(passedID), "the retry is a new attempt with a new ID")
			})
			ginkgo.By(fmt.Sprintf("%s failed attempt %.12s, the retry %.12s passed", tc.failing, failedID, passedID))

			// The failed attempt, as each plugin before the failing one saw it, in call order.
			var seen []record.Event
			for _, inst := range Instances {
				got := findAttempt(records[inst], tc.event, failedID)
				switch {
				case inst.Index < tc.failing.Index:
					harness.Cause("earlier-plugin-skipped", func() {
						gomega.Expect(got).NotTo(gomega.BeNil(),
							"%s (before %s) must have seen the failed attempt %.12s:\n%s", inst, tc.failing, failedID, nriclient.FormatEvents(records[inst]))
						gomega.Expect(got.Result).To(gomega.Equal(record.OK), "%s passed it", inst)
					})
					seen = append(seen, *got)
				case inst == tc.failing:
					seen = append(seen, failing[0])
				default:
					harness.Cause("later-plugin-called", func() {
						gomega.Expect(got).To(gomega.BeNil(),
							"%s (after %s) must not see the attempt %.12s that %s failed:\n%s", inst, tc.failing, failedID, tc.failing, nriclient.FormatEvents(records[inst]))
					})
					// Premise of "never sees it": registered all along.
					gomega.Expect(findAttempt(records[inst], tc.event, passedID)).NotTo(gomega.BeNil(),
						"%s must see the retry %.12s, so it was registered all along:\n%s", inst, passedID, nriclient.FormatEvents(records[inst]))
				}
			}
			harness.Cause("out-of-order", func() {
				for i := 1; i < len(seen); i++ {
					prev, cur := seen[i-1], seen[i]
					gomega.Expect(prev.End.After(cur.Start)).To(gomega.BeFalseBecause(
						"the runtime calls plugins one after the other in index order: %s (index %s) answered at %s, %s (index %s) was called at %s",
						prev.Plugin, prev.Index, prev.End.Format("15:04:05.000000"), cur.Plugin, cur.Index, cur.Start.Format("15:04:05.000000")))
				}
			})
		})
	}
})
