package driver

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	drapbv1 "k8s.io/kubelet/pkg/apis/dra/v1"

	"github.com/faultline-k8s/faultline/fakes/dra/calls"
)

// The naming rules of the CDI specification (tags.cncf.io/container-device-
// interface, pkg/parser): vendor and class start with a letter, device
// names with a letter or digit; '_', '-', '.' inside (':' too in device
// names); all end alphanumeric.
var (
	cdiVendorOrClass = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_.-]*[A-Za-z0-9])?$`)
	cdiDeviceRule    = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9_.:-]*[A-Za-z0-9])?$`)
	envName          = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)
)

func cdiSpecConfig(parameters string) string {
	return `{"apiVersion":"faultline.k8s.io/v1alpha1","kind":"FaultSpec",` + parameters + `}`
}

// A claim that asks for CDI devices gets one CDI ID per device in the
// config entry's scope, and a spec file the runtime can resolve them with:
// an environment variable each, a startContainer hook where asked for.
// Repeats return the same IDs, unprepare removes the file; claims that do
// not ask, or whose namespace the gate refuses, get no CDI devices.
func TestCDIDevicesOnRequest(t *testing.T) {
	c := newClaim("cdi", []alloc{{"gpu", "dev-0"}, {"nic", "dev-1"}, {"plain", "dev-2"}},
		faultConfig(cdiSpecConfig(`"cdi":{"hook":true}`), "gpu"),
		faultConfig(cdiSpecConfig(`"cdi":{}`), "nic"))
	plain := newClaim("plain", []alloc{{"gpu", "dev-3"}})
	tenant := newClaim("tenant", []alloc{{"gpu", "dev-3"}}, faultConfig(cdiSpecConfig(`"cdi":{"hook":true}`)))
	tenant.Namespace = "tenant"
	dir := t.TempDir()
	h := newHarnessWith(t, func(cfg *Config) { cfg.CDIDir = dir }, c, plain, tenant)

	ids := map[string]string{}
	for _, dev := range []string{"dev-0", "dev-1"} {
		ids[dev] = CDIDeviceID(DefaultDriverName, string(c.UID), dev)
	}
	check := func(res *drapbv1.NodePrepareResourceResponse) {
		t.Helper()
		if res.Error != "" || len(res.Devices) != 3 {
			t.Fatalf("prepare: %v", res)
		}
		for _, d := range res.Devices {
			want := []string(nil)
			if id, ok := ids[d.DeviceName]; ok {
				want = []string{id}
			}
			if !slices.Equal(d.CdiDeviceIds, want) {
				t.Errorf("%s: CDI IDs %v, want %v", d.DeviceName, d.CdiDeviceIds, want)
			}
		}
	}
	check(h.prepare(c))
	check(h.prepare(c))
	if got := h.drv.Recorder().Report(string(c.UID)).Summary; got != (calls.Summary{PrepareCalls: 2, PrepareSucceeded: 1, PrepareRepeated: 1}) {
		t.Errorf("summary %+v", got)
	}

	file := filepath.Join(dir, "faultline-"+DefaultDriverName+"-"+string(c.UID)+".json")
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var spec cdiSpec
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	vendor, class, _ := strings.Cut(spec.Kind, "/")
	if spec.Version != "0.5.0" || vendor != DefaultDriverName || class != CDIClass || !cdiVendorOrClass.MatchString(vendor) || !cdiVendorOrClass.MatchString(class) {
		t.Errorf("version %q, kind %q", spec.Version, spec.Kind)
	}
	if len(spec.Devices) != 2 {
		t.Fatalf("devices %+v, want dev-0 and dev-1", spec.Devices)
	}
	for i, dev := range []string{"dev-0", "dev-1"} {
		d := spec.Devices[i]
		if spec.Kind+"="+d.Name != ids[dev] || !cdiDeviceRule.MatchString(d.Name) {
			t.Errorf("device %d: name %q, want the one of %s", i, d.Name, ids[dev])
		}
		key := CDIEnvKey(DefaultDriverName, string(c.UID), dev)
		if !slices.Equal(d.ContainerEdits.Env, []string{key + "=" + ids[dev]}) || !envName.MatchString(key) {
			t.Errorf("%s: env %v", dev, d.ContainerEdits.Env)
		}
		var wantHooks []cdiHook
		if dev == "dev-0" {
			wantHooks = []cdiHook{{HookName: "startContainer", Path: DefaultCDIHookPath, Args: []string{"fake-dra-driver", CDIHookCommand, ids[dev]}}}
		}
		if !slices.EqualFunc(d.ContainerEdits.Hooks, wantHooks, func(a, b cdiHook) bool {
			return a.HookName == b.HookName && a.Path == b.Path && slices.Equal(a.Args, b.Args)
		}) {
			t.Errorf("%s: hooks %+v, want %+v", dev, d.ContainerEdits.Hooks, wantHooks)
		}
	}

	for _, other := range []*drapbv1.NodePrepareResourceResponse{h.prepare(plain), h.prepare(tenant)} {
		if other.Error != "" || len(other.Devices) != 1 || len(other.Devices[0].CdiDeviceIds) != 0 {
			t.Errorf("a claim that does not ask (or may not) got %v", other)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != filepath.Base(file) {
		t.Errorf("CDI directory holds %v, want only %s (no temporary files, nothing for the other claims)", entries, filepath.Base(file))
	}

	for range 2 {
		if e := h.unprepare(c); e != "" {
			t.Fatalf("unprepare: %q", e)
		}
		if _, err := os.Stat(file); !os.IsNotExist(err) {
			t.Errorf("CDI spec not removed on unprepare: %v", err)
		}
	}
}

// A driver started without --cdi-dir cannot hand out CDI devices: the
// claim fails to prepare and says why; unprepare still works.
func TestCDIWithoutDirFails(t *testing.T) {
	c := newClaim("cdi", []alloc{{"gpu", "dev-0"}}, faultConfig(cdiSpecConfig(`"cdi":{"hook":true}`)))
	h := newHarness(t, c)
	res := h.prepare(c)
	mustContain(t, res.Error, "[unclassified]", "device=dev-0 request=gpu: cdi:", "--cdi-dir")
	if call := h.lastCall(c.UID); call.Outcome != calls.Failed {
		t.Errorf("recorded %+v", call)
	}
	if e := h.unprepare(c); e != "" {
		t.Errorf("unprepare: %q", e)
	}
}

// The hook appends one line per run and never fails; the witness prints
// the CDI variables and the record, and ParseCDIWitness reads both back,
// counting the hook runs.
func TestCDIHookAndWitness(t *testing.T) {
	record := filepath.Join(t.TempDir(), "hooks")
	id := CDIDeviceID(DefaultDriverName, "uid-1", "dev-0")
	var stderr bytes.Buffer
	for range 2 {
		if code := RunCDIHook([]string{id}, record, &stderr); code != 0 {
			t.Errorf("exit code %d", code)
		}
	}
	if code := RunCDIHook(nil, record, &stderr); code != 0 || !strings.Contains(stderr.String(), "usage") {
		t.Errorf("no argument: exit %d, %q", code, stderr.String())
	}
	if code := RunCDIHook([]string{id}, filepath.Join(record, "not-a-dir", "x"), &stderr); code != 0 || !strings.Contains(stderr.String(), "not-a-dir") {
		t.Errorf("unwritable record: exit %d, %q", code, stderr.String())
	}

	key := CDIEnvKey(DefaultDriverName, "uid-1", "dev-0")
	other := CDIDeviceID("second.dra.faultline.k8s.io", "uid-2", "dev-0")
	environ := []string{"PATH=/bin", key + "=" + id, CDIEnvKey("second.dra.faultline.k8s.io", "uid-2", "dev-0") + "=" + other}
	var out bytes.Buffer
	if err := CDIWitness(&out, environ, record); err != nil {
		t.Fatal(err)
	}
	o, err := ParseCDIWitness("some other line\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if !o.Done || o.Hooks[id] != 2 || len(o.Hooks) != 1 || !slices.Equal(o.Env[id], []string{key}) || len(o.Env[other]) != 1 || o.HooksUnreadable != "" {
		t.Errorf("observation %+v from\n%s", o, out.String())
	}
	if got := o.IDs(); !slices.Equal(got, []string{id, other}) {
		t.Errorf("IDs %v", got)
	}

	out.Reset()
	if err := CDIWitness(&out, nil, filepath.Join(t.TempDir(), "none")); err != nil {
		t.Fatal(err)
	}
	if o, err := ParseCDIWitness(out.String()); err != nil || !o.Done || o.HooksUnreadable == "" || len(o.Hooks)+len(o.Env) != 0 {
		t.Errorf("no record: %+v, %v", o, err)
	}
	if o, err := ParseCDIWitness("cdi-witness env FAULTLINE_CDI_X=a\n"); err != nil || o.Done {
		t.Errorf("an incomplete output is not done: %+v, %v", o, err)
	}
	for _, bad := range []string{"cdi-witness envFAULTLINE\n", "cdi-witness env NOEQUALS\n", "cdi-witness what x\n"} {
		if _, err := ParseCDIWitness(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestCDIEnvKey(t *testing.T) {
	seen := map[string]bool{}
	for _, in := range [][3]string{
		{DefaultDriverName, "0b0e6a94-6f3e-4c57-9c1f-1f2d8a4e5b6c", "dev-0"},
		{DefaultDriverName, "0b0e6a94-6f3e-4c57-9c1f-1f2d8a4e5b6c", "dev-1"},
		{"second.dra.faultline.k8s.io", "0b0e6a94-6f3e-4c57-9c1f-1f2d8a4e5b6c", "dev-0"},
		{DefaultDriverName, "1c1e6a94-6f3e-4c57-9c1f-1f2d8a4e5b6c", "dev-0"},
	} {
		key := CDIEnvKey(in[0], in[1], in[2])
		if !envName.MatchString(key) || !strings.HasPrefix(key, CDIEnvPrefix) || seen[key] {
			t.Errorf("%v: key %q", in, key)
		}
		seen[key] = true
		if name := cdiDeviceName(in[1], in[2]); !cdiDeviceRule.MatchString(name) {
			t.Errorf("%v: CDI device name %q", in, name)
		}
	}
}
