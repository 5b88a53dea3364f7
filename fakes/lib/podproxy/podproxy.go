// Package podproxy is the plumbing faultline's typed clients of its fakes
// (fakes/nri/nriclient, fakes/dra/draclient) and the suites share to
// reach the HTTP side of a pod in the fakes image (a fake's records and
// controls, the CRI relay).
//
// Those servers listen on the pod's loopback only, so that no other pod of
// the cluster can read a fake's records or trigger its controls; the way in
// is the API server's port-forward, as `kubectl port-forward` does, which
// works on any cluster, not only kind. pods/portforward is in the built-in
// edit and admin roles, so the servers also want the run's control token
// (fakes/lib/control), which Pods sends with every request. Pods keeps
// one forward per pod and port for the life of the process.
package podproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"

	"github.com/faultline-k8s/faultline/fakes/lib/control"
)

// Pods reaches HTTP servers on pods' loopback through port-forwards.
type Pods struct {
	cs   kubernetes.Interface
	http *http.Client
	// forward opens a forward; PortForward, or a stand-in in tests.
	forward Forward
	// token goes with every request (the zero token: none).
	token control.Token

	mu       sync.Mutex
	forwards map[forwardKey]*forwarded
	closed   bool
}

type forwardKey struct {
	pod  types.UID
	port int
}

type forwarded struct {
	addr string
	stop func()
}

// NewPods returns a Pods for the cluster of config that sends token with
// every request.
func NewPods(config *rest.Config, token control.Token) (*Pods, error) {
	cs, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	// One TCP connection, and so one forwarded stream, per request (in
	// NewPodsWith): a kept-alive connection would outlive a restarted
	// container.
	p := NewPodsWith(cs, func(ctx context.Context, pod *v1.Pod, port int) (string, func(), <-chan struct{}, error) {
		return portForward(ctx, config, pod, port)
	}, token)
	return p, nil
}

// Forward opens a forward to a pod's port and returns its local address,
// how to stop it, and a channel closed when it ended by itself (nil: never
// known to end).
type Forward func(ctx context.Context, pod *v1.Pod, port int) (addr string, stop func(), done <-chan struct{}, err error)

// NewPodsWith returns a Pods that lists pods with cs and opens forwards with
// forward: for tests of the typed clients, without an API server's
// port-forward.
func NewPodsWith(cs kubernetes.Interface, forward Forward, token control.Token) *Pods {
	return &Pods{cs: cs, forward: forward, token: token, forwards: map[forwardKey]*forwarded{},
		http: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 2 * time.Minute}}
}

// ClientSet is the clientset of the cluster the pods run in.
func (p *Pods) ClientSet() kubernetes.Interface { return p.cs }

// Token is the control token Pods sends, for the gRPC calls a suite makes
// through the CRI relay itself (control.Token.PerRPCCredentials).
func (p *Pods) Token() control.Token { return p.token }

// Close stops every forward.
func (p *Pods) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, f := range p.forwards {
		f.stop()
		delete(p.forwards, k)
	}
	p.closed = true
}

// addr returns the local address forwarded to pod's port, opening the
// forward on first use. A forward that ends by itself (the pod or the
// runtime under it went away) leaves the cache at once, so that its local
// port, free again, is never mistaken for it.
func (p *Pods) addr(ctx context.Context, pod *v1.Pod, port int) (string, error) {
	key := forwardKey{pod.UID, port}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return "", errors.New("port-forwards closed")
	}
	if f, ok := p.forwards[key]; ok {
		return f.addr, nil
	}
	addr, stop, done, err := p.forward(ctx, pod, port)
	if err != nil {
		return "", err
	}
	p.forwards[key] = &forwarded{addr: addr, stop: stop}
	if done != nil {
		go func() {
			<-done
			p.drop(key, addr)
		}()
	}
	return addr, nil
}

// drop stops the forward to key if it is still the one at addr (another
// request may have replaced it already), so the next request opens a new
// one.
func (p *Pods) drop(key forwardKey, addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if f, ok := p.forwards[key]; ok && f.addr == addr {
		f.stop()
		delete(p.forwards, key)
	}
}

// HTTPError is a non-2xx answer; Body says why the server refused.
type HTTPError struct {
	Status int
	Body   string
}

func (e *HTTPError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Status, e.Body) }

// A read of a fake's records or state is faultline's own witness: on a
// loaded node its port-forward (API server, kubelet, runtime) can take
// seconds to answer, and a read that gives up before the stack does turns
// faultline's slowness into a verdict. So a GET has a budget of its own,
// readBudget, independent of its caller's deadline (a poll's window, a
// spec's bound): it ends early only when the caller is cancelled (the spec
// ended or was interrupted). Each attempt gets attemptTimeout, and a GET
// that got no answer is sent again on a new forward, backing off, until
// the budget is spent; a forward that cannot even be opened (the pod is
// gone) is tried forwardTries times.
var (
	readBudget     = 2 * time.Minute
	attemptTimeout = 30 * time.Second
	forwardTries   = 3
	firstBackOff   = 500 * time.Millisecond
	maxBackOff     = 4 * time.Second
)

