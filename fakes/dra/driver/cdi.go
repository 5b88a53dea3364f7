package driver

// CDI devices, for claims whose FaultSpec asks for them (field cdi): the
// driver writes one CDI spec file per claim into the runtime's CDI
// directory (--cdi-dir, /var/run/cdi) and hands the kubelet one CDI device
// ID per device. The runtime, not the kubelet or the driver, then edits the
// container: every device sets one environment variable, and with cdi.hook
// adds an OCI startContainer hook that records each time the runtime
// injected the device. The container reads both back (CDIWitness), so a
// spec sees what the runtime did with the CDI IDs the kubelet passed it.
//
// Other claims get no CDI devices, so that the specs that do not ask keep
// working on a runtime without CDI support.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

const (
	// CDIClass is the class of the driver's CDI kind, <driver>/device.
	CDIClass = "device"
	// cdiVersion is the CDI spec version written: 0.5.0 allows device
	// names that start with a digit (claim UIDs may).
	cdiVersion = "0.5.0"
	// CDIEnvPrefix starts the environment variable of every CDI device.
	CDIEnvPrefix = "FAULTLINE_CDI_"
	// DefaultCDIHookPath is the hook binary as the container sees it: this
	// binary, in faultline's fakes image, which is also the image of the
	// specs' test pods. A startContainer hook runs inside the container.
	DefaultCDIHookPath = "/usr/local/bin/fake-dra-driver"
	// CDIHookRecord is the file in the container the hook appends to: the
	// pod's /dev/shm is writable for the container's (non-root) user on
	// every runtime, whatever the image.
	CDIHookRecord = "/dev/shm/faultline-cdi-hooks"
	// CDIHookCommand and CDIWitnessCommand are the driver binary's
	// subcommands run inside a test container (cmd/fake-dra-driver).
	CDIHookCommand    = "cdi-hook"
	CDIWitnessCommand = "cdi-witness"
	// cdiWitnessPrefix starts every line CDIWitness prints.
	cdiWitnessPrefix = "cdi-witness "
)

// CDIKind is the CDI kind of driver's devices.
func CDIKind(driver string) string { return driver + "/" + CDIClass }

// cdiDeviceName is the CDI device name of one device of a claim: unique
// across claims, so that the spec files of several claims never conflict.
func cdiDeviceName(claimUID, device string) string { return claimUID + "-" + device }

// CDIDeviceID is the fully qualified CDI device ID the driver hands the
// kubelet for device of claim claimUID.
func CDIDeviceID(driver, claimUID, device string) string {
	return CDIKind(driver) + "=" + cdiDeviceName(claimUID, device)
}

// CDIEnvKey is the environment variable the device's CDI spec sets in the
// container; its value is CDIDeviceID.
func CDIEnvKey(driver, claimUID, device string) string {
	return CDIEnvPrefix + strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		}
		return '_'
	}, driver+"_"+claimUID+"_"+device)
}

// cdiSpec is the part of the CDI specification the driver writes.
type cdiSpec struct {
	Version string      `json:"cdiVersion"`
	Kind    string      `json:"kind"`
	Devices []cdiDevice `json:"devices"`
}

type cdiDevice struct {
	Name           string   `json:"name"`
	ContainerEdits cdiEdits `json:"containerEdits"`
}

type cdiEdits struct {
	Env   []string  `json:"env,omitempty"`
	Hooks []cdiHook `json:"hooks,omitempty"`
}

type cdiHook struct {
	HookName string   `json:"hookName"`
	Path     string   `json:"path"`
	Args     []string `json:"args,omitempty"`
}

// cdiFile is the spec file of one claim in dir.
func (d *Driver) cdiFile(claimUID types.UID) string {
	return filepath.Join(d.cfg.CDIDir, "faultline-"+d.cfg.DriverName+"-"+string(claimUID)+".json")
}

// cdiSpecFor builds the CDI spec of a claim's targets that asked for CDI.
func (d *Driver) cdiSpecFor(claimUID types.UID, p *plan) cdiSpec {
	spec := cdiSpec{Version: cdiVersion, Kind: CDIKind(d.cfg.DriverName)}
	for _, t := range p.targets {
		if t.cdi == nil {
			continue
		}
		id := CDIDeviceID(d.cfg.DriverName, string(claimUID), t.Device.Device)
		dev := cdiDevice{Name: cdiDeviceName(string(claimUID), t.Device.Device)}
		dev.ContainerEdits.Env = []string{CDIEnvKey(d.cfg.DriverName, string(claimUID), t.Device.Device) + "=" + id}
		if t.cdi.Hook {
			dev.ContainerEdits.Hooks = []cdiHook{{
				HookName: "startContainer",
				Path:     d.cfg.CDIHookPath,
				Args:     []string{filepath.Base(d.cfg.CDIHookPath), CDIHookCommand, id},
			}}
		}
		spec.Devices = append(spec.Devices, dev)
	}
	return spec
}

// wantsCDI reports whether any device of the plan asked for CDI.
func (p *plan) wantsCDI() bool {
	return slices.ContainsFunc(p.targets, func(t target) bool { return t.cdi != nil })
}

// errNoCDIDir: a claim asks for CDI devices of a driver started without
// --cdi-dir.
var errNoCDIDir = errors.New("the claim's FaultSpec asks for CDI devices (cdi), but the driver runs without --cdi-dir")

