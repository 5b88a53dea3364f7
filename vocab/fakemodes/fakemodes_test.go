package fakemodes

import "testing"

func TestCheckRefusesWhatNoFakeDoes(t *testing.T) {
	if err := Check([]string{FirstFailingDeviceOnly}, "dra"); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		names []string
		fake  string
	}{
		"unknown":     {[]string{"dra-crash"}, ""},
		"empty":       {[]string{""}, ""},
		"another":     {[]string{FirstFailingDeviceOnly}, "nri"},
		"named twice": {[]string{FirstFailingDeviceOnly, FirstFailingDeviceOnly}, ""},
	} {
		if err := Check(c.names, c.fake); err == nil {
			t.Errorf("%s: %v taken", name, c.names)
		}
	}
}

func TestVariantPartRoundTrips(t *testing.T) {
	for _, n := range Names() {
		if name, ok := FromVariantPart(VariantPart(n)); !ok || name != n {
			t.Errorf("%s: %q %v", n, name, ok)
		}
	}
	for _, part := range []string{"kep-5322", "fake-", "fake-nothing", "nri-v0.12.5"} {
		if _, ok := FromVariantPart(part); ok {
			t.Errorf("%q read as a fake mode", part)
		}
	}
	if got := Of([]string{FirstFailingDeviceOnly, "nothing"}, "dra"); len(got) != 1 || got[0] != FirstFailingDeviceOnly {
		t.Errorf("Of: %v", got)
	}
	if got := Of([]string{FirstFailingDeviceOnly}, "nri"); len(got) != 0 {
		t.Errorf("Of another fake: %v", got)
	}
}
