#!/usr/bin/env bash
# The one command of faultline: make sure a container engine runs, build what is
# missing (node image, fakes image), create or reuse a kind cluster, run the
# suites with Ginkgo, write JUnit, logs and a result matrix into the artifacts
# directory, print how long each stage took, and leave nothing running.
#
# hack/run-e2e.sh --help lists the flags.
set -uo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo_root"

usage() {
  cat <<'USAGE'
usage: hack/run-e2e.sh [flags] [-- extra suite flags]

  --suite dra|cri|nri|all       suites to run (default: all); repeatable or comma-separated
  --runtime containerd|crio|all node runtime (default: containerd); all runs each runtime
                                on its own cluster (<cluster-name>-<runtime>), one after the other
  --focus REGEX                 Ginkgo --focus
  --label-filter EXPR           Ginkgo --label-filter (e.g. smoke, '!Slow')
  --procs N                     parallel Ginkgo processes (default: 4; Serial specs run alone)
  --artifacts DIR               where JUnit, logs and the report go (default: _artifacts)
  --kubeconfig PATH             run against this existing cluster: nothing is built or created
  --fakes-image REF             image of the fake driver/plugin/test pod the cluster can pull
                                (required with --kubeconfig; built locally otherwise)
  --keep                        keep the cluster (and engine) afterwards; reuse it next time
  --cluster-name NAME           kind cluster name (default: faultline)
  --node-image REF              use this node image instead of building one
  --kubernetes-src DIR          build Kubernetes from this checkout instead of the pinned release
  --containerd-src DIR          build containerd from this checkout instead of the pinned release
  --runtime-request-timeout D   kubelet runtimeRequestTimeout (default: 30s)
  --nri-request-timeout D       runtime NRI plugin request timeout (default: 2s)
  -h, --help                    this text
USAGE
}

say() { echo "run-e2e: $*" >&2; }
die() { say "ERROR: $*"; exit 2; }

suites=() runtime=containerd focus="" label_filter="" procs=4 artifacts=_artifacts
kubeconfig="" fakes_image="" keep=false cluster_name=faultline node_image=""
kubernetes_src="" containerd_src="" runtime_request_timeout=30s nri_request_timeout=2s
extra_args=()

need_value() { [[ $# -ge 2 && -n $2 && $2 != --* ]] || die "$1 needs a value (see --help)"; }
while [[ $# -gt 0 ]]; do
  flag=$1 value=""
  if [[ $flag == --*=* ]]; then value=${flag#*=}; flag=${flag%%=*}; set -- "$flag" "$value" "${@:2}"; fi
  case $flag in
    --suite) need_value "$@"; IFS=, read -ra more <<<"$2"; suites+=("${more[@]}"); shift 2 ;;
    --runtime) need_value "$@"; runtime=$2; shift 2 ;;
    --focus) need_value "$@"; focus=$2; shift 2 ;;
    --label-filter) need_value "$@"; label_filter=$2; shift 2 ;;
    --procs) need_value "$@"; procs=$2; shift 2 ;;
    --artifacts) need_value "$@"; artifacts=$2; shift 2 ;;
    --kubeconfig) need_value "$@"; kubeconfig=$2; shift 2 ;;
    --fakes-image) need_value "$@"; fakes_image=$2; shift 2 ;;
    --keep) keep=true; shift ;;
    --cluster-name) need_value "$@"; cluster_name=$2; shift 2 ;;
    --node-image) need_value "$@"; node_image=$2; shift 2 ;;
    --kubernetes-src) need_value "$@"; kubernetes_src=$2; shift 2 ;;
    --containerd-src) need_value "$@"; containerd_src=$2; shift 2 ;;
    --runtime-request-timeout) need_value "$@"; runtime_request_timeout=$2; shift 2 ;;
    --nri-request-timeout) need_value "$@"; nri_request_timeout=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; extra_args=("$@"); break ;;
    *) say "ERROR: unknown flag '$1'"; usage >&2; exit 2 ;;
  esac
done

[[ ${#suites[@]} -gt 0 ]] || suites=(all)
if [[ " ${suites[*]} " == *" all "* ]]; then suites=(dra cri nri); fi
for s in "${suites[@]}"; do
  [[ $s == dra || $s == cri || $s == nri ]] || die "unknown suite '$s' (want dra, cri, nri or all)"
done
case $runtime in
  containerd) ;;
  crio|cri-o) runtime=crio
    [[ -z $containerd_src ]] || die "--containerd-src is for --runtime containerd" ;;
  all) [[ -z $kubeconfig ]] || die "--runtime all creates one cluster per runtime; with --kubeconfig, name that cluster's runtime"
    [[ -z $node_image ]] || die "--node-image is one runtime's image; use it with --runtime containerd or crio" ;;
  *) die "unknown runtime '$runtime' (want containerd, crio or all)" ;;
