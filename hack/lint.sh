#!/usr/bin/env bash
# The linters, pinned here only: go.mod tidy, golangci-lint (.golangci.yml)
# and actionlint over the workflows and action.yml. Each comes from the Go
# module proxy (go run pkg@version builds it once into Go's cache).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
GOLANGCI_LINT=github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
ACTIONLINT=github.com/rhysd/actionlint/cmd/actionlint@v1.7.12

echo "lint: go mod tidy"
go mod tidy -diff
echo "lint: golangci-lint"
go run "$GOLANGCI_LINT" run ./...
echo "lint: actionlint"
go run "$ACTIONLINT"
