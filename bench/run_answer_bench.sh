#!/usr/bin/env bash
# How long the questions a user clicks take: guile (Debian's guile-3.0, a real bdwgc program)
# running bench/guile_churn.scm is recorded once, then each query runs RUNS times and the median
# is printed, wall and CPU (user + sys) seconds, as a Markdown table:
#
#   blame --at gc:10 (warm)  `heapman blame LOG --at gc:10`, the index already built
#   first query (fresh log)  the same on a copy without its index (LOG.hmx): index pass + replay
#                            + blame
#   churn (warm)             `heapman churn LOG`
#   report (warm)            `heapman report LOG -o x.html`
#   malloc 10 M, fresh       bench/churn_program (EVENTS alloc/free events, real glibc malloc)
#                            recorded by heaprec: `heapman blame --at end` on a log without its
#                            index (index pass, full replay, blame); the peer is heaptrack_print
#                            on heaptrack's trace of the same program and events
#
#   bench/run_answer_bench.sh BUILD_DIR [RUNS] [ROUNDS] [EVENTS]
#
# RUNS 3; ROUNDS 600 (guile_churn.scm's rounds: 48 M events, ~300 collections); EVENTS
# 10 000 000. Needs guile-3.0 and heaptrack (cmake/deps.sh test, cmake/deps.sh bench); without
# heaptrack its column says so. The guile recording and the churn_program runs are not timed.
set -euo pipefail
build=$(realpath "${1:?usage: run_answer_bench.sh BUILD_DIR [RUNS] [ROUNDS] [EVENTS]}")
runs=${2:-3}
rounds=${3:-600}
events=${4:-10000000}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
heaprec="$build/recorder/heaprec"
heapman="$build/heapman/heapman"
churn="$build/bench/churn_program"
for f in "$heaprec" "$heapman" "$churn"; do
  [[ -x $f ]] || { echo "run_answer_bench: $f not built" >&2; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/heapman-answer-XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
mkdir home cache
# Hermetic guile: no auto-compilation cache, no init file (as tests/integration/guile does).
export HOME="$work/home" XDG_CACHE_HOME="$work/cache" GUILE_AUTO_COMPILE=0
unset GUILE_LOAD_PATH GUILE_LOAD_COMPILED_PATH HEAPMAN_RAM_DUMPS

# timed LABEL CMD...: runs CMD, appends "wall cpu" to LABEL's file; stdout discarded.
timed() {
  local label=$1
  shift
  /usr/bin/time -f "%e %U %S" -o time.out "$@" >/dev/null 2>err.out ||
    { echo "run_answer_bench: '$*' failed:" >&2; cat err.out >&2; exit 1; }
  awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }' time.out >>"t.$label"
}
# median LABEL COLUMN: the median of that column over the runs.
median() { sort -g -k"$2","$2" "t.$1" | awk -v c="$2" '{ v[NR] = $c } END { print v[int((NR + 1) / 2)] }'; }

echo "recording guile_churn.scm ($rounds rounds)..." >&2
/usr/bin/time -f "%e" -o rec.time "$heaprec" run -o g.hml -- guile --no-auto-compile \
  -s "$here/guile_churn.scm" "$rounds" >/dev/null 2>rec.err ||
  { cat rec.err >&2; exit 1; }
"$heapman" info g.hml --json info.json >/dev/null
read -r gevents gcs < <(python3 -c 'import json,sys; i=json.load(open(sys.argv[1])); print(i["events"], i["gcs"])' info.json)
echo "recording churn_program ($events events)..." >&2
"$heaprec" run -o m.hml -- "$churn" "$events" >/dev/null 2>&1
peer=0
if command -v heaptrack >/dev/null && command -v heaptrack_print >/dev/null; then
  peer=1
  heaptrack -o ht "$churn" "$events" >heaptrack.out 2>&1
  trace=$(ls ht.*)
fi

"$heapman" churn g.hml >/dev/null  # reads the whole log, builds g.hml.hmx: the warm rows read it
for ((i = 1; i <= runs; i++)); do
  timed blame "$heapman" blame g.hml --at gc:10
  cp g.hml fresh.hml
  rm -f fresh.hml.hmx cache/heapman/fresh.hml-*
  timed first "$heapman" blame fresh.hml --at gc:10
  rm -f fresh.hml fresh.hml.hmx
  timed churn "$heapman" churn g.hml
  timed report "$heapman" report g.hml -o x.html
  rm -f m.hml.hmx cache/heapman/m.hml-*
  timed malloc "$heapman" blame m.hml --at end
  [[ $peer = 1 ]] && timed peer heaptrack_print "$trace"
done

row() {  # row LABEL TEXT [PEER]
  printf '| %s | %s / %s | %s |\n' "$2" "$(median "$1" 1)" "$(median "$1" 2)" "${3:-—}"
}
echo
echo "guile_churn.scm, $rounds rounds: $gevents events, $gcs collections (recorded in $(cat rec.time) s); churn_program: $events events. Median of $runs, seconds."
echo
echo "| query | HeapMan wall / CPU | peer wall / CPU |"
echo "| --- | --- | --- |"
row blame "\`blame --at gc:10\`, index built"
row first "first query on a fresh log (\`blame --at gc:10\`: index, replay, blame)"
row churn "\`churn\`, index built"
row report "\`report -o x.html\`, index built"
if [[ $peer = 1 ]]; then
  row malloc "malloc log, $events events: \`blame --at end\`, fresh (index, full replay, blame)" \
    "heaptrack_print $(median peer 1) / $(median peer 2)"
else
  row malloc "malloc log, $events events: \`blame --at end\`, fresh (index, full replay, blame)" \
    "heaptrack not installed"
fi
