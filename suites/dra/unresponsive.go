package dra

// A driver that stops answering after registration (upstream
// test/e2e_node/dra_test.go's checklist: "must be removed if plugin is
// unresponsive after registration"): an Unresponsive fault of a claim stops
// the fake driver's DRA service on the claim's node at the claim's first
// prepare, while its registration stays. The kubelet, whose gRPC channel to
// the driver lost its connection, removes the driver's ResourceSlices after
// its wiping delay; the API server shows that. The pod's events show what
// the user is told meanwhile, and once the driver answers again the
// kubelet's prepare is retried and the pod runs.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"k8s.io/kubernetes/test/e2e/framework"
	e2epod "k8s.io/kubernetes/test/e2e/framework/pod"
	admissionapi "k8s.io/pod-security-admission/api"

	"github.com/faultline-k8s/faultline/fakes/dra/driver"
	"github.com/faultline-k8s/faultline/fakes/dra/faultspec"
	"github.com/faultline-k8s/faultline/suites/harness"
)

// The driver's DRA service is down on the node for unresponsiveDown, so
// every claim of that driver there fails to prepare, and with its
// ResourceSlices gone nothing new of it is allocated on the node. That was
// why the spec was Serial when it stopped the second driver, which other
// specs use. Not Serial now: the fault stops the third driver, this spec's
// own, which no other spec uses; the kubelet's connections to the other
// drivers are their own, and the fixture set's readiness, which every
// spec's BeforeEach asks, leaves the stopped driver to this spec
// (suite.go, stoppedByFault). It lasts about unresponsiveDown and a resync
// (150-170 s measured with the kubelet's 1m resync), so it starts before
// the shorter specs (harness.Lasts).
var _ = describe("a driver that stops answering after registration", framework.WithFeature(featureDRA), func() {
	f := framework.NewDefaultFramework("dra-unresponsive")
	f.NamespacePodSecurityLevel = admissionapi.LevelRestricted
	dumpOnFailure(f)

	framework.It("removes the ResourceSlices of a registered driver that stops answering, names the driver in the error the pod sees, and runs the pod once the driver answers again", harness.Checks("DRA-UNRESPONSIVE-DRIVER"), framework.WithSlow(), harness.Lasts(unresponsiveDownOf(nominalResync)+nominalResync), func(ctx context.Context) {
		// The first prepare stops the service, the one at the next resync
		// finds it down (the wiping delay runs meanwhile), the one after
		// finds it back.
		harness.Floor(floorResync().Times(2))
		cs := f.ClientSet
		// The third driver, this spec's own. Its name is no part of
		// another driver's name, nor another's part of it
		// (fakes/dra/instances), so a message naming another driver is
		// not taken for naming it.
		d := thirdDriver
		claim := createClaim(ctx, f, "unresponsive", []request{{name: "dev", driver: d}}, config(d, faultspec.FaultSpec{
			APIVersion: faultspec.APIVersion, Kind: faultspec.Kind,
			Service: []faultspec.ServiceFault{{Type: faultspec.Unresponsive, Duration: unresponsiveDown().String()}},
		}))
		pod := scheduled(ctx, f, createPod(ctx, f, podWithClaims("unresponsive", claim)))
		claim, _ = allocated(ctx, f, claim, d)
		node := pod.Spec.NodeName
		driverOnNode := draClient().On(node, d)

		ginkgo.By(fmt.Sprintf("the claim's first prepare stops %s's DRA service on %s for %s; its registration stays", d.Name, node, unresponsiveDown()))
		var stop driver.ServiceEvent
		gomega.Eventually(ctx, func(ctx context.Context) error {
			st, err := driverOnNode.Service(ctx)
			if err != nil {
				return err
			}
			for _, e := range st.Events {
				if e.Event == driver.ServiceStopped && e.ClaimUID == string(claim.UID) {
					stop = e
					return nil
				}
			}
			return fmt.Errorf("%s on %s has not stopped its DRA service for claim %s yet (answering: %v)", d.Name, node, claim.Name, st.Answering)
		}).WithTimeout(startSlack).WithPolling(poll).Should(gomega.Succeed())
		report("DRA service stopped", "%s on %s at %s, until %s", d.Name, node, stop.Time.Format(time.RFC3339), stop.Until.Format(time.RFC3339))
		// Whatever happens below, the fixture is whole again for the specs
		// after this one: the driver serves and has published its devices.
		ginkgo.DeferCleanup(func(ctx context.Context) {
			gomega.Eventually(ctx, func(ctx context.Context) (int, error) {
				devices, err := publishedDevices(ctx, cs, d.Name, node)
				return len(devices), err
			}).WithTimeout(time.Until(*stop.Until)+startSlack).WithPolling(poll).Should(gomega.Equal(d.Devices),
				"%s on %s must publish its devices again once its DRA service is back", d.Name, node)
		})

		ginkgo.By(fmt.Sprintf("the kubelet removes %s's ResourceSlices on %s after its wiping delay (%s)", d.Name, node, sliceWipingDelay))
		harness.Cause("slices-kept", func() {
			gomega.Eventually(ctx, func(ctx context.Context) (map[string]resourceDevice, error) {
				return publishedDevices(ctx, cs, d.Name, node)
			}).WithTimeout(sliceWipingDelay+startSlack).WithPolling(poll).Should(gomega.BeEmpty(), func() string {
				return fmt.Sprintf("%s's DRA service on %s has not answered since %s (its registration stays), but its ResourceSlices are still there: "+
					"the kubelet must remove the slices of a driver it has no connection to after its wiping delay (%s; pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go)",
					d.Name, node, stop.Time.Format(time.RFC3339), sliceWipingDelay)
			})
			removedAfter := time.Since(stop.Time)
			report("ResourceSlices removed", "%s after the DRA service stopped", removedAfter.Round(time.Second))
			gomega.Expect(time.Now()).To(gomega.BeTemporally("<", *stop.Until),
				"the slices must be seen removed while the driver does not answer (until %s); this run saw it only after", stop.Until.Format(time.RFC3339))
		})

		ginkgo.By(fmt.Sprintf("once the driver answers again (at %s), the kubelet reconnects (gRPC backoff, at most %s), retries the prepare at the pod's resync, and the pod runs",
			stop.Until.Format(time.RFC3339), grpcReconnectMax))
		harness.Cause("not-running", func() {
			framework.ExpectNoError(e2epod.WaitTimeoutForPodRunningInNamespace(ctx, cs, pod.Name, pod.Namespace, time.Until(*stop.Until)+grpcReconnectMax+prepareRetryMax()+startSlack),
				"pod %s must run once %s answers again", pod.Name, d.Name)
		})
		rep, err := driverOnNode.Calls(ctx, string(claim.UID))
		harness.Ours(err)
		report("calls", "%s", describeCalls(rep))
		harness.Cause("calls-wrong", func() {
			gomega.Expect(rep.Summary.PrepareSucceeded).To(gomega.Equal(1), "the driver prepared the claim once, after it answered again")
		})

		ginkgo.By("every error the pod was shown names the driver")
		events, err := prepareEvents(ctx, cs, pod)
		harness.Ours(err)
		harness.Cause("event-missing", func() {
			gomega.Expect(events).NotTo(gomega.BeEmpty(), "the pod's prepare failed while %s did not answer: the kubelet must say so in an event", d.Name)
		})
		endpoint := "/" + d.Name + "/"
		var unnamed []string
		for i, e := range events {
			note := ""
			switch {
			case !strings.Contains(e.Message, d.Name):
				unnamed = append(unnamed, fmt.Sprintf("%q (x%d)", e.Message, e.Count))
			case !strings.Contains(strings.ReplaceAll(e.Message, endpoint, "/"), d.Name):
				note = " [names the driver only in the socket path]"
			}
			report(fmt.Sprintf("event %d", i+1), "%s %s (x%d): %s%s", e.Type, e.Reason, e.Count, e.Message, note)
		}
		harness.Cause("driver-not-named", func() {
			gomega.Expect(unnamed).To(gomega.BeEmpty(),
				"every event the pod got while %s did not answer must name the driver; these do not: %s. The kubelet (pkg/kubelet/cm/dra/manager.go) wraps a failed NodePrepareResources gRPC call as "+
					"\"NodePrepareResources: <gRPC error>\" without the driver", d.Name, strings.Join(unnamed, "; "))
		})
	})
})
