#!/usr/bin/env bash
# End-to-end benchmark of trace_dedup: one synthetic capture (gen_capture), and data/real.pcap
# when present, each run as
#   exact   trace_dedup --exact                      (the exact baseline)
#   w1      trace_dedup -w 1
#   w2      trace_dedup -w 2
#   n2      two processes over loopback (-n 2 -p 0|1 -h HOSTFILE), one worker each
# every run under GNU time (/usr/bin/time -v: wall clock, maximum resident set size) and with
# --json (the last JSON line of stdout). Prints a Markdown table, then the speed-ups within each
# round (one worker against the map, two workers and two processes against one worker: medians
# and ranges over the rounds, so that the machine's drift between rounds cancels).
#
#   scripts/bench-e2e.sh
#   PACKETS=1000000 MODES="bykey local" scripts/bench-e2e.sh
#
# Environment:
#   PACKETS      frames in the generated capture (default 4000000)
#   GEN_ARGS     extra gen_capture flags (e.g. "--seconds 60 --hosts 100000"); part of the
#                capture's identity, so changing them regenerates it
#   MODES        trace_dedup --mode values to run (default "bykey"); each w1/w2/n2 run passes
#                --mode M, the exact baseline runs once per input
#   DEDUP_ARGS   extra trace_dedup flags for every run (e.g. "--window 30s")
#   INPUTS       extra inputs, ';'-separated "name=flags" sets, e.g.
#                INPUTS="syn=--synthetic 4000000;csv=--csv data/flows.csv"
#   PORT         first loopback port of the two-process runs (default 24101; uses PORT, PORT+1)
#   RUN_TIMEOUT  seconds before a run is killed (default 3600)
#   BENCH_DIR    where the capture, logs and table go (default target/bench-e2e)
#   ROUNDS       how many times the whole set of runs is repeated, one round after another so
#                that the runs interleave (default 1); the table shows medians, and the range
#                of the wall clock when ROUNDS > 1
# A run that fails is reported as `failed` in its row (its logs stay in BENCH_DIR/logs) and the
# benchmark goes on.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

PACKETS="${PACKETS:-4000000}"
GEN_ARGS="${GEN_ARGS:-}"
MODES="${MODES:-bykey}"
DEDUP_ARGS="${DEDUP_ARGS:-}"
INPUTS="${INPUTS:-}"
PORT="${PORT:-24101}"
RUN_TIMEOUT="${RUN_TIMEOUT:-3600}"
BENCH_DIR="${BENCH_DIR:-$ROOT/target/bench-e2e}"
ROUNDS="${ROUNDS:-1}"
ROUND=1
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/examples"
TIME=/usr/bin/time

if ! "$TIME" -v true >/dev/null 2>&1; then
    echo "bench-e2e: needs GNU time at $TIME (apt-get install time)" >&2
    exit 2
fi
command -v python3 >/dev/null || { echo "bench-e2e: needs python3" >&2; exit 2; }

mkdir -p "$BENCH_DIR/logs"
RESULTS="$BENCH_DIR/results.tsv"
: >"$RESULTS"

echo "bench-e2e: building release examples" >&2
cargo build --release --examples >&2

# --- The capture: generated once, again only when its parameters change. ---------------------
CAPTURE="$BENCH_DIR/capture.pcap"
PARAMS="$BENCH_DIR/capture.params"
# shellcheck disable=SC2206 # GEN_ARGS is a list of flags, split on purpose
gen=(--packets "$PACKETS" $GEN_ARGS)
# The capture depends on the flags and the generator's source (deterministic otherwise).
want="gen_capture ${gen[*]} ($(cat examples/gen_capture/*.rs | sha256sum | cut -c1-16))"
if [[ -s "$CAPTURE" && -f "$PARAMS" && "$(cat "$PARAMS")" == "$want" ]]; then
    echo "bench-e2e: reusing $CAPTURE ($want)" >&2
else
    echo "bench-e2e: generating $CAPTURE ($want)" >&2
    rm -f "$PARAMS"
    "$BIN/gen_capture" --out "$CAPTURE" "${gen[@]}" --json >"$BENCH_DIR/capture.json"
    cat "$BENCH_DIR/capture.json" >&2
    echo "$want" >"$PARAMS"
fi

# --- Runs. -----------------------------------------------------------------------------------