// ownBudget is the context of one read: cancelled with its caller, but not
// by the caller's deadline, and at the latest after budget.
func ownBudget(caller context.Context, budget time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(caller), budget)
	stop := context.AfterFunc(caller, func() {
		if !errors.Is(caller.Err(), context.DeadlineExceeded) {
			cancel()
		}
	})
	return ctx, func() { stop(); cancel() }
}

// do sends one request to path on pod's port. A GET that fails before an
// answer (the forward broke because the pod's container restarted, or it
// timed out on a loaded node) is sent again on a new forward within its
// own budget (readBudget); a POST only when its connection was refused (it
// never left), as otherwise it may have acted (POST /restart-runtime ends
// the very forward that carries its answer). A non-2xx answer is an answer,
// never retried.
func (p *Pods) do(ctx context.Context, method string, pod *v1.Pod, port, path string, query map[string]string) ([]byte, error) {
	n, err := strconv.Atoi(port)
	if err != nil || n <= 0 || n > 65535 {
		return nil, fmt.Errorf("port %q of %s/%s: want a port number", port, pod.Namespace, pod.Name)
	}
	values := url.Values{}
	for k, v := range query {
		values.Set(k, v)
	}
	read := method == http.MethodGet
	if read {
		var cancel context.CancelFunc
		ctx, cancel = ownBudget(ctx, readBudget)
		defer cancel()
	}
	started, backOff := time.Now(), firstBackOff
	var lastErr error
	attempts, forwardErrs := 0, 0
	for {
		attempts++
		body, answered, err := p.once(ctx, method, pod, n, path, values)
		if err == nil || answered {
			return body, err
		}
		lastErr = err
		var fwd *forwardError
		if errors.As(err, &fwd) {
			forwardErrs++
		}
		switch {
		case ctx.Err() != nil:
		case !read && (attempts > 1 || !errors.Is(err, syscall.ECONNREFUSED)):
			// A refused connection never reached the pod; anything else
			// may have, and only a GET may be sent twice.
		case forwardErrs >= forwardTries:
		default:
			if sleep(ctx, backOff) {
				backOff = min(2*backOff, maxBackOff)
				continue
			}
		}
		break
	}
	if attempts > 1 {
		return nil, fmt.Errorf("%w (%d attempts in %s)", lastErr, attempts, time.Since(started).Round(time.Millisecond))
	}
	return nil, lastErr
}

// forwardError is a forward that could not be opened.
type forwardError struct{ err error }

func (e *forwardError) Error() string { return e.err.Error() }
func (e *forwardError) Unwrap() error { return e.err }

// once sends the request once, on the pod's forward (opened if need be).
// answered says the server answered (err is then an HTTPError or nil); a
// request without an answer drops its forward, so the next opens a new one.
func (p *Pods) once(ctx context.Context, method string, pod *v1.Pod, port int, path string, values url.Values) (body []byte, answered bool, err error) {
	addr, err := p.addr(ctx, pod, port)
	if err != nil {
		return nil, false, &forwardError{err}
	}
	if method == http.MethodGet {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, attemptTimeout)
		defer cancel()
	}
	u := url.URL{Scheme: "http", Host: addr, Path: path, RawQuery: values.Encode()}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return nil, true, err // a request that cannot be made is not sent again
	}
	if !p.token.IsZero() {
		req.Header.Set("Authorization", p.token.Bearer())
	}
	resp, err := p.http.Do(req)
	if err == nil {
		body, err = io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		resp.Body.Close()
		if err == nil {
			if resp.StatusCode/100 != 2 {
				return body, true, &HTTPError{Status: resp.StatusCode, Body: string(bytes.TrimSpace(body))}
			}
			return body, true, nil
		}
	}
	p.drop(forwardKey{pod.UID, port}, addr)
	return nil, false, err
}

// sleep waits d unless ctx ends first; it says whether it waited.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Probe asks path on pod's port once, within the caller's context and at
// most attemptTimeout, and says whether it answered 2xx: a readiness check
// of a fake, which its caller polls, not a witness read to carry through.
// why says what answered instead; err is only a port that is no number.
func (p *Pods) Probe(ctx context.Context, pod *v1.Pod, port, path string) (ok bool, why string, err error) {
	n, err := strconv.Atoi(port)
	if err != nil || n <= 0 || n > 65535 {
		return false, "", fmt.Errorf("port %q of %s/%s: want a port number", port, pod.Namespace, pod.Name)
	}
	if _, _, err := p.once(ctx, http.MethodGet, pod, n, path, url.Values{}); err != nil {
		return false, fmt.Sprintf("GET %s from %s/%s:%s: %v", path, pod.Namespace, pod.Name, port, err), nil
	}
	return true, "", nil
}

// Get reads path from pod's port.
func (p *Pods) Get(ctx context.Context, pod *v1.Pod, port, path string, query map[string]string) ([]byte, error) {
	return p.request(ctx, http.MethodGet, pod, port, path, query)
}

