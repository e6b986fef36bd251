#!/usr/bin/env bash
# Replay benchmark, in one run: HeapMan's full replay of the churn log (index pass and plain
# replay) against heaptrack_print on heaptrack's trace of the same workload; seek time with the
# index file on a larger log; bytes per live object. Prints a Markdown table for
# docs/PERFORMANCE.md.
#
# Rates per core are events per second of CPU time (user + sys) of the process doing the work:
# on a shared machine wall time also counts the time other processes hold the core. HeapMan's
# one-thread replay is the best of 3 rounds (REPLAY_BENCH_ROUNDS) by CPU time.
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
one=$(HEAPMAN_REPLAY_THREADS=1 REPLAY_BENCH_ROUNDS=3 "$rb" full "$tmp/churn.hml")
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
rep1cpu=$(sed -nE 's/^full replay: .* = ([0-9.]+) M events\/cpu-s.*/\1/p' <<<"$one")
idx1cpu=$(sed -nE 's/^index pass: .* = ([0-9.]+) M events\/cpu-s.*/\1/p' <<<"$one")
bpo=$(sed -nE 's/.* = ([0-9.]+) bytes\/object; .*/\1/p' <<<"$mem")

ht="n/a (heaptrack not installed)"
htcpu="n/a"
if command -v heaptrack >/dev/null && command -v heaptrack_print >/dev/null; then
  heaptrack -o "$tmp/ht" "$build/bench/churn_program" "$events" >"$tmp/ht.out" 2>&1
  htfile=$(ls "$tmp"/ht.* | grep -v '\.out$' | head -1)
  TIMEFORMAT='%R %U %S'
  { time heaptrack_print "$htfile" >"$tmp/ht.txt" 2>&1; } 2>"$tmp/ht.time"
  read -r htwall htuser htsys <"$tmp/ht.time"
  ht=$(awk -v w="$htwall" -v n="$n" 'BEGIN { printf "%.1f", n / w / 1e6 }')
  htcpu=$(awk -v u="$htuser" -v s="$htsys" -v n="$n" 'BEGIN { printf "%.1f", n / (u + s) / 1e6 }')
  echo "heaptrack_print: $n events in $htwall s wall, $htuser s user + $htsys s sys"
fi

"$lf" write "$tmp/big.hml" "$seekEvents" >/dev/null
seek=$("$rb" seek "$tmp/big.hml" 50)
echo "$seek"
open=$(sed -nE 's/.*open with index ([0-9.]+) s.*/\1/p' <<<"$seek")
mean=$(sed -nE 's/.*: mean ([0-9.]+) ms, max ([0-9.]+) ms.*/\1/p' <<<"$seek")
max=$(sed -nE 's/.*: mean ([0-9.]+) ms, max ([0-9.]+) ms.*/\2/p' <<<"$seek")
# The index against its log (issue 17: at most a tenth with the default ReplayOptions::indexShare).
logBytes=$(stat -c %s "$tmp/big.hml")
hmxBytes=$(stat -c %s "$tmp/big.hml.hmx")
ratio=$(awk -v a="$hmxBytes" -v b="$logBytes" 'BEGIN { printf "%.2f%%", 100 * a / b }')

echo
echo "| figure | HeapMan replay | heaptrack_print |"
echo "| --- | --- | --- |"
echo "| full replay of $n churn events, one thread, M events per CPU-second (no checkpoints) | **$rep1cpu** | $htcpu |"
echo "| the same, index pass (tables + checkpoints), one thread, M events per CPU-second | $idx1cpu | — |"
echo "| full replay, one thread, M events per wall second | $rep1 | $ht |"
echo "| full replay, engine's choice of threads (2nd decoding thread when a core is free), wall | $rep | — |"
echo "| index pass, engine's choice of threads, wall | $idx | — |"
echo "| for reference: decoding alone (logformat_bench read), one thread | $decode | — |"
echo "| open with index file, $seekEvents-event log, s | $open | — |"
echo "| seek to a random point (50 seeks), mean / max ms | $mean / $max | — |"
echo "| index file of the $seekEvents-event log, bytes (share of the log's $logBytes) | $hmxBytes ($ratio) | — |"
echo "| bytes per live object (live set table; dictionary apart) | $bpo | — |"
