package harness

// Fixture sets: the fakes the specs need on the nodes (fixtures/<set>),
// deployed on demand and shared by every suite and every Ginkgo process of a
// run. A suite registers the sets it owns (RegisterFixtureSet); its specs
// Require the sets they use before they run (Describe does it for a suite's
// top-level containers). Require deploys a set idempotently (creating an
// object another process created already is fine) and waits until it is
// ready; a process remembers a set it saw ready and only re-checks it, which
// is cheap, so a spec never starts while, say, the NRI plugins re-register
// after another spec restarted the runtime. The suite setup removes sets an
// earlier, killed run left behind; the suite teardown removes every set the
// run deployed.
//
// The fakes' controls and the CRI relay answer only the run's control token
// (fakes/lib/control): process 1 makes it in the suite setup and hands it
// to the other processes with the setup's data; the sets carry only its
// hash (.Extra.ControlTokenHash). Because every run removes the sets it
// finds before its first spec, each run deploys them afresh with its own
// hash, also on a cluster kept from an earlier run.

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/test/e2e/framework"
	"sigs.k8s.io/e2e-framework/klient/wait"

	"github.com/faultline-k8s/faultline/fakes/lib/control"
	"github.com/faultline-k8s/faultline/fixtures"
)

// FixtureSet describes how to deploy one fixture set.
type FixtureSet struct {
	// Name is the set's directory under fixtures/ ("dra", "nri", "cri").
	Name string
	// Namespace holds the set's namespaced objects; the set exists in the
	// cluster while it does (it is created first and deleted last).
	Namespace string
	// Values returns the set's extra template values (.Extra); nil: none.
	Values func(ctx context.Context, cs clientset.Interface) (map[string]string, error)
	// Ready are the set's own readiness checks, on top of the ones every set
	// gets: its DaemonSets' pods all run, updated, with every container
	// started (daemonSetReady), and every readiness probe of their pods
	// passes now (asked through a port-forward, so a component that lost
	// its registration a moment ago counts as not ready although the
	// kubelet's last probe passed, and one that just registered counts as
	// ready before the kubelet's next probe, up to a period later).
	Ready []ReadyCheck
	// Timeout bounds the set becoming ready, after deployment or after a
	// spec disturbed it (default DefaultFixtureTimeout).
	Timeout time.Duration
}

// ReadyCheck reports whether part of a set is ready, and if not, why. An
// error counts as not ready (the API server may blink); the last reason is
// reported when the wait times out.
type ReadyCheck func(ctx context.Context, cs clientset.Interface) (ready bool, why string, err error)

// DefaultFixtureTimeout bounds a set becoming ready: the fakes image is on
// the nodes already (loaded into kind, or pulled once), so this is the time
// to start a few small containers and for them to register with the kubelet
// or the runtime.
const DefaultFixtureTimeout = 3 * time.Minute

// removalTimeout bounds a set's objects (its namespace last) disappearing
// after their deletion.
const removalTimeout = 2 * time.Minute

// setEnv is what the registry needs of the cluster.
type setEnv struct {
	cs      clientset.Interface
	applier fixtures.ObjectApplier
	render  func(set FixtureSet, extra map[string]string) ([]*unstructured.Unstructured, error)
}

type setState struct {
	objects []*unstructured.Unstructured // rendered once per process
	ready   bool                         // this process saw the set ready
}

// registry holds the fixture sets of the binary and what this process
// knows about them.
type registry struct {
	mu    sync.Mutex
	sets  map[string]FixtureSet
	names []string // in registration order
	state map[string]*setState
	// newEnv connects to the cluster, once, on first use.
	newEnv func() (*setEnv, error)
	env    *setEnv
	poll   time.Duration
	logf   func(format string, args ...any)
}

func newRegistry(newEnv func() (*setEnv, error)) *registry {
	return &registry{sets: map[string]FixtureSet{}, state: map[string]*setState{}, newEnv: newEnv,
		poll: time.Second, logf: framework.Logf}
}

// fixtureSets is the binary's registry.
var fixtureSets = newRegistry(clusterEnv)

func clusterEnv() (*setEnv, error) {
	config, err := framework.LoadConfig()
	if err != nil {
		return nil, err
	}
	cs, err := clientset.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	applier, err := fixtures.NewApplier(config)
	if err != nil {
		return nil, err
	}
	return &setEnv{cs: cs, applier: applier, render: func(set FixtureSet, extra map[string]string) ([]*unstructured.Unstructured, error) {
		extra, err := withTokenHash(extra, runControlToken())
		if err != nil {
			return nil, err
		}
		return fixtures.Render(set.Name, fixtures.Values{Namespace: set.Namespace, Image: Flags.FakesImage, PullPolicy: Flags.PullPolicy, NodeSelector: Flags.NodeSelector, Extra: extra})
	}}, nil
}