// writeCDISpec writes the claim's CDI spec, replacing the file atomically
// (the runtime may read the directory at any moment; it ignores files not
// ending in .json). Writing it again on a repeated prepare is a no-op in
// effect.
func (d *Driver) writeCDISpec(claimUID types.UID, p *plan) error {
	if d.cfg.CDIDir == "" {
		return errNoCDIDir
	}
	raw, err := json.MarshalIndent(d.cdiSpecFor(claimUID, p), "", "  ")
	if err != nil {
		return err
	}
	final := d.cdiFile(claimUID)
	tmp, err := os.CreateTemp(d.cfg.CDIDir, "."+filepath.Base(final)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write CDI spec: %w", err)
	}
	_, err = tmp.Write(append(raw, '\n'))
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), final)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write CDI spec %s: %w", final, err)
	}
	return nil
}

// removeCDISpec removes the claim's CDI spec, if any. Failures are only
// logged: unprepare must not fail for it (the pod would stay Terminating).
func (d *Driver) removeCDISpec(ctx context.Context, claimUID types.UID) {
	if d.cfg.CDIDir == "" {
		return
	}
	err := os.Remove(d.cdiFile(claimUID))
	switch {
	case err == nil:
		klog.FromContext(ctx).V(2).Info("Removed CDI spec", "claimUID", claimUID, "file", d.cdiFile(claimUID))
	case !errors.Is(err, fs.ErrNotExist):
		klog.FromContext(ctx).Error(err, "Removing CDI spec failed", "claimUID", claimUID)
	}
}

// RunCDIHook is the startContainer hook (fake-dra-driver cdi-hook <CDI
// ID>): it appends the ID to record. It runs inside the container, as the
// container's user, each time the runtime injected the device. It always
// succeeds (exit code 0): a hook that fails stops the container from
// starting, and a record it could not write shows as a missing line
// instead, with the reason on the runtime's log.
func RunCDIHook(args []string, record string, stderr io.Writer) int {
	if len(args) != 1 || args[0] == "" {
		fmt.Fprintf(stderr, "usage: fake-dra-driver %s <CDI device ID>\n", CDIHookCommand)
		return 0
	}
	f, err := os.OpenFile(record, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err == nil {
		_, err = f.WriteString(args[0] + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "fake-dra-driver %s: %v\n", CDIHookCommand, err)
	}
	return 0
}

// CDIWitness prints, one line each, the container's CDI environment
// variables (environ: os.Environ()) and the hook record, then "done":
//
//	cdi-witness env FAULTLINE_CDI_...=<CDI ID>
//	cdi-witness hook <CDI ID>
//	cdi-witness hooks-unreadable <error>   (no record: no hook ran)
//	cdi-witness done
//
// The test container runs it as its command (fake-dra-driver cdi-witness)
// and the spec reads its log (ParseCDIWitness).
func CDIWitness(w io.Writer, environ []string, record string) error {
	var env []string
	for _, kv := range environ {
		if strings.HasPrefix(kv, CDIEnvPrefix) {
			env = append(env, kv)
		}
	}
	slices.Sort(env)
	var b strings.Builder
	for _, kv := range env {
		fmt.Fprintf(&b, "%senv %s\n", cdiWitnessPrefix, kv)
	}
	raw, err := os.ReadFile(record)
	if err != nil {
		fmt.Fprintf(&b, "%shooks-unreadable %v\n", cdiWitnessPrefix, err)
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			fmt.Fprintf(&b, "%shook %s\n", cdiWitnessPrefix, line)
		}
	}
	b.WriteString(cdiWitnessPrefix + "done\n")
	_, err = io.WriteString(w, b.String())
	return err
}

// CDIObservation is what a container's CDIWitness output says.
type CDIObservation struct {
	// Env maps a CDI ID to the environment variables whose value it is.
	Env map[string][]string
	// Hooks counts the hook runs per CDI ID.
	Hooks map[string]int
	// HooksUnreadable is why the hook record could not be read (no hook
	// ran, or none could write it).
	HooksUnreadable string
	// Done: the output is complete.
	Done bool
}

// IDs returns every CDI ID the container saw, sorted.
func (o CDIObservation) IDs() []string {
	var ids []string
	for id := range o.Env {
		ids = append(ids, id)
	}
	for id := range o.Hooks {
		if _, ok := o.Env[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// ParseCDIWitness reads CDIWitness output from a container log; other
// lines are ignored.
func ParseCDIWitness(log string) (CDIObservation, error) {
	o := CDIObservation{Env: map[string][]string{}, Hooks: map[string]int{}}
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), cdiWitnessPrefix)
		if !ok {
			continue
		}
		what, value, _ := strings.Cut(line, " ")
		switch what {
		case "env":
			key, id, ok := strings.Cut(value, "=")
			if !ok {
				return o, fmt.Errorf("witness line %q: no '='", sc.Text())
			}
			o.Env[id] = append(o.Env[id], key)
		case "hook":
			o.Hooks[value]++
		case "hooks-unreadable":
			o.HooksUnreadable = value
		case "done":
			o.Done = true
		default:
			return o, fmt.Errorf("witness line %q: unknown kind %q", sc.Text(), what)
		}
	}
	return o, sc.Err()
}