# Appends one result row: input, run, status, stdout file, time files (comma-separated).
row() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RESULTS"; }

# single INPUT_NAME RUN_NAME ARGS...: one process.
single() {
    local input=$1 run=$2
    shift 2
    local log="$BENCH_DIR/logs/$input-$run-r$ROUND"
    echo "bench-e2e: round $ROUND: $input $run: trace_dedup $*" >&2
    local status=ok
    "$TIME" -v -o "$log.time" timeout "$RUN_TIMEOUT" "$BIN/trace_dedup" "$@" \
        >"$log.out" 2>"$log.err" || status=failed
    [[ $status == ok ]] || echo "bench-e2e: $input $run failed (see $log.err)" >&2
    row "$input" "$run" "$status" "$log.out" "$log.time"
}

# kill_tree PID: terminates PID's descendants, deepest first, then PID.
kill_tree() {
    local child
    for child in $(pgrep -P "$1" || true); do kill_tree "$child"; done
    kill "$1" 2>/dev/null || true
}

# pair INPUT_NAME RUN_NAME ARGS...: two processes over loopback, one worker each.
pair() {
    local input=$1 run=$2
    shift 2
    local log="$BENCH_DIR/logs/$input-$run-r$ROUND"
    local hosts="$BENCH_DIR/hosts.txt"
    printf '127.0.0.1:%d\n127.0.0.1:%d\n' "$PORT" "$((PORT + 1))" >"$hosts"
    echo "bench-e2e: round $ROUND: $input $run: trace_dedup $* -n 2 -p 0|1 -h $hosts" >&2
    "$TIME" -v -o "$log.p1.time" timeout "$RUN_TIMEOUT" "$BIN/trace_dedup" "$@" \
        -w 1 -n 2 -p 1 -h "$hosts" >"$log.p1.out" 2>"$log.p1.err" &
    local p1=$!
    local status=ok
    "$TIME" -v -o "$log.time" timeout "$RUN_TIMEOUT" "$BIN/trace_dedup" "$@" \
        -w 1 -n 2 -p 0 -h "$hosts" >"$log.out" 2>"$log.err" || status=failed
    if [[ $status == failed ]]; then
        # Process 1 may wait forever for its peer: stop it and what it started.
        kill_tree "$p1"
    fi
    wait "$p1" || status=failed
    [[ $status == ok ]] || echo "bench-e2e: $input $run failed (see $log.err, $log.p1.err)" >&2
    row "$input" "$run" "$status" "$log.out" "$log.time,$log.p1.time"
}

# table_for NAME FLAGS...: the exact baseline and w1 / w2 / n2 per mode.
table_for() {
    local input=$1
    shift
    # shellcheck disable=SC2206 # DEDUP_ARGS is a list of flags, split on purpose
    local extra=($DEDUP_ARGS)
    single "$input" exact "$@" "${extra[@]}" --exact --json
    local mode
    for mode in $MODES; do
        single "$input" "$mode-w1" "$@" "${extra[@]}" --mode "$mode" --json -w 1
        single "$input" "$mode-w2" "$@" "${extra[@]}" --mode "$mode" --json -w 2
        pair "$input" "$mode-n2" "$@" "${extra[@]}" --mode "$mode" --json
    done
}

for ((ROUND = 1; ROUND <= ROUNDS; ROUND++)); do
    table_for capture --pcap "$CAPTURE"
    if [[ -f data/real.pcap ]]; then
        table_for real --pcap data/real.pcap
    fi
    if [[ -n "$INPUTS" ]]; then
        n_extra=0
        IFS=';' read -ra sets <<<"$INPUTS"
        for set in "${sets[@]}"; do
            [[ -n "${set// /}" ]] || continue
            name="${set%%=*}"
            flags="${set#*=}"
            [[ "$set" == *=* ]] || name="input$((++n_extra))"
            # shellcheck disable=SC2086 # flags are split on purpose
            table_for "$name" $flags
        done
    fi
done

# --- The table. ------------------------------------------------------------------------------
python3 - "$RESULTS" <<'EOF' | tee "$BENCH_DIR/table.md"
import json, re, sys

