#!/usr/bin/env bash
# Instructions one trace_dedup run executes, counted by valgrind (cachegrind, no cache model):
# deterministic to a few thousand instructions run to run, where the wall clock of this shared
# machine swings by a third, so two builds compare exactly on what a change removed. It counts
# work, not time: a loop that waits on memory loses less time than instructions (measure the
# wall clock too, alternated, before claiming a speed-up).
#
#   scripts/count-instructions.sh -- --pcap target/bench-e2e/capture.pcap -w 1
#   BASE=/tmp/trace_dedup.old scripts/count-instructions.sh -- --pcap data/real.pcap
#
# Environment:
#   BIN   the binary to count (default target/release/examples/trace_dedup, built if missing)
#   BASE  a second binary to count with the same arguments (a build before a change)
#   TOP   how many functions to list, by instructions spent in them (default 25)
# Arguments after `--` go to trace_dedup. Needs valgrind (Debian: apt-get install valgrind).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

BIN="${BIN:-target/release/examples/trace_dedup}"
BASE="${BASE:-}"
TOP="${TOP:-25}"
if [ "${1:-}" = "--" ]; then
    shift
fi
if ! command -v valgrind > /dev/null || ! command -v cg_annotate > /dev/null; then
    echo "count-instructions: valgrind is not installed (Debian: apt-get install valgrind)" >&2
    exit 1
fi
if [ ! -x "$BIN" ]; then
    cargo build --release --example trace_dedup
fi

OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT

# Counts one binary: total instructions, per record, and the functions that spent the most.
count() {
    local name="$1" bin="$2"
    shift 2
    valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file="$OUT/$name.out" \
        "$bin" "$@" --json > "$OUT/$name.json" 2> "$OUT/$name.log"
    local total records
    total="$(grep -E 'I[[:space:]]+refs' "$OUT/$name.log" | tr -d ',' | awk '{print $NF}')"
    records="$(tail -n 1 "$OUT/$name.json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["records"])')"
    echo "$name: $total instructions, $((total / (records > 0 ? records : 1))) a record ($records records)"
    # instructions by function, the inlined code of each file counted where it ran
    cg_annotate "$OUT/$name.out" 2> /dev/null | python3 -c '
import collections, re, sys
top = int(sys.argv[1])
by = collections.Counter()
for line in sys.stdin:
    m = re.match(r"\s*([0-9,]+) \(\s*[0-9.]+%\)\s+\S*?:(\S.*)$", line)
    if m and "PROGRAM TOTALS" not in line:
        by[m.group(2)[:110]] += int(m.group(1).replace(",", ""))
total = sum(by.values()) or 1
for name, n in by.most_common(top):
    print(f"  {n / 1e6:9.1f} M {100 * n / total:5.1f} %  {name}")
' "$TOP"
}

count new "$BIN" "$@"
if [ -n "$BASE" ]; then
    count base "$BASE" "$@"
fi
