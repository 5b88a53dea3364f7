package main

import (
	"errors"

	"github.com/faultline-k8s/faultline/internal/artifactdir"
	"github.com/faultline-k8s/faultline/pipeline"
)

// e2eFlags are the e2e flags by the pipeline.Options field each sets: the
// pipeline names fields in its errors, the user knows the flags.
var e2eFlags = map[string]string{
	"Suites":                "--suite",
	"Runtimes":              "--runtime",
	"Focus":                 "--focus",
	"LabelFilter":           "--label-filter",
	"Procs":                 "--procs",
	"Artifacts":             "--artifacts",
	"Kubeconfig":            "--kubeconfig",
	"FakesImage":            "--fakes-image",
	"ImageRegistry":         "--image-registry",
	"Disruptive":            "--disruptive",
	"Keep":                  "--keep",
	"ReplaceCluster":        "--replace-cluster",
	"ClusterName":           "--cluster-name",
	"NodeImage":             "--node-image",
	"KubernetesVersions":    "--kubernetes-version",
	"KubernetesSrc":         "--kubernetes-src",
	"NRIVersion":            "--nri-version",
	"KubernetesPatches":     "--kubernetes-patch",
	"ContainerdPatches":     "--containerd-patch",
	"CRIOPatches":           "--crio-patch",
	"NRIPatches":            "--nri-patch",
	"Workers":               "--workers",
	"FeatureGates":          "--feature-gates",
	"FakeModes":             "--fake-mode",
	"ContainerdSrc":         "--containerd-src",
	"ContainerdVersion":     "--containerd-version",
	"RuntimeRequestTimeout": "--runtime-request-timeout",
	"NRIRequestTimeout":     "--nri-request-timeout",
	"KubeletSyncFrequency":  "--kubelet-sync-frequency",
	"Repeat":                "--repeat",
	"Expectations":          "--expectations",
	"AllowIncomplete":       "--allow-incomplete",
	"SerialCluster":         "--serial-cluster",
}

// e2eFlag names an Options field by its flag (a field without one by itself).
func e2eFlag(field string) string {
	if flag, ok := e2eFlags[field]; ok {
		return flag
	}
	return field
}

// e2eError makes the run's bad input a usage error (exit 2): options it
// refused, told with the flags' names, and an --artifacts directory
// faultline must not touch. (Options.OptionName is e2eFlag, so the run's
// other messages name flags too.)
func e2eError(err error) error {
	var refused pipeline.OptionErrors
	switch {
	case errors.As(err, &refused):
		return usageError{errors.New(refused.Message(e2eFlag))}
	case errors.Is(err, artifactdir.ErrNotOurs):
		return usageError{err}
	}
	return err
}
