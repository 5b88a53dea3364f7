#!/usr/bin/env bash
# The one command of faultline: builds the faultline CLI (Go's build cache makes
# that quick after the first time) and hands the whole run to `faultline e2e`:
# engine, images, kind clusters per runtime (the Serial specs on a second one
# where the cores allow),
# the suites, the report, cleanup.
#
# hack/run-e2e.sh --help lists the flags.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! command -v go >/dev/null 2>&1; then
  echo "run-e2e: Go is not installed (https://go.dev/doc/install); faultline builds everything else itself" >&2
  exit 2
fi
# The report names the faultline that ran: this checkout's commit.
version="devel $(git describe --always --dirty 2>/dev/null || echo unknown)"
go build -ldflags "-X 'github.com/faultline-k8s/faultline/internal/version.Version=$version'" -o _output/bin/faultline ./cmd/faultline
exec _output/bin/faultline e2e "$@"
