package main

import (
	"errors"
	"flag"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/faultline-k8s/faultline/pipeline"
)

// TestE2EFlagsNameOptionsFields: each mapped field is one of the options,
// each flag is one e2e has, and every choice a user makes has its flag.
func TestE2EFlagsNameOptionsFields(t *testing.T) {
	fs := flag.NewFlagSet("faultline e2e", flag.ContinueOnError)
	commands["e2e"].setup(fs)
	options := reflect.TypeFor[pipeline.Options]()
	for field, name := range e2eFlags {
		if _, ok := options.FieldByName(field); !ok {
			t.Errorf("%s is no field of pipeline.Options", field)
		}
		if fs.Lookup(strings.TrimPrefix(name, "--")) == nil {
			t.Errorf("%s (%s) is no flag of e2e", name, field)
		}
	}
	// Set by the command itself, not by a flag.
	own := map[string]bool{"RepoRoot": true, "CacheDir": true, "RuntimesGiven": true, "SuiteArgs": true, "SpecTree": true, "Machine": true, "Out": true, "OptionName": true}
	for _, f := range reflect.VisibleFields(options) {
		if _, ok := e2eFlags[f.Name]; !ok && !own[f.Name] {
			t.Errorf("pipeline.Options.%s has no flag in e2eFlags", f.Name)
		}
	}
}

// TestE2EErrorNamesTheFlag: the pipeline's refusals name fields; the CLI
// says them with its flags, as bad input (exit 2).
func TestE2EErrorNamesTheFlag(t *testing.T) {
	o := pipeline.Options{ClusterName: "faultline", Procs: 1, Repeat: 1,
		KubernetesVersions: []string{"", ""}, KubernetesPatches: []string{os.DevNull}, KubernetesSrc: t.TempDir()}
	err := e2eError(o.Validate())
	var usage usageError
	if !errors.As(err, &usage) || exitCode(err) != 2 {
		t.Fatalf("err = %v, want a usage error", err)
	}
	for _, want := range []string{`--kubernetes-version ",": an empty release`, "--kubernetes-patch applies to the pinned release; with --kubernetes-src, apply it to the checkout"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	for _, field := range []string{"KubernetesVersions", "KubernetesPatches", "KubernetesSrc"} {
		if strings.Contains(err.Error(), field) {
			t.Errorf("%q names the field %s, not its flag", err, field)
		}
	}
	if plain := errors.New("kind create cluster failed"); !errors.Is(e2eError(plain), plain) {
		t.Error("a failed run became bad input")
	}
}
