// Package fakes builds the image that holds faultline's own binaries used inside
// clusters: the fake DRA driver, the fake NRI plugin and the test workload. They
// are static Go binaries on an empty base, so no base image is pulled.
package fakes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// Binaries maps each binary in the image to the package it is built from.
var Binaries = map[string]string{
	"testpod":         "./cmd/testpod",
	"cri-relay":       "./cmd/cri-relay",
	"probe":           "./cmd/probe",
	"fake-dra-driver": "./drivers/fake/dra/cmd/fake-dra-driver",
	"fake-nri-plugin": "./drivers/fake/nri/cmd/fake-nri-plugin",
}

// Repository is the image name; the tag is a hash of the binaries, so a code
// change always yields a new tag and nodes never run a stale copy.
const Repository = "faultline/fakes"

// Build compiles the binaries from the checkout at repoRoot and builds the image
// unless one with the same content exists. It returns the image reference.
func Build(ctx context.Context, repoRoot string, log io.Writer) (string, error) {
	dir, err := os.MkdirTemp("", "faultline-fakes-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	names := make([]string, 0, len(Binaries))
	for name := range Binaries {
		names = append(names, name)
	}
	sort.Strings(names)
	args := []string{"build", "-trimpath", "-ldflags", "-s -w", "-o", dir + "/"}
	for _, name := range names {
		args = append(args, Binaries[name])
	}
	build := exec.CommandContext(ctx, "go", args...)
	build.Dir = repoRoot
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build of the fakes: %w\n%s", err, out)
	}
	h := sha256.New()
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return "", fmt.Errorf("binary %s not built: %w", name, err)
		}
		fmt.Fprintf(h, "%s %d\n", name, len(data))
		h.Write(data)
	}
	ref := Repository + ":" + hex.EncodeToString(h.Sum(nil))[:16]
	if exec.CommandContext(ctx, "docker", "image", "inspect", ref).Run() == nil {
		fmt.Fprintf(log, "fakes image %s is up to date\n", ref)
		return ref, nil
	}
	var dockerfile strings.Builder
	dockerfile.WriteString("FROM scratch\n")
	for _, name := range names {
		fmt.Fprintf(&dockerfile, "COPY %s /usr/local/bin/%s\n", name, name)
	}
	dockerfile.WriteString("ENTRYPOINT [\"/usr/local/bin/testpod\"]\n")
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile.String()), 0o644); err != nil {
		return "", err
	}
	if out, err := exec.CommandContext(ctx, "docker", "build", "-q", "-t", ref, dir).CombinedOutput(); err != nil {
		return "", fmt.Errorf("docker build %s: %w\n%s", ref, err, out)
	}
	fmt.Fprintf(log, "built fakes image %s\n", ref)
	return ref, nil
}