// controlToken is the run's control token (fakes/lib/control), set by
// the suite setup in every process. Only this process's memory holds it.
var controlToken struct {
	sync.Mutex
	token control.Token
}

func setControlToken(t control.Token) {
	controlToken.Lock()
	defer controlToken.Unlock()
	controlToken.token = t
}

func runControlToken() control.Token {
	controlToken.Lock()
	defer controlToken.Unlock()
	return controlToken.token
}

// withTokenHash adds the hash of the run's token to a set's template
// values (a copy): the fakes and the relay answer only that token.
func withTokenHash(extra map[string]string, token control.Token) (map[string]string, error) {
	if token.IsZero() {
		return nil, errors.New("no control token: the suite setup makes it (SynchronizedBeforeSuite)")
	}
	out := make(map[string]string, len(extra)+1)
	for k, v := range extra {
		out[k] = v
	}
	out["ControlTokenHash"] = token.Hash()
	return out, nil
}

// RegisterFixtureSet adds a set to the binary's registry; a suite calls it
// for each set it owns (var _ = harness.RegisterFixtureSet(...)). Other
// suites may Require the set by name.
func RegisterFixtureSet(set FixtureSet) bool {
	if err := fixtureSets.register(set); err != nil {
		panic(err)
	}
	return true
}

// FixtureSetNamespace is the namespace of a registered set, for specs that
// read what its components record.
func FixtureSetNamespace(name string) string {
	set, err := fixtureSets.lookup(name)
	if err != nil {
		panic(err)
	}
	return set.Namespace
}

// Require makes sure the named sets are deployed and ready before the spec
// goes on; it fails the spec otherwise. Call it from BeforeEach (Describe
// does).
func Require(ctx context.Context, names ...string) {
	ginkgo.GinkgoHelper()
	for _, name := range names {
		framework.ExpectNoError(fixtureSets.require(ctx, name), "fixture set %s", name)
	}
}

// AwaitFixtureSets waits until the named sets are ready again, or with no
// names every set deployed in the cluster (by any process): the cleanup of a
// spec that disturbs them (restarts the runtime, makes the runtime drop a
// plugin), so that the next spec, of whatever suite, finds them ready.
func AwaitFixtureSets(ctx context.Context, names ...string) {
	ginkgo.GinkgoHelper()
	framework.ExpectNoError(fixtureSets.await(ctx, names...))
}

func (r *registry) register(set FixtureSet) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if set.Name == "" || set.Namespace == "" {
		return fmt.Errorf("fixture set %+v needs a name and a namespace", set)
	}
	if _, dup := r.sets[set.Name]; dup {
		return fmt.Errorf("fixture set %q registered twice", set.Name)
	}
	for _, other := range r.sets {
		if other.Namespace == set.Namespace {
			return fmt.Errorf("fixture sets %q and %q share namespace %s", other.Name, set.Name, set.Namespace)
		}
	}
	if set.Timeout == 0 {
		set.Timeout = DefaultFixtureTimeout
	}
	r.sets[set.Name] = set
	r.names = append(r.names, set.Name)
	r.state[set.Name] = &setState{}
	return nil
}

func (r *registry) lookup(name string) (FixtureSet, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	set, ok := r.sets[name]
	if !ok {
		return FixtureSet{}, fmt.Errorf("unknown fixture set %q (registered: %v; is the suite that owns it linked into the binary?)", name, r.names)
	}
	return set, nil
}

func (r *registry) connect() (*setEnv, error) {
	if r.env == nil {
		env, err := r.newEnv()
		if err != nil {
			return nil, fmt.Errorf("connect to the cluster: %w", err)
		}
		r.env = env
	}
	return r.env, nil
}

