package plugin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/containerd/nri/pkg/api"

	"github.com/faultline-k8s/faultline/fakes/nri/faults"
	"github.com/faultline-k8s/faultline/fakes/nri/record"
)

// target is what an event is about, for records and messages.
type target struct {
	namespace, name, uid string
	sandbox              string
	container, id        string
	isContainer          bool
}

// Labels the kubelet puts on every container; they identify the pod when
// the runtime sends a container event without it (e.g. StopContainer after
// the sandbox is gone).
const (
	podNamespaceLabel = "io.kubernetes.pod.namespace"
	podNameLabel      = "io.kubernetes.pod.name"
	podUIDLabel       = "io.kubernetes.pod.uid"
)

func targetOf(pod *api.PodSandbox, ctr *api.Container) target {
	t := target{namespace: pod.GetNamespace(), name: pod.GetName(), uid: pod.GetUid(), sandbox: pod.GetId()}
	if ctr != nil {
		t.isContainer = true
		t.container, t.id = ctr.GetName(), ctr.GetId()
		if id := ctr.GetPodSandboxId(); id != "" {
			t.sandbox = id
		}
		if pod == nil {
			l := ctr.GetLabels()
			t.namespace, t.name, t.uid = l[podNamespaceLabel], l[podNameLabel], l[podUIDLabel]
		}
	}
	return t
}

func (t target) String() string {
	s := "pod " + t.namespace + "/" + t.name
	if t.isContainer {
		s += " container " + t.container
	}
	return s
}

// countKey identifies "this pod/container" for times=N. The container
// name, not its ID, because each retry of a failed creation gets a new ID.
func (t target) countKey(event string) string {
	pod := t.uid
	if pod == "" {
		pod = t.namespace + "/" + t.name
	}
	return pod + "/" + event + "/" + t.container
}

// Message is the text of every error the plugin returns, without a cause:
// it names the plugin, its index, what happened, the event and the pod (and
// container, if any). Specs use it to find the plugin's error in kubelet
// events and pod status.
func Message(name, index, what, event, namespace, pod, container string) string {
	t := target{namespace: namespace, name: pod, container: container, isContainer: container != ""}
	return fmt.Sprintf("faultline NRI plugin %q (index %s): %s in %s for %s", name, index, what, event, t)
}

// InjectedError is the What of an error fault, see Message.
const InjectedError = "injected error"

// failure builds every error the plugin returns. It names the plugin, its
// index, the event and the pod (and container): this text is what surfaces
// in kubelet events and runtime logs.
func (p *Plugin) failure(what, event string, t target, cause error) error {
	msg := fmt.Sprintf("faultline NRI plugin %q (index %s): %s in %s for %s",
		p.cfg.Name, p.cfg.Index, what, event, t)
	if cause != nil {
		return fmt.Errorf("%s: %w", msg, cause)
	}
	return errors.New(msg)
}

// handle records one event and injects the fault the pod asks for, if
// the gate allows faults in the pod's namespace.
func (p *Plugin) handle(ctx context.Context, s *session, event string, pod *api.PodSandbox, ctr *api.Container) error {
	t := targetOf(pod, ctr)
	if event == "RemovePodSandbox" {
		defer p.forget(pod.GetId())
	}
	entry := p.cfg.Recorder.Begin(record.Event{
		Event:         event,
		PodNamespace:  t.namespace,
		PodName:       t.name,
		PodUID:        t.uid,
		PodSandboxID:  t.sandbox,
		ContainerName: t.container,
		ContainerID:   t.id,
	})

	fault, err := faults.For(p.faultAnnotations(ctx, event, pod), p.cfg.Name, event, t.container)
	// note is said in the record of an event that goes on despite a
	// malformed annotation.
	note := ""
	if err != nil {
		if !faults.IsTeardown(event) {
			err = p.failure("malformed fault annotation", event, t, err)
			entry.Finish(record.Outcome{Result: record.Error, Message: err.Error()})
			return err
		}
		// Failing a teardown would leave the pod or container behind (CRI-O
		// never stops such a sandbox): log it, apply the event's own fault.
		note = p.failure("malformed fault annotation ignored", event, t, err).Error()
		p.log.Warn("malformed fault annotation ignored in a teardown event", "event", event, "target", t.String(), "error", err)
	}
	withNote := func(msg string) string {
		if note == "" {
			return msg
		}
		if msg == "" {
			return note
		}
		return msg + "; " + note
	}
	if fault == nil {
		entry.Finish(record.Outcome{Result: record.OK, Message: note})
		return nil
	}
	fire, err := p.cfg.Counter.Take(t.countKey(event), fault.Times)
	if err != nil {
		p.log.Error("cannot save fault count; a restarted process may fire the fault again", "error", err)
	}
	if !fire {
		entry.Finish(record.Outcome{Result: record.OK, Fault: fault.Value,
			Message: withNote(fmt.Sprintf("fault already fired %d time(s)", fault.Times))})
		return nil
	}

	switch fault.Mode {
	case faults.Error:
		err := p.failure(InjectedError, event, t, nil)
		entry.Finish(record.Outcome{Result: record.Error, Fault: fault.Value, Message: withNote(err.Error())})
		return err

	case faults.Stall:
		return p.stall(s, entry, fault, event, t, withNote)

	case faults.Disconnect:
		entry.Finish(record.Outcome{Result: record.Disconnect, Fault: fault.Value,
			Message: withNote("closed the NRI connection without answering; reconnecting")})
		s.drop()
		// The runtime never sees this: the connection is gone.
		return p.failure("injected disconnect", event, t, nil)

	case faults.Crash:
		entry.Finish(record.Outcome{Result: record.Crash, Fault: fault.Value,
			Message: withNote(fmt.Sprintf("exiting with code %d without answering", CrashExitCode))})
		p.log.Error("injected crash: exiting", "event", event, "target", t.String(), "code", CrashExitCode)
		p.exit()
		return p.failure("injected crash", event, t, nil)
	}
	// Unreachable: faults.Parse only returns the modes above.
	err = p.failure(fmt.Sprintf("unknown fault mode %q", fault.Mode), event, t, nil)
	entry.Finish(record.Outcome{Result: record.Error, Fault: fault.Value, Message: err.Error()})
	return err
}

// stall blocks for the fault's duration, or until the connection is lost
// (the runtime dropped us after its timeout, or died). It deliberately
// ignores the request's deadline: the runtime passes its own deadline
// along, and answering "deadline exceeded" as soon as it passes would race
// the runtime's timer and sometimes turn the stall into a returned error.
// A stuck plugin does not answer at all.
func (p *Plugin) stall(s *session, entry *record.Entry, fault *faults.Fault, event string, t target, withNote func(string) string) error {
	began := time.Now()
	timer := time.NewTimer(fault.Stall)
	defer timer.Stop()
	select {
	case <-timer.C:
		entry.Finish(record.Outcome{Result: record.Stalled, Fault: fault.Value,
			Message: withNote(fmt.Sprintf("stalled %s, then answered", fault.Stall))})
		return nil
	case <-s.gone:
		entry.Finish(record.Outcome{Result: record.Stalled, Fault: fault.Value, Interrupted: true,
			Message: withNote(fmt.Sprintf("stalled %s of %s, then the connection was lost (the runtime gave up on the plugin, or went away)",
				time.Since(began).Round(time.Millisecond), fault.Stall))})
		return p.failure("stall interrupted by the loss of the connection", event, t, nil)
	}
}