def last_json(path):
    """The last line of the file that parses as a JSON object (timely may print before it)."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError:
        return {}
    for line in reversed(lines):
        line = line.strip()
        if line.startswith("{"):
            try:
                v = json.loads(line)
                if isinstance(v, dict):
                    return v
            except ValueError:
                pass
    return {}

def gnu_time(path):
    """(wall seconds, max RSS KiB) from a `/usr/bin/time -v` report, None where missing."""
    wall = rss = None
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("Elapsed (wall clock) time"):
                    parts = line.rsplit(": ", 1)[-1].split(":")
                    wall = 0.0
                    for p in parts:
                        wall = wall * 60 + float(p)
                elif line.startswith("Maximum resident set size"):
                    rss = int(line.rsplit(":", 1)[-1])
    except (OSError, ValueError):
        pass
    return wall, rss

def num(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None

def fmt(v, spec):
    return "-" if v is None else format(v, spec)

print("| input | run | records | wall s | records/s | seconds_total | bytes/record | peak RSS MiB | JSON peak RSS MiB |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|")

def median(values):
    values = [v for v in values if v is not None]
    if not values:
        return None
    values.sort()
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2

# Rows of the same input and run (one per round), in the order first run.
groups = {}
# `seconds_total` of each input and run (the wall clock where missing), one per round, in round
# order, for the speed-ups (a small input's run is shorter than GNU time's 10 ms resolution).
walls_of = {}
with open(sys.argv[1]) as f:
    for line in f:
        input_, run, status, out, times = line.rstrip("\n").split("\t")
        groups.setdefault((input_, run), []).append((status, out, times))
for (input_, run), rows in groups.items():
    if any(status != "ok" for status, _, _ in rows):
        print(f"| {input_} | {run} | failed | - | - | - | - | - | - |")
        continue
    measured = []
    for _, out, times in rows:
        j = last_json(out)
        walls, rsses = zip(*(gnu_time(t) for t in times.split(",")))
        # Processes run side by side: the run's wall time is the longest, its memory the sum.
        wall = None if None in walls else max(walls)
        rss = None if None in rsses else sum(rsses) / 1024
        jrss = num(j.get("peak_rss_bytes"))
        measured.append((j, wall, rss, None if jrss is None else jrss / 2**20))
    j = measured[0][0]
    records = num(j.get("records"))
    walls = [m[1] for m in measured]
    walls_of[(input_, run)] = [
        num(m[0].get("seconds_total")) or m[1] for m in measured
    ]
    wall = median(walls)
    rate = records / wall if records is not None and wall else None
    shown = fmt(wall, ".2f")
    if len(measured) > 1 and None not in walls:
        shown += f" ({min(walls):.2f}–{max(walls):.2f})"
    print(
        f"| {input_} | {run} | {fmt(records, 'd') if isinstance(records, int) else fmt(records, '.0f')}"
        f" | {shown} | {fmt(rate, ',.0f')}"
        f" | {fmt(median([num(m[0].get('seconds_total')) for m in measured]), '.3f')}"
        f" | {fmt(num(j.get('bytes_exchanged_per_record')), '.2f')}"
        f" | {fmt(median([m[2] for m in measured]), '.1f')}"
        f" | {fmt(median([m[3] for m in measured]), '.1f')} |"
    )

# Speed-ups within each round, so that the VM's drift between rounds cancels: the map's time over
# one worker's, one worker's over two workers' and over two processes'.
def speedup(input_, num_run, den_run):
    a, b = walls_of.get((input_, num_run)), walls_of.get((input_, den_run))
    if not a or not b or len(a) != len(b) or None in a or None in b:
        return "-"
    r = [x / y for x, y in zip(a, b) if y]
    if not r:
        return "-"
    shown = f"{median(r):.2f}×"
    return shown + (f" ({min(r):.2f}–{max(r):.2f})" if len(r) > 1 else "")

modes = []
for input_, run in walls_of:
    m = re.fullmatch(r"(.+)-w1", run)
    if m and (input_, m.group(1)) not in modes:
        modes.append((input_, m.group(1)))
print()
print("| input | mode | w1 vs exact | w2 vs w1 | n2 vs w1 |")
print("|---|---|---:|---:|---:|")
for input_, mode in modes:
    w1 = f"{mode}-w1"
    print(
        f"| {input_} | {mode} | {speedup(input_, 'exact', w1)}"
        f" | {speedup(input_, w1, f'{mode}-w2')} | {speedup(input_, w1, f'{mode}-n2')} |"
    )
EOF
