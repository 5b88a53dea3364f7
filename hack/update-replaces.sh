#!/usr/bin/env bash
# Regenerates the k8s.io staging replace directives in go.mod from the go.mod of
# the Kubernetes release pinned in clusters/versions/versions.env, and moves
# k8s.io/kubernetes to that release. Run it after changing KUBERNETES_VERSION.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
go run ./cmd/faultline kube-replaces --write go.mod
go mod tidy
echo "go.mod now follows Kubernetes $(grep '^KUBERNETES_VERSION=' clusters/versions/versions.env | cut -d= -f2)"
