#!/usr/bin/env bash
# The finalization queue's recording cost: finalize_bench (N objects with finalizers per round,
# dropped, collected, finalized; bench/finalize_bench.c) run RUNS times in each mode, interleaved:
#   plain    the program alone
#   rec      BUILD_DIR's heaprec run
#   base     BASE_HEAPREC (another build's heaprec, e.g. before a change), when given
#
#   bench/run_finalize_bench.sh BUILD_DIR [N] [ROUNDS] [RUNS] [BASE_HEAPREC]
#
# Prints the median over the runs of each figure the program prints (register_ns, collect_ms,
# invoke_ns: see finalize_bench.c) per mode.
set -euo pipefail
build=${1:?usage: run_finalize_bench.sh BUILD_DIR [N] [ROUNDS] [RUNS] [BASE_HEAPREC]}
n=${2:-100000}
rounds=${3:-10}
runs=${4:-5}
base=${5:-}
bench="$build/bench/finalize_bench"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/finalize-bench-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
unset HEAPMAN_RAM_DUMPS
modes="plain rec"
[ -n "$base" ] && modes="$modes base"
for i in $(seq 1 "$runs"); do
  for mode in $modes; do
    case $mode in
      plain) "$bench" "$n" "$rounds" >"$tmp/$mode.$i" ;;
      rec) "$build/recorder/heaprec" run -o "$tmp/log.hml" -- "$bench" "$n" "$rounds" >"$tmp/$mode.$i" 2>/dev/null ;;
      base) "$base" run -o "$tmp/log.hml" -- "$bench" "$n" "$rounds" >"$tmp/$mode.$i" 2>/dev/null ;;
    esac
  done
done
echo "finalize_bench $n objects x $rounds rounds, median of $runs runs"
printf "%-6s %12s %12s %12s %10s\n" mode register_ns collect_ms invoke_ns finalized
for mode in $modes; do
  med() { grep -h "^$1 " "$tmp"/$mode.* | awk '{print $2}' | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
  printf "%-6s %12s %12s %12s %10s\n" "$mode" "$(med register_ns)" "$(med collect_ms)" \
    "$(med invoke_ns)" "$(med finalized)"
done
