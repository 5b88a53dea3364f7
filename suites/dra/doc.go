// Package dra holds the DRA suite: how the kubelet and a DRA driver handle
// permanent and transient NodePrepareResources / NodeUnprepareResources failures.
package dra
