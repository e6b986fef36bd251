#!/usr/bin/env bash
# What a fatal signal loses while threads allocate: rec_sigthreads (tests/integration/recorder/
# progs) starts N workers that allocate 48-byte blocks without pause; its main thread prints how
# many of their mallocs had returned, then dies of SIGNAL. Every one of those was committed
# before the signal, so the log must hold at least as many of the workers' allocations. Prints a
# line per run (allocations missing from the log, the Lost count the log gives, the time from
# the signal to heaprec's end) and a summary per case.
#
# Usage: bench/run_signal_bench.sh BUILD_DIR [RUNS] [THREADS...]   (default: 10 runs at 8 and 32)
#   BUILD_DIR gives heaprec and heapman; PROG (env) the test program, by default the one in
#   BUILD_DIR, so that an older build can be measured with today's program.
set -uo pipefail
build=${1:?usage: run_signal_bench.sh BUILD_DIR [RUNS] [THREADS...]}
runs=${2:-10}
shift $(( $# >= 2 ? 2 : 1 ))
threads=("$@")
[ ${#threads[@]} -gt 0 ] || threads=(8 32)
heaprec=$build/recorder/heaprec
heapman=$build/heapman/heapman
prog=${PROG:-$build/tests/integration/recorder/rec_sigthreads}
[ -x "$prog" ] || { echo "no $prog: build the recorder tests, or set PROG" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sleep_ms=150
for n in "${threads[@]}"; do
  for how in 15 2 10 segv abort; do
    bad=0 maxmissing=0 lostruns=0 total_ms=0
    for ((i = 1; i <= runs; i++)); do
      rm -f "$work"/s.hml*
      start=$EPOCHREALTIME
      # Through sh, which says nothing of a child killed by a signal (bash would, on every run).
      sh -c '"$@"; exit 0' sh "$heaprec" run -o "$work/s.hml" -- "$prog" "$n" "$how" "$sleep_ms" \
        >"$work/out" 2>"$work/err"
      end=$EPOCHREALTIME
      counted=$(awk '/^allocs/ {print $2}' "$work/out")
      inlog=$("$heapman" allocs "$work/s.hml" --function '^worker$' --allocs-only --top 0 \
                --csv - 2>/dev/null | awk -F, 'NR > 1 && $0 ~ /,48,/' | wc -l)
      lost=$("$heapman" info "$work/s.hml" --json 2>/dev/null |
             python3 -c 'import json,sys; print(json.load(sys.stdin)["lost_events"])' 2>/dev/null || echo "?")
      missing=$(( counted > inlog ? counted - inlog : 0 ))
      ms=$(python3 -c "print(round(($end - $start) * 1000) - $sleep_ms)")
      total_ms=$((total_ms + ms))
      (( missing > 0 )) && bad=$((bad + 1))
      (( missing > maxmissing )) && maxmissing=$missing
      [ "$lost" != 0 ] && lostruns=$((lostruns + 1))
      echo "threads $n  signal $how  counted $counted  in log $inlog  missing $missing  lost $lost  ${ms} ms after the signal (start-up included)"
    done
    echo "== threads $n signal $how: $bad of $runs runs missing allocations (worst $maxmissing), $lostruns with a Lost count, mean $((total_ms / runs)) ms"
  done
done
