#!/usr/bin/env bash
# Log-format benchmark: bytes per event, write and read throughput of HeapMan's log on the churn
# workload, and heaptrack's trace size on the same workload (same program, same events), in one
# run. Prints a Markdown table for docs/PERFORMANCE.md.
#
#   bench/run_logformat_bench.sh BUILD_DIR [EVENTS]
set -euo pipefail
build=${1:?usage: run_logformat_bench.sh BUILD_DIR [EVENTS]}
events=${2:-10000000}
bench="$build/bench/logformat_bench"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

w=$("$bench" write "$tmp/churn.hml" "$events")
r=$("$bench" read "$tmp/churn.hml")
echo "$w"
echo "$r"
n=$(sed -E 's/^write: ([0-9]+) events.*/\1/' <<<"$w")
bpe=$(sed -E 's/.* ([0-9.]+) bytes\/event.*/\1/' <<<"$w")
wr=$(sed -E 's/.*, ([0-9.]+) M events\/s.*/\1/' <<<"$w")
rd=$(sed -E 's/.*\), ([0-9.]+) M events\/s.*/\1/' <<<"$r")

ht="n/a (heaptrack not installed)"
if command -v heaptrack >/dev/null; then
  heaptrack -o "$tmp/ht" "$build/bench/churn_program" "$events" >"$tmp/ht.out" 2>&1
  htfile=$(ls "$tmp"/ht.* | grep -v '\.out$' | head -1)
  htbytes=$(stat -c %s "$htfile")
  ht=$(awk -v b="$htbytes" -v n="$n" 'BEGIN { printf "%.3f", b / n }')
  echo "heaptrack: $htbytes bytes for $n events ($(basename "$htfile"))"
fi

echo
echo "| figure | HeapMan log (LZ4) | heaptrack 1.4 trace (zstd) |"
echo "| --- | --- | --- |"
echo "| bytes per alloc/free event | $bpe | $ht |"
echo "| write (encode + LZ4 + XXH3 + write), M events/s, one core | $wr | — |"
echo "| read (mmap + XXH3 + LZ4 + decode), M events/s, one core | $rd | — |"
