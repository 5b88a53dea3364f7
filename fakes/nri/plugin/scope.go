package plugin

import (
	"context"
	"strings"
	"time"

	"github.com/containerd/nri/pkg/api"

	"github.com/faultline-k8s/faultline/fakes/nri/faults"
)

// gateTimeout bounds one question to the gate. The runtime drops a plugin
// that takes longer than its request timeout (2 s by default), and a slow
// API server must not do that: on timeout the gate says no.
const gateTimeout = time.Second

// maxInScope bounds the per-sandbox cache: RemovePodSandbox clears an
// entry, but a plugin that was disconnected then misses it.
const maxInScope = 4096

// faultAnnotations returns the annotations that faults are read from: the
// pod's own, or none when the pod carries fault annotations in a namespace
// where the gate does not allow faults (the event then goes on as if the
// pod had none). Only pods with fault annotations cost a question to the
// gate, once per sandbox.
func (p *Plugin) faultAnnotations(ctx context.Context, event string, pod *api.PodSandbox) map[string]string {
	annotations := pod.GetAnnotations()
	if !hasFaultAnnotation(annotations) || p.allowed(ctx, event, pod) {
		return annotations
	}
	return nil
}

func hasFaultAnnotation(annotations map[string]string) bool {
	for k := range annotations {
		if strings.HasPrefix(k, faults.Prefix) {
			return true
		}
	}
	return false
}

// allowed asks the gate about the pod's namespace, once per sandbox: the
// answer holds for the sandbox's life, so a pod never loses or gains its
// faults halfway, and an ignored pod is logged once, not per event.
func (p *Plugin) allowed(ctx context.Context, event string, pod *api.PodSandbox) bool {
	id := pod.GetId()
	p.scopeMu.Lock()
	ok, known := p.inScope[id]
	p.scopeMu.Unlock()
	if known {
		return ok
	}
	ctx, cancel := context.WithTimeout(ctx, gateTimeout)
	defer cancel()
	ok, why := p.cfg.Gate.Allows(ctx, pod.GetNamespace())
	if !ok {
		p.log.Warn("fault annotations ignored: faults are not allowed in the pod's namespace",
			"pod", pod.GetName(), "namespace", pod.GetNamespace(), "podUID", pod.GetUid(),
			"podSandboxID", id, "event", event, "reason", why)
	}
	if id != "" {
		p.scopeMu.Lock()
		if len(p.inScope) >= maxInScope {
			clear(p.inScope)
		}
		p.inScope[id] = ok
		p.scopeMu.Unlock()
	}
	return ok
}

// forget drops the gate's answer for a sandbox that is gone.
func (p *Plugin) forget(sandboxID string) {
	p.scopeMu.Lock()
	delete(p.inScope, sandboxID)
	p.scopeMu.Unlock()
}