esac
[[ $procs =~ ^[1-9][0-9]*$ ]] || die "--procs wants a positive number, got '$procs'"
if [[ -n $kubeconfig ]]; then
  [[ -r $kubeconfig ]] || die "kubeconfig '$kubeconfig' does not exist or is not readable"
  [[ -n $fakes_image ]] || die "--kubeconfig needs --fakes-image: an image with faultline's fakes that this cluster can pull"
  kubeconfig=$(cd "$(dirname "$kubeconfig")" && pwd)/$(basename "$kubeconfig")
fi
for src in "$kubernetes_src" "$containerd_src"; do
  [[ -z $src || -f $src/go.mod ]] || die "'$src' is not a Go module checkout (no go.mod)"
done
mkdir -p "$artifacts" || die "cannot create artifacts directory '$artifacts'"
artifacts=$(cd "$artifacts" && pwd)

# --- stage timings -----------------------------------------------------------
# A run of one runtime inside --runtime all keeps its table under its runtime.
timings_file=${FAULTLINE_TIMINGS_FILE:-$artifacts/timings.txt}
stage_names=() stage_secs=() stage_results=()
run_stage() {
  local name=$1; shift
  say "== $name"
  local start=$SECONDS rc=0
  "$@" || rc=$?
  stage_names+=("$name") stage_secs+=($((SECONDS - start)))
  if [[ $rc == 0 ]]; then stage_results+=(ok); else stage_results+=("failed ($rc)"); fi
  return $rc
}
print_timings() {
  [[ ${#stage_names[@]} -gt 0 ]] || return 0
  {
    printf '\n%-36s %8s  %s\n' "stage" "seconds" "result"
    local i total=0
    for i in "${!stage_names[@]}"; do
      printf '%-36s %8d  %s\n' "${stage_names[$i]}" "${stage_secs[$i]}" "${stage_results[$i]}"
      total=$((total + stage_secs[i]))
    done
    printf '%-36s %8d\n' "total" "$total"
  } | tee "$timings_file" >&2
}

# ensure_host_packages CMD:PACKAGE...: installs (Debian) the packages whose command is missing.
ensure_host_packages() {
  local missing=() pair
  for pair in "$@"; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
  done
  apt_install "${missing[@]}"
}

# ensure_host_libraries PACKAGE...: installs (Debian) the -dev packages that are not installed.
ensure_host_libraries() {
  local missing=() pkg
  for pkg in "$@"; do
    dpkg-query -W -f '${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' || missing+=("$pkg")
  done
  apt_install "${missing[@]}"
}

# apt_install PACKAGE...: installs them with apt-get, or says what to install by hand.
apt_install() {
  [[ $# -eq 0 ]] && return 0
  if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    say "ERROR: missing $*: install them (Debian: apt-get install $*) or pass --node-image"
    return 1
  fi
  say "installing $*"
  apt-get update -qq >/dev/null 2>&1 || say "apt-get update reported errors; trying the install anyway"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# --- cleanup: whatever happens, leave nothing running that we started ---------
engine_started=false cluster_created=false run_failed=false
faultline=$repo_root/_output/bin/faultline
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  [[ $rc == 0 ]] || run_failed=true
  if $cluster_created && ! $keep; then
    if $run_failed; then
      run_stage "export cluster logs" "$faultline" export-logs --name "$cluster_name" --dir "$artifacts/$runtime/cluster-logs" || true
    fi
    run_stage "delete cluster" "$faultline" delete-cluster --name "$cluster_name" || true
  elif $cluster_created; then
    say "keeping cluster '$cluster_name' (--keep); kubeconfig: $kubeconfig"
  fi
  if $engine_started && ! $keep; then
    run_stage "stop engine" "$repo_root/hack/ensure-engine.sh" stop || true
  fi
  print_timings
  exit "$rc"
}
trap cleanup EXIT
trap 'say "interrupted"; exit 130' INT TERM

# ensure_engine starts a Docker engine if none answers, and remembers whether
# it did, so that cleanup stops only an engine this run started.
ensure_engine() {
  local engine_out=$artifacts/engine.txt
  run_stage "ensure container engine" bash -c 'hack/ensure-engine.sh start > "$0"' "$engine_out" || return 1
  if [[ $(cat "$engine_out") == started ]]; then engine_started=true; fi
}

# --- build tools and images ---------------------------------------------------
run_stage "build faultline CLI" go build -o "$faultline" ./cmd/faultline || exit 1

# --- all runtimes: this script once per runtime, results side by side --------
if [[ $runtime == all ]]; then
  # One engine for both runs: a run that finds an engine answering leaves it on.
  ensure_engine || exit 1
  common=(--procs "$procs" --artifacts "$artifacts"
    --runtime-request-timeout "$runtime_request_timeout" --nri-request-timeout "$nri_request_timeout")
  for s in "${suites[@]}"; do common+=(--suite "$s"); done
  [[ -n $focus ]] && common+=(--focus "$focus")
  [[ -n $label_filter ]] && common+=(--label-filter "$label_filter")
  [[ -n $kubernetes_src ]] && common+=(--kubernetes-src "$kubernetes_src")
  $keep && common+=(--keep)
  failed_runtimes=()
  for rt in containerd crio; do
    args=("${common[@]}" --runtime "$rt" --cluster-name "$cluster_name-$rt")
    [[ $rt == containerd && -n $containerd_src ]] && args+=(--containerd-src "$containerd_src")
    mkdir -p "$artifacts/$rt"
    FAULTLINE_TIMINGS_FILE=$artifacts/$rt/timings.txt run_stage "run $rt" "$repo_root/hack/run-e2e.sh" "${args[@]}" -- "${extra_args[@]}" \
      || failed_runtimes+=("$rt")
  done
  run_stage "report" "$faultline" report --artifacts "$artifacts" || true
  if [[ ${#failed_runtimes[@]} -gt 0 ]]; then
    say "FAILED on: ${failed_runtimes[*]} (each runtime's JUnit, logs and timings are under $artifacts/<runtime>)"
    exit 1
  fi
  say "all suites passed on containerd and crio; report: $artifacts/summary.md"
  exit 0
fi

if [[ -z $kubeconfig ]]; then
  ensure_engine || exit 1

  if [[ -z $node_image ]]; then
    # debootstrap makes the node's root filesystem; containerd builds with cgo.
    run_stage "ensure build tools" ensure_host_packages debootstrap:debootstrap gcc:gcc || exit 1
    if [[ $runtime == crio ]]; then
      # CRI-O builds with cgo against libseccomp and gpgme.
      run_stage "ensure build libraries" ensure_host_libraries libseccomp-dev libgpgme-dev pkg-config || exit 1
    fi
    build_args=(--repo-root "$repo_root" --runtime "$runtime")
    [[ -n $kubernetes_src ]] && build_args+=(--kubernetes-src "$kubernetes_src")
    [[ -n $containerd_src ]] && build_args+=(--containerd-src "$containerd_src")
    node_image_file=$artifacts/node-image.txt
    run_stage "build node image" bash -c '"$0" build-node-image "${@:2}" > "$1"' "$faultline" "$node_image_file" "${build_args[@]}" \
      || { say "the node image did not build; the error is above, build logs are under ~/.cache/faultline/logs"; exit 1; }
    node_image=$(cat "$node_image_file")
  fi
  say "node image: $node_image"

  fakes_file=$artifacts/fakes-image.txt
  run_stage "build fakes image" bash -c '"$0" build-fakes-image --repo-root "$1" > "$2"' "$faultline" "$repo_root" "$fakes_file" || exit 1
  fakes_image=$(cat "$fakes_file")

  kubeconfig=$artifacts/kubeconfig
  create_args=(--name "$cluster_name" --runtime "$runtime" --node-image "$node_image" --kubeconfig "$kubeconfig"
    --runtime-request-timeout "$runtime_request_timeout" --nri-request-timeout "$nri_request_timeout")
  if $keep; then
    create_args+=(--reuse)
  else
    # a cluster of this name left by an earlier run would make kind refuse to create
    # (kind prints "Deleted nodes" when there was one; --keep reuses it instead)
    "$faultline" delete-cluster --name "$cluster_name" || true
  fi
  cluster_created=true
  run_stage "create cluster ($runtime)" "$faultline" create-cluster "${create_args[@]}" \
    || { say "the cluster did not start; node logs go to $artifacts/$runtime/cluster-logs"; exit 1; }
  run_stage "load fakes image" "$faultline" load-images --name "$cluster_name" "$fakes_image" || exit 1
fi

# --- run the suites -----------------------------------------------------------
suite_dirs=()
for s in "${suites[@]}"; do suite_dirs+=("./suites/$s"); done
run_stage "compile suites" go tool ginkgo build "${suite_dirs[@]}" || exit 1

failed_suites=()
for s in "${suites[@]}"; do
  out=$artifacts/$runtime/$s
  rm -rf "$out" && mkdir -p "$out"
  ginkgo_args=(--procs "$procs" --output-dir "$out" --junit-report junit.xml --timeout 60m --poll-progress-after 120s)
  [[ -n $focus ]] && ginkgo_args+=(--focus "$focus")
  [[ -n $label_filter ]] && ginkgo_args+=(--label-filter "$label_filter")
  suite_args=(--kubeconfig "$kubeconfig" --faultline.fakes-image "$fakes_image" --faultline.runtime "$runtime"
    --faultline.nri-request-timeout "$nri_request_timeout" "${extra_args[@]}")
  run_one_suite() {
    go tool ginkgo run "${ginkgo_args[@]}" "./suites/$s/$s.test" -- "${suite_args[@]}" 2>&1 | tee "$out/e2e.log"
    return "${PIPESTATUS[0]}"
  }
  run_stage "suite $s ($runtime)" run_one_suite || failed_suites+=("$s")
done

run_stage "report" "$faultline" report --artifacts "$artifacts" || true
if [[ ${#failed_suites[@]} -gt 0 ]]; then
  say "FAILED suites on $runtime: ${failed_suites[*]} (JUnit and logs under $artifacts/$runtime)"
  exit 1
fi
say "all suites passed on $runtime; report: $artifacts/summary.md"
