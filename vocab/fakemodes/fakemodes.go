// Package fakemodes names the documented misbehaviours of faultline's
// fakes. Each makes a fake act as a broken real driver or plugin would, so
// that a spec whose requirement is partly the fake's part can be shown to
// fail with no patch to the stack (judge/controls, kind fake-mode). A run
// asks for them with faultline e2e --fake-mode; the cluster's facts carry
// them to the suites, which deploy the fake with the mode on, and the stack
// key names them (VariantPart), so their verdicts are never judged as the
// plain stack's. It imports nothing, so the CLI and the fakes share it.
package fakemodes

import (
	"fmt"
	"strings"
)

// Mode is one misbehaviour of one fake.
type Mode struct {
	// Name is what --fake-mode and the fake's own flag take.
	Name string
	// Fake is the fake that misbehaves: "dra" (fakes/dra).
	Fake string
	// Breaks says what the fake then does wrong.
	Breaks string
}

// DRA is the fake DRA driver's name here (Mode.Fake): fakes/dra.
const DRA = "dra"

// FirstFailingDeviceOnly makes the fake DRA driver name only the first of a
// claim's failing devices in its NodePrepareResources error, as a driver
// that stops describing at the first failure would.
const FirstFailingDeviceOnly = "dra-first-device-only"

var all = []Mode{
	{Name: FirstFailingDeviceOnly, Fake: DRA, Breaks: "the fake DRA driver's error for a claim names only the first of its failing devices"},
}

// Lookup returns the mode called name, or an error naming the modes there are.
func Lookup(name string) (Mode, error) {
	for _, m := range all {
		if m.Name == name {
			return m, nil
		}
	}
	return Mode{}, fmt.Errorf("fake mode %q: want one of %s", name, strings.Join(Names(), ", "))
}

// Names returns every mode's name, in a fixed order.
func Names() []string {
	names := make([]string, len(all))
	for i, m := range all {
		names[i] = m.Name
	}
	return names
}

// Check refuses an unknown mode, a mode of another fake than fake (when fake
// is not empty), and a mode named twice.
func Check(names []string, fake string) error {
	seen := map[string]bool{}
	for _, n := range names {
		m, err := Lookup(n)
		if err != nil {
			return err
		}
		if fake != "" && m.Fake != fake {
			return fmt.Errorf("fake mode %q is the %s fake's, not the %s fake's", n, m.Fake, fake)
		}
		if seen[n] {
			return fmt.Errorf("fake mode %q named twice", n)
		}
		seen[n] = true
	}
	return nil
}

// Of returns the names among names that are modes of fake, in their order.
func Of(names []string, fake string) []string {
	var out []string
	for _, n := range names {
		if m, err := Lookup(n); err == nil && m.Fake == fake {
			out = append(out, n)
		}
	}
	return out
}

// VariantPart is how a stack key names a mode: "fake-dra-first-device-only".
func VariantPart(name string) string { return "fake-" + name }

// FromVariantPart returns the mode a stack key's variant part names, if it
// names one.
func FromVariantPart(part string) (string, bool) {
	name, ok := strings.CutPrefix(part, "fake-")
	if !ok {
		return "", false
	}
	if _, err := Lookup(name); err != nil {
		return "", false
	}
	return name, true
}
