#!/usr/bin/env bash
# Regenerates the k8s.io staging replace directives in go.mod from the go.mod of
# the Kubernetes release whose e2e framework the suites build with: the one
# go.mod requires, or the pinned release given as $1 (vocab/versions), to
# which it moves k8s.io/kubernetes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
go run ./cmd/faultline kube-replaces --write go.mod ${1:+--kubernetes-version "$1"}
go mod tidy
echo "go.mod now follows Kubernetes $(go list -m -f '{{.Version}}' k8s.io/kubernetes)"
