#!/usr/bin/env bash
# Makes sure a Docker engine that can run privileged kind nodes answers.
#
#   hack/ensure-engine.sh start   # default: use a working engine, or install and start one;
#                                 # prints "started" on stdout when it started one
#   hack/ensure-engine.sh stop    # stop the engine only if this script started it
#
# Where a working engine exists (a GitHub runner, a workstation) this does nothing.
# Otherwise it installs Debian's docker.io and starts dockerd. On hosts whose
# capability bounding set is incomplete it registers runc-capfilter as the default
# runtime, so that --privileged containers (kind nodes) can start.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
state_dir=${FAULTLINE_ENGINE_STATE:-/run/faultline-engine}
pidfile=$state_dir/dockerd.pid
logfile=${FAULTLINE_ENGINE_LOG:-/var/log/faultline-dockerd.log}
wrapper=/usr/local/libexec/faultline/runc-capfilter

say() { echo "ensure-engine: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

engine_answers() { docker info >/dev/null 2>&1; }

install_engine() {
  command -v dockerd >/dev/null 2>&1 && return 0
  [[ $(id -u) == 0 ]] || die "no Docker engine and not root: install Docker (or run as root so Debian's docker.io can be installed)"
  command -v apt-get >/dev/null 2>&1 || die "no Docker engine and no apt-get: install a Docker engine, then re-run"
  say "installing Debian's docker.io"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null 2>&1 || say "apt-get update reported errors (unreachable extra sources?); trying the install anyway"
  apt-get install -y -qq --no-install-recommends docker.io >/dev/null || die "apt-get install docker.io failed: install a Docker engine by hand, then re-run"
}

# Prints the capabilities the host's bounding set lacks, one a line.
missing_capabilities() {
  (cd "$repo_root" && go run ./cmd/runc-capfilter --print-missing)
}

start() {
  # a marker whose dockerd is gone (the machine's processes ended) says nothing
  if [[ -f $state_dir/started-by-faultline ]] && ! kill -0 "$(cat "$state_dir/started-by-faultline")" 2>/dev/null; then
    rm -f "$state_dir/started-by-faultline"
  fi
  if engine_answers; then
    say "a Docker engine answers; using it"
    return 0
  fi
  [[ $(id -u) == 0 ]] || die "the Docker engine does not answer and only root can start one here"
  install_engine
  mkdir -p "$state_dir" "$(dirname "$logfile")"
  local args=(--pidfile "$pidfile")
  if [[ -n $(missing_capabilities) ]]; then
    say "host lacks $(missing_capabilities | tr '\n' ' ')from its capability bounding set: using runc-capfilter"
    mkdir -p "$(dirname "$wrapper")"
    (cd "$repo_root" && CGO_ENABLED=0 go build -o "$wrapper" ./cmd/runc-capfilter) || die "could not build runc-capfilter"
    args+=(--add-runtime "faultline-capfilter=$wrapper" --default-runtime faultline-capfilter)
  fi
  say "starting dockerd (log: $logfile)"
  # setsid: a Ctrl-C in the caller's terminal must not kill the engine under running nodes;
  # the caller's trap stops it in order.
  setsid dockerd "${args[@]}" >>"$logfile" 2>&1 < /dev/null &
  echo "$!" > "$state_dir/started-by-faultline"
  local deadline=$((SECONDS + 60))
  until engine_answers; do
    if ! kill -0 "$(cat "$state_dir/started-by-faultline")" 2>/dev/null; then
      tail -n 20 "$logfile" >&2
      rm -f "$state_dir/started-by-faultline"
      die "dockerd exited while starting; its log is above and in $logfile"
    fi
    (( SECONDS < deadline )) || die "dockerd did not answer within 60s; see $logfile"
    sleep 0.5
  done
  say "dockerd is up"
  echo started
}

stop() {
  local marker=$state_dir/started-by-faultline
  [[ -f $marker ]] || { say "engine not started by faultline; leaving it alone"; return 0; }
  local pid; pid=$(cat "$marker")
  if kill -0 "$pid" 2>/dev/null; then
    say "stopping dockerd (pid $pid)"
    kill "$pid"
    local deadline=$((SECONDS + 60))
    while kill -0 "$pid" 2>/dev/null; do
      (( SECONDS < deadline )) || { say "dockerd still running after 60s; killing it"; kill -9 "$pid" 2>/dev/null || true; break; }
      sleep 0.5
    done
  fi
  rm -f "$marker"
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  *) die "unknown command '$1' (want: start | stop)" ;;
esac