// require deploys the set unless this process saw it ready, and waits
// until it is ready.
func (r *registry) require(ctx context.Context, name string) error {
	set, err := r.lookup(name)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	env, err := r.connect()
	if err != nil {
		return err
	}
	st := r.state[name]
	if st.ready {
		ok, why, err := r.ready(ctx, env, set)
		if ok {
			return nil
		}
		if err != nil {
			why = err.Error()
		}
		r.logf("fixture set %s is not ready (%s): waiting up to %s", name, why, set.Timeout)
		if err := r.waitReady(ctx, env, set); err != nil {
			st.ready = false
			return err
		}
		r.logf("fixture set %s is ready again", name)
		return nil
	}
	objects, err := r.objects(ctx, env, set)
	if err != nil {
		return err
	}
	created := 0
	for _, obj := range objects {
		err := env.applier.Create(ctx, []*unstructured.Unstructured{obj})
		switch {
		case err == nil:
			created++
		case apierrors.IsAlreadyExists(err):
			// Another Ginkgo process deployed the set, or is doing so.
		default:
			return fmt.Errorf("deploy fixture set %s: %w", name, err)
		}
	}
	if created > 0 {
		r.logf("fixture set %s: created %d of its %d objects in %s", name, created, len(objects), set.Namespace)
	}
	start := time.Now()
	if err := r.waitReady(ctx, env, set); err != nil {
		return err
	}
	r.logf("fixture set %s is ready (waited %s)", name, time.Since(start).Round(time.Second))
	st.ready = true
	return nil
}

// objects renders the set once per process.
func (r *registry) objects(ctx context.Context, env *setEnv, set FixtureSet) ([]*unstructured.Unstructured, error) {
	st := r.state[set.Name]
	if st.objects != nil {
		return st.objects, nil
	}
	var extra map[string]string
	if set.Values != nil {
		var err error
		if extra, err = set.Values(ctx, env.cs); err != nil {
			return nil, fmt.Errorf("values of fixture set %s: %w", set.Name, err)
		}
	}
	objects, err := env.render(set, extra)
	if err != nil {
		return nil, fmt.Errorf("render fixture set %s: %w", set.Name, err)
	}
	st.objects = objects
	return objects, nil
}

// ready checks the set once.
func (r *registry) ready(ctx context.Context, env *setEnv, set FixtureSet) (bool, string, error) {
	checks := append([]ReadyCheck{daemonSetsReadyCheck(set.Namespace), probesPassCheck(set.Namespace)}, set.Ready...)
	for _, check := range checks {
		if ok, why, err := check(ctx, env.cs); !ok || err != nil {
			return false, why, err
		}
	}
	return true, "", nil
}

// waitReady polls the set's checks with e2e-framework's wait.For until they
// pass. The checks are a condition of their own, not the library's, because
// each says why a set is not ready, which the timeout reports (see
// daemonSetReady for the DaemonSets).
func (r *registry) waitReady(ctx context.Context, env *setEnv, set FixtureSet) error {
	var last string
	err := wait.For(func(ctx context.Context) (bool, error) {
		ok, why, err := r.ready(ctx, env, set)
		if err != nil {
			why = err.Error()
		}
		// The check the deadline cut short knows nothing: the one
		// before it says why the set was not ready. Client-go's rate
		// limiter gives up before the deadline, when its wait would
		// pass it.
		if (ctx.Err() == nil && !cutByDeadline(err)) || last == "" {
			last = why
		}
		return ok && err == nil, nil
	}, wait.WithContext(ctx), wait.WithTimeout(set.Timeout), wait.WithInterval(r.poll), wait.WithImmediate())
	if err != nil {
		return fmt.Errorf("fixture set %s in %s not ready within %s (%s): %w", set.Name, set.Namespace, set.Timeout, last, err)
	}
	return nil
}

// cutByDeadline says whether a check's error says only that the deadline
// came (or would come, client-go's rate limiter says, before its turn).
func cutByDeadline(err error) bool {
	return err != nil && (errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "would exceed context deadline"))
}

