#!/usr/bin/env bash
# What the recorder adds to the collector's pauses: guile (Debian's guile-3.0, a real bdwgc
# program) running bench/guile_churn.scm, plain, recorded, and recorded with a RAM dump at every
# collection. bdwgc's own statistics (GC_PRINT_STATS=1, measured by the collector itself) give,
# per collection, the world-stopped marking ("World-stopped marking took A ms B ns": the threads
# stopped) and the whole collection ("Complete collection took": the allocation lock held, the
# world stopped for marking, then finalization and the reclaim events, where the recorder takes
# the collected sets). The table has their p50, p99 and max, each the median over RUNS runs, and
# the p99s against the plain run's.
#
#   bench/run_pause_bench.sh BUILD_DIR [RUNS] [ROUNDS]
#
# RUNS 3; ROUNDS 300 (about 24 M events, 150 collections). Needs guile-3.0 (cmake/deps.sh test).
# The recorder's work after the collector lets go (the writer thread compressing chunks) is not
# in these pauses: it shows in the recording cost (run_recording_cost.sh).
set -euo pipefail
build=$(realpath "${1:?usage: run_pause_bench.sh BUILD_DIR [RUNS] [ROUNDS]}")
runs=${2:-3}
rounds=${3:-300}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
heaprec="$build/recorder/heaprec"
[[ -x $heaprec ]] || { echo "run_pause_bench: $heaprec not built" >&2; exit 1; }
command -v guile >/dev/null || { echo "run_pause_bench: guile not installed (cmake/deps.sh test)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/heapman-pause-XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
mkdir home cache
# Hermetic guile: no auto-compilation cache, no init file (as tests/integration/guile does).
export HOME="$work/home" XDG_CACHE_HOME="$work/cache" GUILE_AUTO_COMPILE=0
unset GUILE_LOAD_PATH GUILE_LOAD_COMPILED_PATH HEAPMAN_RAM_DUMPS

guile_run=(guile --no-auto-compile -s "$here/guile_churn.scm" "$rounds")
# pauses LABEL CMD...: runs CMD with the collector's statistics on; appends to LABEL's file
# "stopped-p50 stopped-p99 stopped-max complete-p50 complete-p99 complete-max count" (us).
pauses() {
  local label=$1
  shift
  GC_PRINT_STATS=1 "$@" >/dev/null 2>stats.txt || { echo "run_pause_bench: '$*' failed" >&2; tail stats.txt >&2; exit 1; }
  python3 - stats.txt >>"t.$label" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
def times(what):
    ns = sorted(int(a) * 1000000 + int(b) for a, b in re.findall(what + r" took (\d+) ms (\d+) ns", text))
    if not ns:
        sys.exit("no '%s took' line: is this bdwgc with GC_PRINT_STATS?" % what)
    return ns
out = []
for ns in (times("World-stopped marking"), times("Complete collection")):
    q = lambda p: ns[min(len(ns) - 1, int(p * len(ns)))]
    out += [q(0.5) / 1e3, q(0.99) / 1e3, ns[-1] / 1e3]
print(" ".join("%.1f" % v for v in out), len(times("Complete collection")))
PY
}
for ((i = 1; i <= runs; i++)); do
  pauses plain "${guile_run[@]}"
  pauses recorded "$heaprec" run -o r.hml -- "${guile_run[@]}"
  pauses dumps "$heaprec" run --ram-dumps every -o d.hml -- "${guile_run[@]}"
  rm -f r.hml d.hml
done
# median LABEL COLUMN
median() { sort -g -k"$2","$2" "t.$1" | awk -v c="$2" '{ v[NR] = $c } END { print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }
row() {  # row LABEL TEXT
  local c
  printf '| %s | %s |' "$2" "$(median "$1" 7)"
  for c in 1 2 3 4 5 6; do printf ' %s |' "$(median "$1" $c)"; done
  printf ' %s / %s |\n' "$(ratio "$(median "$1" 2)" "$(median plain 2)")" \
    "$(ratio "$(median "$1" 5)" "$(median plain 5)")"
}
echo
echo "guile_churn.scm, $rounds rounds; the collector's pauses (bdwgc GC_PRINT_STATS), microseconds, median of $runs runs."
echo
echo "| run | collections | stopped p50 | stopped p99 | stopped max | complete p50 | complete p99 | complete max | p99 against plain (stopped / complete) |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
row plain "plain"
row recorded "\`heaprec run\`"
row dumps "\`heaprec run --ram-dumps every\`"
