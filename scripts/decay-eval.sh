#!/usr/bin/env bash
# Paper 004 §6 on this repo's filters: runs examples/decay_eval on the uniform and Zipf streams, on
# the source IPs of both real captures (data/icmp_ttl.pcap: 924 addresses; data/real.pcap: 19)
# and, as a more diverse real stream, the 5-tuples of data/real.pcap, writes
# one JSON report per run to OUT_DIR, and prints a Markdown table per run (the tables of
# docs/decay.md). Every run has the three priors of the inferential BTBF
# (`--prior frequency,floored,recency`): the stream's p_x (row btbf_inferential), the same
# floored by one p learned online from the filter's own posteriors (row
# btbf_inferential_floored) and the recency sketch inside the filter's bits (row
# btbf_inferential_recency); the synthetic runs take about 5 minutes each on one core.
#
#   scripts/fetch-traces.sh     # once: data/real.pcap, data/icmp_ttl.pcap (GPL data, never committed)
#   scripts/decay-eval.sh
#
# Environment:
#   OUT_DIR   where the CSV and the JSON reports go (default target/decay-eval)
#   BPI       bits per item, comma-separated (default 2,4,6,8,12,16)
#   QUERIES   measured queries of the synthetic streams (default 1048576)
#   SEED      seed of streams, penalties and hashes (default 1)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT_DIR="${OUT_DIR:-${ROOT}/target/decay-eval}"
BPI="${BPI:-2,4,6,8,12,16}"
QUERIES="${QUERIES:-1048576}"
SEED="${SEED:-1}"
mkdir -p "${OUT_DIR}"
cd "${ROOT}"

command -v jq >/dev/null || { echo "decay-eval: jq is required for the tables" >&2; exit 1; }
[[ -f data/real.pcap && -f data/icmp_ttl.pcap ]] ||
  { echo "decay-eval: run scripts/fetch-traces.sh first" >&2; exit 1; }

cargo build --release --example decay_eval --example trace_keys
bin="${ROOT}/target/release/examples"

# one line per IP packet: `tick,source address` and `tick,5-tuple`
"${bin}/trace_keys" data/real.pcap src > "${OUT_DIR}/real_src.csv"
"${bin}/trace_keys" data/real.pcap 5tuple > "${OUT_DIR}/real_5tuple.csv"
"${bin}/trace_keys" data/icmp_ttl.pcap src > "${OUT_DIR}/icmp_src.csv"

common=(--bits-per-item "${BPI}" --seed "${SEED}" --prior frequency,floored,recency --json)
run() {
  local name="$1"
  shift
  echo "decay-eval: ${name}: decay_eval $* ${common[*]}" >&2
  "${bin}/decay_eval" "$@" "${common[@]}" > "${OUT_DIR}/${name}.json"
}
run uniform --stream uniform --universe 65536 --window 65536 --queries "${QUERIES}" --warm 262144
run zipf --stream zipf --universe 65536 --window 2048 --queries "${QUERIES}" --warm 262144
run real_src_w16 --data "${OUT_DIR}/real_src.csv" --window 16 --warm 8192
run real_src_w256 --data "${OUT_DIR}/real_src.csv" --window 256 --warm 8192
run real_5tuple_w256 --data "${OUT_DIR}/real_5tuple.csv" --window 256 --warm 8192
run icmp_src_w16 --data "${OUT_DIR}/icmp_src.csv" --window 16 --warm 1024
run icmp_src_w256 --data "${OUT_DIR}/icmp_src.csv" --window 256 --warm 1024

for name in uniform zipf real_src_w16 real_src_w256 real_5tuple_w256 icmp_src_w16 icmp_src_w256; do
  jq -r '
    def r3: if . == null then "-" else (. * 1000 | round / 1000) end;
    def row($f): .rows[] | select(.filter == $f);
    "\n### \(.stream), w = \(.window), POS/NEG = \(.pos_neg_ratio | r3), \(.queries) queries\n",
    "| bits/item | BTBF | inf. BTBF | inf./std BTBF | inf./std BTBF, floored prior | inf./std BTBF, recency prior | GBF | inf. GBF | inf./std GBF | buffer | post. err inf. BTBF |",
    "|---|---|---|---|---|---|---|---|---|---|---|",
    ( [.rows[] | .bits_per_item] | unique | map(select(. > 0)) ) as $bpis
    | . as $r
    | $bpis[]
    | . as $b
    | [ $r.rows[] | select(.bits_per_item == $b) ] as $rs
    | ($rs | map({(.filter): .}) | add) as $m
    | "| \($b) | \($m.btbf.penalty_ratio | r3) | \($m.btbf_inferential.penalty_ratio | r3) | **\($m.btbf_inferential.vs_standard | r3)** | \($m.btbf_inferential_floored.vs_standard | r3) | \($m.btbf_inferential_recency.vs_standard | r3) | \($m.gbf.penalty_ratio | r3) | \($m.gbf_inferential.penalty_ratio | r3) | \($m.gbf_inferential.vs_standard | r3) | \($m.buffer.penalty_ratio | r3) | \($m.btbf_inferential.posterior_error | r3) |"
  ' "${OUT_DIR}/${name}.json"
done

# the recency prior's rows: total penalty, errors and the sketch chosen, beside the standard BTBF
echo
echo "| stream | bits/item | BTBF total (FP) | inf. BTBF, recency prior total (FP, FN) | inf./std | sketch: share, H, depth × width, bits (sketch + BTBF) |"
echo "|---|---|---|---|---|---|"
for name in uniform zipf real_src_w16 real_src_w256 real_5tuple_w256 icmp_src_w16 icmp_src_w256; do
  jq -r --arg name "${name}" '
    def r3: if . == null then "-" else (. * 1000 | round / 1000) end;
    . as $r
    | .rows[] | select(.filter == "btbf_inferential_recency")
    | . as $i
    | ($r.rows[] | select(.filter == "btbf" and .bits_per_item == $i.bits_per_item)) as $s
    | "| \($name) | \($i.bits_per_item) | \($s.total_penalty | round) (\($s.false_positives)) | \($i.total_penalty | round) (\($i.false_positives), \($i.false_negatives)) | \($i.vs_standard | r3) | \($i.recency.share), \($i.recency.period), \($i.recency.depth) × \($i.recency.width), \($i.recency.sketch_bits) + \($i.recency.btbf_bits) |"
  ' "${OUT_DIR}/${name}.json"
done