// await waits for the named sets, or every set whose namespace exists.
func (r *registry) await(ctx context.Context, names ...string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	env, err := r.connect()
	if err != nil {
		return err
	}
	if len(names) == 0 {
		for _, name := range r.names {
			exists, err := namespaceExists(ctx, env.cs, r.sets[name].Namespace)
			if err != nil {
				return err
			}
			if exists {
				names = append(names, name)
			}
		}
	}
	var errs []error
	for _, name := range names {
		set, ok := r.sets[name]
		if !ok {
			errs = append(errs, fmt.Errorf("unknown fixture set %q", name))
			continue
		}
		if err := r.waitReady(ctx, env, set); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeDeployed removes every registered set whose namespace exists: at
// the start of a run what a killed run left, at its end what it deployed.
func (r *registry) removeDeployed(ctx context.Context, why string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	env, err := r.connect()
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range r.names {
		set := r.sets[name]
		exists, err := namespaceExists(ctx, env.cs, set.Namespace)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !exists {
			continue
		}
		r.logf("removing fixture set %s (%s, namespace %s)", name, why, set.Namespace)
		if err := r.remove(ctx, env, set); err != nil {
			errs = append(errs, fmt.Errorf("remove fixture set %s: %w", name, err))
		}
		r.state[name].ready = false
	}
	return errors.Join(errs...)
}

// remove deletes the set's objects and waits until they are gone (the
// objects' e2e-framework condition, through wait.For). A set that cannot be
// rendered (its values unknown) loses its namespace at least.
func (r *registry) remove(ctx context.Context, env *setEnv, set FixtureSet) error {
	objects, err := r.objects(ctx, env, set)
	if err != nil {
		r.logf("%v: deleting only namespace %s", err, set.Namespace)
		ns := &unstructured.Unstructured{}
		ns.SetAPIVersion("v1")
		ns.SetKind("Namespace")
		ns.SetName(set.Namespace)
		objects = []*unstructured.Unstructured{ns}
	}
	if err := env.applier.Delete(ctx, objects); err != nil {
		return err
	}
	gone := env.applier.Deleted(objects)
	var last error
	err = wait.For(func(ctx context.Context) (bool, error) {
		done, err := gone(ctx)
		if err != nil {
			// The API server may blink: poll again.
			last = err
			return false, nil //nolint:nilerr // kept in last, for the timeout's message
		}
		return done, nil
	}, wait.WithContext(ctx), wait.WithTimeout(removalTimeout), wait.WithInterval(r.poll), wait.WithImmediate())
	if err != nil {
		return fmt.Errorf("objects of fixture set %s not gone within %s (last error: %v): %w", set.Name, removalTimeout, last, err)
	}
	return nil
}

func namespaceExists(ctx context.Context, cs clientset.Interface, name string) (bool, error) {
	_, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	}
	return false, fmt.Errorf("namespace %s: %w", name, err)
}

// daemonSetsReadyCheck: every DaemonSet of the namespace has all its pods
// scheduled, updated, running and started (daemonSetReady); not Ready,
// which lags a probe period behind: probesPassCheck asks the probes now.
func daemonSetsReadyCheck(namespace string) ReadyCheck {
	return func(ctx context.Context, cs clientset.Interface) (bool, string, error) {
		list, err := cs.AppsV1().DaemonSets(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		if len(list.Items) == 0 {
			return false, "no DaemonSets in " + namespace, nil
		}
		pods, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		for i := range list.Items {
			if ok, why := daemonSetReady(&list.Items[i], pods.Items); !ok {
				return false, why, nil
			}
		}
		return true, "", nil
	}
}

// probesPassCheck asks every readiness probe of the namespace's running
// pods (fakes/probe's loopback URLs) now, through a port-forward: a pod's
// Ready condition lags behind by up to a probe period.
func probesPassCheck(namespace string) ReadyCheck {
	return func(ctx context.Context, cs clientset.Interface) (bool, string, error) {
		pods, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		for i := range pods.Items {
			pod := &pods.Items[i]
			if pod.DeletionTimestamp != nil || pod.Status.Phase != v1.PodRunning {
				continue // the DaemonSet check covers pods that do not run
			}
			for _, c := range pod.Spec.Containers {
				port, path, ok := loopbackProbe(c.ReadinessProbe)
				if !ok {
					continue
				}
				// One attempt: the check is polled, and a fake that is not
				// ready yet must not hold the poll for a witness read's budget.
				if ok, why, err := FakePods().Probe(ctx, pod, port, path); err != nil || !ok {
					return false, fmt.Sprintf("pod %s container %s: %s", pod.Name, c.Name, why), err
				}
			}
		}
		return true, "", nil
	}
}

// loopbackProbe reads the port and path of a readiness probe run by
// fakes/probe ("probe http://127.0.0.1:<port>/<path>"), the probe of every
// faultline pod: their servers listen on loopback only.
func loopbackProbe(p *v1.Probe) (port, path string, ok bool) {
	if p == nil || p.Exec == nil || len(p.Exec.Command) != 2 || p.Exec.Command[0] != "/usr/local/bin/probe" {
		return "", "", false
	}
	u, err := url.Parse(p.Exec.Command[1])
	if err != nil || u.Hostname() != "127.0.0.1" || u.Port() == "" {
		return "", "", false
	}
	return u.Port(), u.Path, true
}
