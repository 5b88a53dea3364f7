package harness

// How late the kubelet's own timers fire on a node while a spec runs: the
// tolerance a timing bound adds to what the kubelet's mechanism allows, and
// what tells a busy node (TooBusy) from a kubelet that waits too long.
//
// The witness is the node's Lease, which the kubelet renews on a timer of
// its own: every leaseDurationSeconds * 0.25 (its renew interval fraction),
// jittered by up to 4% (k8s.io/component-helpers lease controller), the
// next period starting when the last renewal returned. The kubelet writes
// renewTime from its own clock as it renews, so the gap between two
// renewals beyond the interval and its jitter is how late that timer fired:
// the kubelet's scheduling on a loaded node plus its API round trip. Only
// the kubelet writes its Lease; faultline reads it.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	clientset "k8s.io/client-go/kubernetes"

	"github.com/faultline-k8s/faultline/vocab/wire"
)

const (
	// nodeLeaseNamespace holds the kubelets' Leases.
	nodeLeaseNamespace = "kube-node-lease"
	// leaseRenewFraction is the kubelet's nodeLeaseRenewIntervalFraction
	// (pkg/kubelet/kubelet.go), a constant.
	leaseRenewFraction = 0.25
	// leaseRenewJitter is the lease controller's JitterUntil factor.
	leaseRenewJitter = 0.04
)

// Lateness is what a LatenessWatch saw of a kubelet's timer.
type Lateness struct {
	// Worst is the latest the timer fired beyond its period and jitter.
	Worst time.Duration
	// Renewals is how many renewals were seen; Interval the renew period.
	Renewals int
	Interval time.Duration
	// Err is why the Lease could not be read, if it could not.
	Err error
}

func (l Lateness) String() string {
	if l.Renewals < 2 {
		return fmt.Sprintf("not measured (%d Lease renewals seen; %v)", l.Renewals, l.Err)
	}
	return fmt.Sprintf("the kubelet's timers fired up to %s late (%d renewals of its Lease, every %s)", l.Worst.Round(100*time.Millisecond), l.Renewals, l.Interval)
}

// LatenessWatch follows one node's Lease from when it starts until its
// spec ends.
type LatenessWatch struct {
	mu       sync.Mutex
	last     time.Time
	interval time.Duration
	lateness Lateness
}

// WatchKubeletTimers starts watching how late the kubelet of node renews
// its Lease, until the running spec ends (DeferCleanup).
func WatchKubeletTimers(ctx context.Context, cs clientset.Interface, node string) *LatenessWatch {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ginkgo.DeferCleanup(cancel)
	w := &LatenessWatch{}
	go w.follow(ctx, cs, node)
	return w
}

// Lateness is what the watch has seen so far.
func (w *LatenessWatch) Lateness() Lateness {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lateness
}

// follow reads the Lease and watches it, and again a second after each
// end of the watch or failed read, until ctx ends.
func (w *LatenessWatch) follow(ctx context.Context, cs clientset.Interface, node string) {
	leases := cs.CoordinationV1().Leases(nodeLeaseNamespace)
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		lease, err := leases.Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			w.failed(err)
			return
		}
		w.see(lease)
		wi, err := leases.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", node).String(),
			ResourceVersion: lease.ResourceVersion,
		})
		if err != nil {
			w.failed(err)
			return
		}
		defer wi.Stop()
		for ev := range wi.ResultChan() {
			if l, ok := ev.Object.(*coordinationv1.Lease); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
				w.see(l)
			}
		}
	}, time.Second)
}

func (w *LatenessWatch) failed(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lateness.Err = err
}

// see records one state of the Lease: a renewal when its renewTime moved.
func (w *LatenessWatch) see(l *coordinationv1.Lease) {
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return
	}
	interval := time.Duration(float64(*l.Spec.LeaseDurationSeconds) * leaseRenewFraction * float64(time.Second))
	w.mu.Lock()
	defer w.mu.Unlock()
	w.record(l.Spec.RenewTime.Time, interval)
}

// record adds a renewal at t of a timer with this interval.
func (w *LatenessWatch) record(t time.Time, interval time.Duration) {
	if !t.After(w.last) {
		return // the same renewal again, or an older one
	}
	if !w.last.IsZero() && interval == w.interval {
		late := t.Sub(w.last) - time.Duration(float64(interval)*(1+leaseRenewJitter))
		w.lateness.Worst = max(w.lateness.Worst, late)
	}
	if w.lateness.Renewals == 0 || interval == w.interval {
		w.lateness.Renewals++
	} else {
		w.lateness.Renewals, w.lateness.Worst = 1, 0 // a new interval starts over
	}
	w.last, w.interval = t, interval
	w.lateness.Interval = interval
}

// TooBusy ends the spec as inconclusive when the node's timers ran later
// than the check after it can absorb: absorb is the room between the
// bound the check derives from the stack's mechanism and the regression it
// must refuse, and a node whose timers fire that late could make a healthy
// stack look like the regression. The verdict then says the node was too
// busy (never a pass, never a failure), and the run says what to do. A
// lateness not measured (the Lease unreadable) is not taken for a quiet
// node: the spec goes on, its report saying so.
func TooBusy(check string, l Lateness, absorb time.Duration) {
	ginkgo.GinkgoHelper()
	ginkgo.AddReportEntry("kubelet timer lateness", l.String())
	if l.Renewals >= 2 && l.Worst >= absorb {
		Premise(fmt.Sprintf("the node was quiet enough to judge %s", check), false,
			fmt.Sprintf("%s%s; the check absorbs less than %s", wire.TooBusy, l, absorb))
	}
}
