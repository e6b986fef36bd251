#!/usr/bin/env bash
# Replay benchmark, in one run: HeapMan's full replay of the churn log (index pass and plain
# replay) against heaptrack_print on heaptrack's trace of the same workload; seek time with the
# index file on a larger log; bytes per live object. Prints a Markdown table for
# docs/PERFORMANCE.md.
#
#   bench/run_replay_bench.sh BUILD_DIR [EVENTS] [SEEK_EVENTS]
set -euo pipefail
build=${1:?usage: run_replay_bench.sh BUILD_DIR [EVENTS] [SEEK_EVENTS]}
events=${2:-10000000}
seekEvents=${3:-100000000}
lf="$build/bench/logformat_bench"
rb="$build/bench/replay_bench"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$lf" write "$tmp/churn.hml" "$events" >/dev/null
full=$("$rb" full "$tmp/churn.hml")
one=$(HEAPMAN_REPLAY_THREADS=1 "$rb" full "$tmp/churn.hml")
dec=$("$lf" read "$tmp/churn.hml")
echo "$dec"
decode=$(sed -nE 's/.*\), ([0-9.]+) M events\/s.*/\1/p' <<<"$dec")
mem=$("$rb" memory "$tmp/churn.hml")
echo "$full"
echo "one thread: $one"
echo "$mem"
n=$(sed -nE 's/^full replay: ([0-9]+) events.*/\1/p' <<<"$full")
idx=$(sed -nE 's/^index pass: .* = ([0-9.]+) M events\/s.*/\1/p' <<<"$full")
rep=$(sed -nE 's/^full replay: .* = ([0-9.]+) M events\/s.*/\1/p' <<<"$full")
rep1=$(sed -nE 's/^full replay: .* = ([0-9.]+) M events\/s.*/\1/p' <<<"$one")
bpo=$(sed -nE 's/.* = ([0-9.]+) bytes\/object; .*/\1/p' <<<"$mem")

ht="n/a (heaptrack not installed)"
if command -v heaptrack >/dev/null && command -v heaptrack_print >/dev/null; then
  heaptrack -o "$tmp/ht" "$lf" plain "$events" >"$tmp/ht.out" 2>&1
  htfile=$(ls "$tmp"/ht.* | grep -v '\.out$' | head -1)
  start=$(date +%s.%N)
  heaptrack_print "$htfile" >"$tmp/ht.txt" 2>&1
  end=$(date +%s.%N)
  ht=$(awk -v s="$start" -v e="$end" -v n="$n" 'BEGIN { printf "%.1f", n / (e - s) / 1e6 }')
  echo "heaptrack_print: $n events in $(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.3f", e - s }') s"
fi

"$lf" write "$tmp/big.hml" "$seekEvents" >/dev/null
seek=$("$rb" seek "$tmp/big.hml" 50)
echo "$seek"
open=$(sed -nE 's/.*open with index ([0-9.]+) s.*/\1/p' <<<"$seek")
mean=$(sed -nE 's/.*: mean ([0-9.]+) ms, max ([0-9.]+) ms.*/\1/p' <<<"$seek")
max=$(sed -nE 's/.*: mean ([0-9.]+) ms, max ([0-9.]+) ms.*/\2/p' <<<"$seek")

echo
echo "| figure | HeapMan replay | heaptrack_print |"
echo "| --- | --- | --- |"
echo "| full replay of $n churn events, M events/s (index pass: tables + checkpoints) | $idx | $ht |"
echo "| full replay from the start, no checkpoints, M events/s (decoder on a 2nd thread) | $rep | — |"
echo "| the same on one thread (HEAPMAN_REPLAY_THREADS=1) | $rep1 | — |"
echo "| for reference: decoding alone (logformat_bench read), one thread | $decode | — |"
echo "| open with index file, $seekEvents-event log, s | $open | — |"
echo "| seek to a random point (50 seeks), mean / max ms | $mean / $max | — |"
echo "| bytes per live object (live set table; dictionary apart) | $bpo | — |"
