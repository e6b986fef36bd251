#!/usr/bin/env bash
# Mono recorder overhead: MonoBench.exe (bench/mono/MonoBench.cs) on mono-boehm in these modes,
# RUNS times each, interleaved; the best (smallest) work time of each mode counts:
#   plain      mono-boehm alone
#   nostacks   heaprec run --mono-stacks off (allocations, classes, collections, collected sets)
#   stacks     heaprec run (the default: managed stacks from the shadow stack too)
#   log        Mono's own log profiler, --profile=log:alloc (allocation events with backtraces,
#              its default), the peer
# Work times come from the program (Stopwatch around the loop): mono-boehm spends ~2 s at
# shutdown whatever runs it, and the recorder's start-up and the log's finishing are outside too.
#
#   bench/run_mono_bench.sh BUILD_DIR [GAME_FRAMES] [TINY_ALLOCS] [RUNS]
#
# Workloads: "game" (GAME_FRAMES frames of particles, strings and scratch arrays 8 calls deep,
# 63 allocations a frame, 150 000 objects kept alive) and "tiny" (TINY_ALLOCS 32-byte objects in a
# tight loop: nothing but allocation, the worst case). Prints a Markdown table.
set -euo pipefail
build=${1:?usage: run_mono_bench.sh BUILD_DIR [GAME_FRAMES] [TINY_ALLOCS] [RUNS]}
frames=${2:-100000}
tiny=${3:-10000000}
runs=${4:-3}
exe="$build/bench/MonoBench.exe"
heaprec="$build/recorder/heaprec"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mono-bench-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
[ -f "$exe" ] || { echo "no $exe: build the mono_bench target" >&2; exit 1; }
# Run from the scratch directory: a Mono that crashes leaves its mono_crash.* files in the current
# one (one appeared here during a run of Mono's log profiler).
exe=$(realpath "$exe")
heaprec=$(realpath "$heaprec")
cd "$tmp"
log_ok=1
[ -f /usr/lib/libmono-profiler-log.so ] || log_ok=0

# run MODE WORKLOAD N: prints the work time in ms
run() {
  local mode=$1 what=$2 n=$3 out
  case $mode in
    plain) out=$(mono-boehm "$exe" "$what" "$n" 2>/dev/null) ;;
    nostacks) out=$("$heaprec" run --mono-stacks off -o "$tmp/r.hml" -- mono-boehm "$exe" "$what" "$n" 2>/dev/null) ;;
    stacks) out=$("$heaprec" run -o "$tmp/r.hml" -- mono-boehm "$exe" "$what" "$n" 2>/dev/null) ;;
    log) out=$(mono-boehm --profile=log:alloc,output="$tmp/p.mlpd" "$exe" "$what" "$n" 2>/dev/null) ;;
  esac
  rm -f "$tmp/r.hml" "$tmp/p.mlpd"
  sed -nE 's/^work ms ([0-9.]+) allocs ([0-9]+) gcs ([0-9]+)$/\1 \2 \3/p' <<<"$out"
}

modes="plain nostacks stacks"
[ $log_ok = 1 ] && modes="$modes log"
declare -A best allocs gcs
for what in game tiny; do
  n=$frames
  [ $what = tiny ] && n=$tiny
  for ((r = 1; r <= runs; r++)); do
    for mode in $modes; do
      read -r ms a g <<<"$(run $mode $what $n)"
      key="$what.$mode"
      if [ -z "$ms" ]; then  # the program printed no work line (seen once with the log profiler)
        echo "$what $mode run $r: failed (no work line), not counted" >&2
        continue
      fi
      echo "$what $mode run $r: $ms ms, $a allocations, $g collections" >&2
      if [ -z "${best[$key]:-}" ] || awk -v x="$ms" -v y="${best[$key]}" 'BEGIN { exit !(x < y) }'; then
        best[$key]=$ms
      fi
      allocs[$what]=$a
      gcs[$key]=$g
    done
  done
done

echo
echo "| workload | mode | work ms (best of $runs) | ns per allocation | slowdown | collections |"
echo "| --- | --- | --- | --- | --- | --- |"
for what in game tiny; do
  for mode in $modes; do
    key="$what.$mode"
    awk -v ms="${best[$key]}" -v base="${best[$what.plain]}" -v a="${allocs[$what]}" \
        -v w="$what" -v m="$mode" -v g="${gcs[$key]}" \
        'BEGIN { printf "| %s | %s | %.1f | %.1f | %.2fx | %s |\n", w, m, ms, ms * 1e6 / a, ms / base, g }'
  done
done