// Post sends an empty POST to path on pod's port, with query as its
// parameters, and returns the answer. The error carries the answer's body
// (a fake says there why it refused).
func (p *Pods) Post(ctx context.Context, pod *v1.Pod, port, path string, query map[string]string) ([]byte, error) {
	return p.request(ctx, http.MethodPost, pod, port, path, query)
}

// GetJSON reads path from pod's port (Get) and decodes the JSON answer
// into out.
func (p *Pods) GetJSON(ctx context.Context, pod *v1.Pod, port, path string, query map[string]string, out any) error {
	return p.requestJSON(ctx, http.MethodGet, pod, port, path, query, out)
}

// PostJSON posts to path on pod's port (Post) and decodes the JSON answer
// into out.
func (p *Pods) PostJSON(ctx context.Context, pod *v1.Pod, port, path string, query map[string]string, out any) error {
	return p.requestJSON(ctx, http.MethodPost, pod, port, path, query, out)
}

// request is do with an error that names the request and the pod.
func (p *Pods) request(ctx context.Context, method string, pod *v1.Pod, port, path string, query map[string]string) ([]byte, error) {
	raw, err := p.do(ctx, method, pod, port, path, query)
	if err != nil {
		return nil, fmt.Errorf("%s %s %s %s/%s:%s: %w", method, path, direction(method), pod.Namespace, pod.Name, port, err)
	}
	return raw, nil
}

func (p *Pods) requestJSON(ctx context.Context, method string, pod *v1.Pod, port, path string, query map[string]string, out any) error {
	raw, err := p.request(ctx, method, pod, port, path, query)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s %s %s/%s: %w: %.200s", method, path, direction(method), pod.Namespace, pod.Name, err, raw)
	}
	return nil
}

// direction reads "GET /x from pod", "POST /x to pod".
func direction(method string) string {
	if method == http.MethodGet {
		return "from"
	}
	return "to"
}

// PortForward forwards a local port on 127.0.0.1 to port of pod through the
// API server, as kubectl port-forward does (client-go's portforward). It
// returns the local address and a stop function.
func PortForward(ctx context.Context, config *rest.Config, pod *v1.Pod, port int) (string, func(), error) {
	addr, stop, _, err := portForward(ctx, config, pod, port)
	return addr, stop, err
}

// portForward is PortForward, with a channel closed when the forward ends.
func portForward(ctx context.Context, config *rest.Config, pod *v1.Pod, port int) (string, func(), <-chan struct{}, error) {
	transport, upgrader, err := spdy.RoundTripperFor(config)
	if err != nil {
		return "", nil, nil, err
	}
	core := rest.CopyConfig(config)
	core.APIPath = "/api"
	core.GroupVersion = &v1.SchemeGroupVersion
	core.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	rc, err := rest.RESTClientFor(core)
	if err != nil {
		return "", nil, nil, err
	}
	req := rc.Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("portforward")
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, req.URL())
	stop, ready := make(chan struct{}), make(chan struct{})
	var errOut bytes.Buffer
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)}, stop, ready, io.Discard, &errOut)
	if err != nil {
		return "", nil, nil, err
	}
	failed := make(chan error, 1)
	done := make(chan struct{})
	go func() { failed <- fw.ForwardPorts(); close(done) }()
	select {
	case <-ready:
	case err := <-failed:
		return "", nil, nil, fmt.Errorf("port-forward to %s/%s:%d: %v %s", pod.Namespace, pod.Name, port, err, errOut.String())
	case <-ctx.Done():
		close(stop)
		return "", nil, nil, ctx.Err()
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) == 0 {
		close(stop)
		return "", nil, nil, fmt.Errorf("port-forward to %s/%s:%d: no local port (%v)", pod.Namespace, pod.Name, port, err)
	}
	var once sync.Once
	return fmt.Sprintf("127.0.0.1:%d", ports[0].Local), func() { once.Do(func() { close(stop) }) }, done, nil
}

// PodOnNode returns the pod of a DaemonSet-like deployment (its pods in
// namespace, selected by labelSelector) that runs on node and is not being
// deleted.
func PodOnNode(ctx context.Context, cs kubernetes.Interface, namespace, labelSelector, node string) (*v1.Pod, error) {
	pods, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labelSelector, FieldSelector: "spec.nodeName=" + node,
	})
	if err != nil {
		return nil, err
	}
	for i := range pods.Items {
		if pods.Items[i].DeletionTimestamp == nil {
			return &pods.Items[i], nil
		}
	}
	return nil, fmt.Errorf("no pod %q in %s on node %s", labelSelector, namespace, node)
}

// ScheduledPods returns the deployment's pods that are placed on a node and
// not being deleted, one per node for a DaemonSet.
func ScheduledPods(ctx context.Context, cs kubernetes.Interface, namespace, labelSelector string) ([]v1.Pod, error) {
	list, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: labelSelector})
	if err != nil {
		return nil, err
	}
	var out []v1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Spec.NodeName != "" {
			out = append(out, p)
		}
	}
	return out, nil
}
