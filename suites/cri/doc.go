// Package cri holds the CRI suite: what the runtime does when the kubelet's
// RunPodSandbox or CreateContainer request times out.
package cri
