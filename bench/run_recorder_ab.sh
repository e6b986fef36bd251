#!/usr/bin/env bash
# The recorder's cost in two builds, A (before a change) and B (after), measured in turn (A B A B
# ...) so that a machine whose speed drifts (other work, thermal) moves both alike. Four
# workloads, each recorded with full stacks (the default, --depth 32):
#   malloc     churn_program EVENTS: malloc/free with call depth 3-15 (bench/run_recorder_bench.sh);
#              the whole process's wall time
#   bdwgc      gc_bench ALLOCS 20000: GC_malloc ~20 frames deep (bench/run_gc_bench.sh); the
#              program's own ns per allocation
#   mono-game  MonoBench.exe game FRAMES on mono-boehm, managed stacks on (bench/run_mono_bench.sh);
#              the program's own work time (mono-boehm's ~2 s of shutdown left out)
#   mono-tiny  MonoBench.exe tiny N: 32-byte objects in a tight loop; work time
# Prints each workload's median for A and B and the ratio B/A of the medians (below 1: B is
# cheaper), as a Markdown table. The Mono rows need mono-boehm and the mono_bench target.
#
#   bench/run_recorder_ab.sh BUILD_A BUILD_B [ROUNDS] [EVENTS] [ALLOCS] [FRAMES] [TINY]
set -euo pipefail
a=${1:?usage: run_recorder_ab.sh BUILD_A BUILD_B [ROUNDS] [EVENTS] [ALLOCS] [FRAMES] [TINY]}
b=${2:?usage: run_recorder_ab.sh BUILD_A BUILD_B [ROUNDS] [EVENTS] [ALLOCS] [FRAMES] [TINY]}
rounds=${3:-7}
events=${4:-10000000}
allocs=${5:-5000000}
frames=${6:-100000}
tiny=${7:-10000000}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/recorder-ab-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
a=$(realpath "$a")
b=$(realpath "$b")
mono=0
if command -v mono-boehm >/dev/null && [ -f "$a/bench/MonoBench.exe" ] && [ -f "$b/bench/MonoBench.exe" ]; then
  mono=1
fi
cd "$tmp"  # a crashing Mono leaves its mono_crash.* files in the current directory

# one WORKLOAD BUILD: prints the workload's figure for one recorded run.
one() {
  local rec="$2/recorder/heaprec" log="$tmp/r.hml" out
  case $1 in
    malloc)
      local t0 t1
      t0=$(date +%s%N)
      "$rec" run -o "$log" -- "$2/bench/churn_program" "$events" >/dev/null 2>&1
      t1=$(date +%s%N)
      echo "$(( (t1 - t0) / 1000000 ))" ;;
    bdwgc)
      out=$("$rec" run -o "$log" -- "$2/bench/gc_bench" "$allocs" 20000 2>/dev/null)
      sed -nE 's/^ns_per_alloc ([0-9.]+)$/\1/p' <<<"$out" ;;
    mono-game | mono-tiny)
      local what=${1#mono-} n=$frames
      [ "$what" = tiny ] && n=$tiny
      out=$("$rec" run -o "$log" -- mono-boehm "$2/bench/MonoBench.exe" "$what" "$n" 2>/dev/null)
      sed -nE 's/^work ms ([0-9.]+) .*/\1/p' <<<"$out" ;;
  esac
  rm -f "$log" "$log".*
}

workloads="malloc bdwgc"
[ $mono = 1 ] && workloads="$workloads mono-game mono-tiny"
echo "A = $a, B = $b; $rounds rounds, in turn; $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for r in $(seq "$rounds"); do
  for w in $workloads; do
    echo "$w A $(one "$w" "$a")" >>"$tmp/results"
    echo "$w B $(one "$w" "$b")" >>"$tmp/results"
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo "| workload | unit | A (median of $rounds) | B (median of $rounds) | B/A |"
echo "| --- | --- | --- | --- | --- |"
for w in $workloads; do
  ma=$(awk -v w="$w" '$1 == w && $2 == "A" {print $3}' "$tmp/results" | median)
  mb=$(awk -v w="$w" '$1 == w && $2 == "B" {print $3}' "$tmp/results" | median)
  unit="ms (work)"
  [ "$w" = malloc ] && unit="ms (process)"
  [ "$w" = bdwgc ] && unit="ns/alloc"
  awk -v w="$w" -v u="$unit" -v a="$ma" -v b="$mb" 'BEGIN {printf "| %s | %s | %.1f | %.1f | %.3f |\n", w, u, a, b, b / a}'
done
