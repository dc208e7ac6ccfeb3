#!/usr/bin/env bash
# Soak of the main job: trace_dedup on a long synthetic stream at a steady rate (trace time
# advances with wall time), with checkpoints, sampling its resident memory; then checks that the
# memory stays flat (within ±5% of its mean) after the warm-up.
#
#   scripts/soak.sh                       # 30 minutes, 100,000 records/s, 2 workers, 2 epochs in flight
#   MINUTES=5 RATE=50000 scripts/soak.sh
#
# Environment:
#   MINUTES      length of the stream and of the run (default 30)
#   RATE         records per second (default 100000)
#   WORKERS      timely workers (default 2)
#   WARMUP       seconds of warm-up left out of the check (default 300: five 60 s windows, the
#                time the compact dedup tables took to reach the stream's window population)
#   INTERVAL     seconds between memory samples (default 10)
#   TOLERANCE    allowed deviation from the mean after warm-up, percent (default 5)
#   SOAK_ARGS    extra trace_dedup flags (default `--in-flight 2`: a paced reader starved of CPU
#                by other work on the machine falls behind, then catches up with up to
#                --in-flight epochs of records buffered ahead of the dataflow; the job's default
#                of 64 epochs (bykey) up to 131,072 records, at 100,000/s, swings the memory by MiB that
#                way, which is the load, not the job's steady state)
#   SOAK_DIR     where samples, report and checkpoints go (default target/soak)
# Writes SOAK_DIR/rss.csv (seconds, rss_kib), SOAK_DIR/report.json and SOAK_DIR/summary.json;
# exits 1 when the memory is not flat.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MINUTES="${MINUTES:-30}"
RATE="${RATE:-100000}"
WORKERS="${WORKERS:-2}"
WARMUP="${WARMUP:-300}"
INTERVAL="${INTERVAL:-10}"
TOLERANCE="${TOLERANCE:-5}"
SOAK_DIR="${SOAK_DIR:-$ROOT/target/soak}"
SOAK_ARGS="${SOAK_ARGS---in-flight 2}"

cd "$ROOT"
cargo build --release --quiet --example trace_dedup
bin="$ROOT/target/release/examples/trace_dedup"
records=$((RATE * MINUTES * 60))
mkdir -p "$SOAK_DIR"
rm -rf "$SOAK_DIR/ckpt"
echo "soak: $records records over ${MINUTES} min at $RATE/s, $WORKERS workers, samples every ${INTERVAL}s" >&2
# shellcheck disable=SC2086
"$bin" --synthetic "$records" --synthetic-span "${MINUTES}m" --steady --rate "$RATE" \
    -w "$WORKERS" --json --checkpoint-dir "$SOAK_DIR/ckpt" --checkpoint-every 60s \
    $SOAK_ARGS >"$SOAK_DIR/report.json" 2>"$SOAK_DIR/stderr" &
pid=$!
echo "seconds,rss_kib" >"$SOAK_DIR/rss.csv"
start=$(date +%s)
while kill -0 "$pid" 2>/dev/null; do
    rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
    if [ -n "$rss" ]; then
        echo "$(($(date +%s) - start)),$rss" >>"$SOAK_DIR/rss.csv"
    fi
    sleep "$INTERVAL"
done
wait "$pid" || { echo "soak: trace_dedup failed:" >&2; cat "$SOAK_DIR/stderr" >&2; exit 2; }

python3 - "$SOAK_DIR" "$WARMUP" "$TOLERANCE" "$RATE" <<'PY'
import csv, json, sys
soak_dir, warmup, tolerance, rate = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
rows = [(int(r["seconds"]), int(r["rss_kib"])) for r in csv.DictReader(open(f"{soak_dir}/rss.csv"))]
steady = [kib for s, kib in rows if s >= warmup]
report = json.loads([l for l in open(f"{soak_dir}/report.json") if l.startswith("{")][-1])
if not steady:
    sys.exit("soak: no sample after the warm-up; run longer or lower WARMUP")
mean = sum(steady) / len(steady)
lo, hi = min(steady), max(steady)
dev = max(hi - mean, mean - lo) / mean * 100
summary = {
    "seconds": rows[-1][0] if rows else 0,
    "samples_after_warmup": len(steady),
    "rss_mib_mean": round(mean / 1024, 1),
    "rss_mib_min": round(lo / 1024, 1),
    "rss_mib_max": round(hi / 1024, 1),
    "max_deviation_percent": round(dev, 2),
    "tolerance_percent": tolerance,
    "flat": dev <= tolerance,
    "rate": rate,
    "records": report["records"],
    "records_per_sec_total": report.get("records_per_sec_total"),
    "dedup_bits": report.get("dedup_bits"),
    "index_bits": report.get("index_bits"),
}
json.dump(summary, open(f"{soak_dir}/summary.json", "w"), indent=1)
print(json.dumps(summary, indent=1))
sys.exit(0 if summary["flat"] else 1)
PY
