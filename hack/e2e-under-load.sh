#!/usr/bin/env bash
# hack/e2e-under-load.sh IDLE_ARTIFACTS OUT_ARTIFACTS [run-e2e.sh flags...]
#
# Runs the CRI and NRI suites on both runtimes (hack/run-e2e.sh) while
# Debian's stress-ng keeps the machine busy, then holds every cell they
# judged to the idle run's in IDLE_ARTIFACTS (faultline report
# --same-cells): a verdict must not turn with the machine's load. The load
# generator is installed if missing and always stopped, also on Ctrl-C.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ $# -lt 2 ]; then
  echo "usage: hack/e2e-under-load.sh IDLE_ARTIFACTS OUT_ARTIFACTS [run-e2e.sh flags...]" >&2
  exit 2
fi
idle=$1 out=$2
shift 2
if [ ! -f "$idle/run.json" ]; then
  echo "e2e-under-load: $idle holds no faultline run (no run.json): run hack/run-e2e.sh --runtime all --artifacts $idle first" >&2
  exit 2
fi
if ! command -v stress-ng >/dev/null 2>&1; then
  sudo=
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends stress-ng
fi
cores=$(nproc)
# Half of every core and a sync() loop, for at most an hour (a run that
# outlives it would be judged on an idle machine: the trap kills it sooner).
stress-ng --cpu "$cores" --cpu-load 50 --io 1 --timeout 3600s --quiet &
load=$!
trap 'kill "$load" 2>/dev/null || true; wait "$load" 2>/dev/null || true' EXIT
sleep 20 # let the load average climb before the run measures the machine
echo "e2e-under-load: stress-ng (${cores} CPU workers at 50%, 1 I/O worker) running; load average $(cut -d' ' -f1-3 /proc/loadavg)"
rc=0
hack/run-e2e.sh --runtime all --suite cri,nri --artifacts "$out" "$@" || rc=$?
echo "e2e-under-load: the run exited $rc; load average $(cut -d' ' -f1-3 /proc/loadavg)"
kill "$load" 2>/dev/null || true
wait "$load" 2>/dev/null || true
# Unexpected verdicts (1) or a failed command (3) end here; an incomplete
# run (4: a requirement not judged) still has its judged cells compared.
case $rc in
  0|4) ;;
  *) exit "$rc" ;;
esac
_output/bin/faultline report --artifacts "$out" --baseline "$idle" --same-cells
exit "$rc"
