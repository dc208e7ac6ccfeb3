#!/usr/bin/env bash
# Long mutation-fuzzing runs (issue 17): the ignored `long` test of tests/fuzz.rs, built in
# release with overflow checks and debug assertions on (as the debug build of the CI smoke run
# has them, so an arithmetic overflow is a finding there too), one process per target, so that
# a hang or a refused allocation (each aborts its process after saving the input) stops only
# that target.
#
# usage: scripts/fuzz.sh [-t TARGETS] [-n CASES] [-s SECONDS] [-S SEED] [-j JOBS] [-l]
#   -t  comma-separated target names (default: all of them)
#   -n  cases per target (default: 100000, or unbounded when -s is given)
#   -s  seconds per target (the run stops at -n cases or -s seconds, whichever comes first)
#   -S  seed (default: random, printed; a finding is reproduced by its seed and case number)
#   -j  targets fuzzed at once (default: 1)
#   -l  list the targets and exit
# FUZZ_TARGET, FUZZ_ITERS, FUZZ_SECS and FUZZ_SEED in the environment are the defaults of
# -t, -n, -s and -S.
#
# Prints each target's cases, seconds and findings, then a summary. Failing inputs are saved to
# target/fuzz-failures/<target>/seed-<seed>-iter-<case>.bin; full logs go to target/fuzz-logs/.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo_root}"

targets="${FUZZ_TARGET:-}"
cases="${FUZZ_ITERS:-}"
secs="${FUZZ_SECS:-}"
seed="${FUZZ_SEED:-}"
jobs=1
list=0

die() {
  echo "fuzz.sh: error: $*" >&2
  exit 2
}

while getopts "t:n:s:S:j:lh" opt; do
  case "${opt}" in
    t) targets="${OPTARG}" ;;
    n) cases="${OPTARG}" ;;
    s) secs="${OPTARG}" ;;
    S) seed="${OPTARG}" ;;
    j) jobs="${OPTARG}" ;;
    l) list=1 ;;
    h) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) die "unknown option; see $0 -h" ;;
  esac
done

[[ "${jobs}" =~ ^[1-9][0-9]*$ ]] || die "-j needs a positive number, got '${jobs}'"
[[ -z "${cases}" || "${cases}" =~ ^[0-9]+$ ]] || die "-n needs a number, got '${cases}'"
[[ -z "${secs}" || "${secs}" =~ ^[0-9]+([.][0-9]+)?$ ]] || die "-s needs seconds, got '${secs}'"
[[ -z "${seed}" || "${seed}" =~ ^[0-9]+$ ]] || die "-S needs a number, got '${seed}'"

echo "fuzz.sh: building tests/fuzz.rs in release, with overflow checks"
export CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS=true
build_log="$(mktemp)"
trap 'rm -f "${build_log}"' EXIT
if ! cargo test --release --test fuzz --no-run >"${build_log}" 2>&1; then
  cat "${build_log}" >&2
  die "the build failed"
fi
exe="$(sed -n 's/.*Executable tests\/fuzz.rs (\(.*\))$/\1/p' "${build_log}" | tail -n 1)"
[[ -x "${exe}" ]] || die "cannot find the fuzz test executable in cargo's output"

all="$("${exe}" --ignored --exact list_targets --nocapture 2>/dev/null | sed -n 's/^fuzz-target: //p')"
if [[ "${list}" == 1 ]]; then
  echo "${all}"
  exit 0
fi
if [[ -z "${targets}" ]]; then
  targets="$(echo "${all}" | paste -sd, -)"
fi
IFS=',' read -r -a chosen <<<"${targets}"
for t in "${chosen[@]}"; do
  grep -qx -- "${t}" <<<"${all}" || die "no target '${t}'; targets: $(echo "${all}" | paste -sd' ' -)"
done

if [[ -z "${seed}" ]]; then
  seed="$(od -An -N6 -tu8 /dev/urandom | tr -d ' ')"
fi
if [[ -z "${cases}" && -z "${secs}" ]]; then
  cases=100000
fi

logs="${repo_root}/target/fuzz-logs"
mkdir -p "${logs}"
echo "fuzz.sh: seed ${seed}; ${#chosen[@]} targets; ${cases:-unbounded} cases${secs:+ or ${secs} s} each; ${jobs} at once"

run_one() {
  local t="$1"
  local log="${logs}/${t}.log"
  local rc=0
  FUZZ_TARGET="${t}" FUZZ_SEED="${seed}" FUZZ_ITERS="${cases}" FUZZ_SECS="${secs}" \
    "${exe}" --ignored --exact long --nocapture >"${log}" 2>&1 || rc=$?
  echo "${rc}" >"${log}.rc"
  # the report (the target's line and its findings, up to the failed assertion that repeats
  # it), or why the process died
  {
    awk -v t="${t} " 'index($0, t) == 1 || /^    / { print } /^total:|^thread / { exit }' "${log}"
    grep -E "^fuzz: " "${log}" || true
  } | sed "s/^/[${t}] /"
}

started=$SECONDS
for t in "${chosen[@]}"; do
  while (($(jobs -rp | wc -l) >= jobs)); do
    wait -n || true
  done
  run_one "${t}" &
done
wait

echo
echo "fuzz.sh: summary (seed ${seed}, $((SECONDS - started)) s wall)"
total=0
bad=0
for t in "${chosen[@]}"; do
  log="${logs}/${t}.log"
  rc="$(cat "${log}.rc" 2>/dev/null || echo '?')"
  line="$(grep -E "^${t} " "${log}" | tail -n 1 || true)"
  n="$(sed -n 's/.* \([0-9][0-9]*\) cases .*/\1/p' <<<"${line}")"
  s="$(sed -n 's/.* cases *\([0-9.]*\) s .*/\1/p' <<<"${line}")"
  total=$((total + ${n:-0}))
  if [[ "${rc}" == 0 ]]; then
    status="clean"
  elif [[ -n "${line}" ]]; then
    status="findings: $(sed -n 's/.*, \([0-9]*\) findings$/\1/p' <<<"${line}")"
    bad=$((bad + 1))
  else
    status="aborted: $(grep -E '^fuzz: ' "${log}" | head -n 1 | sed 's/^fuzz: //' || echo "exit ${rc}")"
    bad=$((bad + 1))
  fi
  printf '  %-20s %10s cases %8s s  %s\n' "${t}" "${n:--}" "${s:--}" "${status}"
done
echo "fuzz.sh: ${total} cases; ${bad} of ${#chosen[@]} targets with findings"
[[ "${bad}" == 0 ]]
