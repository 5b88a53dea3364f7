package dra

import (
	"context"
	"fmt"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/test/e2e/framework"
	e2epod "k8s.io/kubernetes/test/e2e/framework/pod"
	admissionapi "k8s.io/pod-security-admission/api"

	"github.com/faultline-k8s/faultline/fakes/dra/driver"
	"github.com/faultline-k8s/faultline/fakes/dra/faultspec"
	"github.com/faultline-k8s/faultline/suites/harness"
	"github.com/faultline-k8s/faultline/vocab/needs"
)

var _ = describe("device health when the driver's health stream drops", framework.WithFeature(featureDRA), func() {
	f := framework.NewDefaultFramework("dra-health")
	f.NamespacePodSecurityLevel = admissionapi.LevelRestricted
	dumpOnFailure(f)

	// Not Serial. The drop ends the health stream of the second driver on
	// the node, so every pod there with a device of that driver shows it
	// Unknown for a while; no other spec looks at the second driver's
	// health (DRA-HEALTH-IN-POD-STATUS and the taint spec use the first
	// driver). Prepare and unprepare calls, which parallel specs make to
	// the second driver, are not touched: the drop ends the stream's RPC
	// (gRPC status Unavailable), not the kubelet's connection to the
	// driver, which those calls share. A spec that checks the second
	// driver's health must be Serial with this one.
	framework.It("shows a device's health as Unknown in the pod status while the driver's health stream is down, and Healthy again once the kubelet has reconnected", harness.Checks("DRA-HEALTH-RECONNECT"), harness.Informs(needs.GateHealth), harness.Lasts(healthStreamDownOf(nominalResync)),
		framework.WithFeature(featureResourceHealth), framework.WithSlow(), func(ctx context.Context) {
			// The stream stays down until the pod's next resync, at most
			// prepareRetryMax away, has shown the device Unknown; the rest
			// of healthStreamDown is faultline's slack.
			harness.Floor(harness.Wait("the pod's next kubelet resync, jitter included, while the health stream is down", prepareRetryMax()),
				harness.Period("kubelet health stream reconnect loop", healthReconnectPeriod))
			cs := f.ClientSet
			d := secondDriver
			w := watchHealth(ctx, f, "watched", d, "while the driver's health stream runs")
			node, id, health := w.node, w.id, w.health

			// The drop is a fault of another claim of the same driver on
			// the same node: it fires when that claim is prepared, after
			// the watched device was seen Healthy.
			ginkgo.By(fmt.Sprintf("a claim whose FaultSpec drops %s's health stream on %s for %s when it is prepared", d.Name, node, healthStreamDown()))
			trigger := createClaim(ctx, f, "trigger", []request{{name: "dev", driver: d}}, config(d, faultspec.FaultSpec{
				APIVersion: faultspec.APIVersion, Kind: faultspec.Kind,
				Health: []faultspec.HealthFault{{Type: faultspec.StreamDrop, Duration: healthStreamDown().String(), Message: "faultline: health stream dropped in namespace " + f.Namespace.Name}},
			}))
			triggerPod := podWithClaims("trigger", trigger)
			e2epod.SetNodeAffinity(&triggerPod.Spec, node)
			triggerPod = scheduled(ctx, f, createPod(ctx, f, triggerPod))
			trigger, _ = allocated(ctx, f, trigger, d)

			streams := func(ctx context.Context) ([]driver.StreamEvent, error) {
				return draClient().On(node, d).HealthStream(ctx)
			}
			var drop driver.StreamEvent
			gomega.Eventually(ctx, func(ctx context.Context) error {
				events, err := streams(ctx)
				if err != nil {
					return err
				}
				for _, e := range events {
					if e.Event == driver.StreamDropped && e.ClaimUID == string(trigger.UID) {
						drop = e
						return nil
					}
				}
				return fmt.Errorf("%s has not dropped its health stream for claim %s yet", d.Name, trigger.Name)
			}).WithTimeout(startSlack).WithPolling(poll).Should(gomega.Succeed())
			report("health stream dropped", "%s on %s at %s: %d open stream(s) ended, reconnects refused until %s",
				d.Name, node, drop.Time.Format(time.RFC3339), drop.Streams, drop.Until.Format(time.RFC3339))
			// The drop has fired and runs its course in the driver: the
			// trigger's device goes back to the parallel specs now.
			harness.Ours(cs.CoreV1().Pods(triggerPod.Namespace).Delete(ctx, triggerPod.Name, metav1.DeleteOptions{}))
			harness.Ours(cs.ResourceV1().ResourceClaims(trigger.Namespace).Delete(ctx, trigger.Name, metav1.DeleteOptions{}))

			ginkgo.By(fmt.Sprintf("the pod status shows %s Unknown while the stream is down (the kubelet publishes it at the pod's next sync, within %s)", id, prepareRetryMax()))
			var last v1.ResourceHealth
			harness.Cause("not-unknown", func() {
				gomega.Eventually(ctx, func(ctx context.Context) (v1.ResourceHealthStatus, error) {
					h, err := health(ctx)
					last = h
					return h.Health, err
				}).WithTimeout(healthStreamDown()).WithPolling(poll).Should(gomega.Equal(v1.ResourceHealthStatusUnknown), func() string {
					return fmt.Sprintf("%s's health stream on %s was down for %s (reconnects refused), but the pod status kept showing %s as %q: "+
						"the kubelet forgets a driver's device health when its stream ends (clearDriver), and must show the device Unknown by the pod's next sync",
						d.Name, node, healthStreamDown(), id, last.Health)
				})
			})
			report("Unknown in pod status", "%s after the drop", time.Since(drop.Time).Round(time.Second))

			ginkgo.By(fmt.Sprintf("once the driver serves the stream again the kubelet reconnects (every %s), and the pod status shows %s Healthy", healthReconnectPeriod, id))
			var reconnected *driver.StreamEvent
			var refused []driver.StreamEvent
			harness.Cause("not-recovered", func() {
				gomega.Eventually(ctx, func(ctx context.Context) error {
					// Health first: a Healthy read before a reconnect that
					// the record shows afterwards is not a false alarm.
					h, err := health(ctx)
					if err != nil {
						return err
					}
					events, err := streams(ctx)
					if err != nil {
						return err
					}
					reconnected, refused = nil, nil
					for i, e := range events {
						if !e.Time.After(drop.Time) {
							continue
						}
						switch e.Event {
						case driver.StreamRefused:
							refused = append(refused, e)
						case driver.StreamOpened:
							if reconnected == nil {
								reconnected = &events[i]
							}
						}
					}
					switch {
					case reconnected == nil && h.Health == v1.ResourceHealthStatusHealthy:
						harness.Cause("healthy-before-reconnect", func() {
							framework.Failf("the pod status shows %s Healthy although the kubelet has not reconnected to %s's health stream since it was dropped at %s (%d reconnects refused)",
								id, d.Name, drop.Time.Format(time.RFC3339), len(refused))
						})
					case reconnected == nil:
						lastTry := "none"
						if len(refused) > 0 {
							lastTry = refused[len(refused)-1].Time.Format(time.RFC3339)
						}
						return fmt.Errorf("the kubelet has not reconnected to %s's health stream on %s since the drop at %s (served again from %s): %d reconnects refused, the last at %s",
							d.Name, node, drop.Time.Format(time.RFC3339), drop.Until.Format(time.RFC3339), len(refused), lastTry)
					case h.Health != v1.ResourceHealthStatusHealthy:
						return fmt.Errorf("the kubelet reconnected at %s, but the pod status still shows %s as %q", reconnected.Time.Format(time.RFC3339), id, h.Health)
					}
					return nil
				}).WithTimeout(healthStreamDown() + healthReconnectPeriod + healthTimeout).WithPolling(poll).Should(gomega.Succeed())
			})
			var gaps []time.Duration
			for i := 1; i < len(refused); i++ {
				gaps = append(gaps, refused[i].Time.Sub(refused[i-1].Time))
			}
			report("kubelet reconnects", "%d refused while the stream was down, %s apart; reconnected %s after the stream was served again (%s after the drop)",
				len(refused), durations(gaps), reconnected.Time.Sub(*drop.Until).Round(100*time.Millisecond), reconnected.Time.Sub(drop.Time).Round(time.Second))
		})
})
