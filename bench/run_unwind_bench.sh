#!/usr/bin/env bash
# Stack unwinding cost on a real program built without frame pointers: Debian's sqlite3 (and its
# libsqlite3, libc) running a generated SQL workload in :memory: (200k single-row INSERTs, an
# index, GROUP BY, a self-join, ORDER BY). Runs it plain, under heaprec with each --unwind mode
# and under heaptrack; best of RUNS for each, wall and CPU (user + sys) seconds from
# /usr/bin/time. Also prints the recorded stacks' mean depth per mode (heapman stacks), so that a
# fast mode that cuts stacks short shows.
#
#   bench/run_unwind_bench.sh BUILD_DIR [ROWS] [RUNS]
#
# Needs sqlite3 and heaptrack (cmake/deps.sh bench).
set -euo pipefail
build=${1:?usage: run_unwind_bench.sh BUILD_DIR [ROWS] [RUNS]}
rows=${2:-200000}
runs=${3:-3}
heaprec="$build/recorder/heaprec"
heapman="$build/heapman/heapman"
command -v sqlite3 >/dev/null || { echo "sqlite3 not found: run cmake/deps.sh bench" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

awk -v rows="$rows" 'BEGIN {
  srand(1)
  print "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, grp INTEGER, v REAL);"
  print "BEGIN;"
  for (i = 0; i < rows; ++i)
    printf "INSERT INTO t(name, grp, v) VALUES(%cname-%d%c, %d, %.1f);\n", 39, int(rand() * 1000000), 39, i % 97, i * 0.5
  print "COMMIT;"
  print "CREATE INDEX t_name ON t(name);"
  print "SELECT grp, count(*), sum(v) FROM t GROUP BY grp ORDER BY 3 DESC LIMIT 3;"
  print "SELECT count(*) FROM t a JOIN t b ON a.name = b.name WHERE a.id < b.id;"
  print "SELECT name FROM t ORDER BY v DESC LIMIT 3;"
}' >"$tmp/work.sql"

measure() {  # label command...: prints "label wall_s cpu_s maxrss_kb"
  local label=$1
  shift
  /usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "$@" <"$tmp/work.sql" >"$tmp/$label.out" 2>"$tmp/err" ||
    { cat "$tmp/err" >&2; exit 1; }
  read -r wall user sys rss <"$tmp/time"
  echo "$label $wall $(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }') $rss"
}

modes=(fp auto dwarf)
for run in $(seq "$runs"); do
  measure plain sqlite3 :memory:
  for m in "${modes[@]}"; do
    measure "heaprec-$m" "$heaprec" run -o "$tmp/$m.hml" --unwind "$m" -- sqlite3 :memory:
  done
  if command -v heaptrack >/dev/null; then
    rm -f "$tmp"/ht.*
    measure heaptrack heaptrack -o "$tmp/ht" sqlite3 :memory:
  fi
done >"$tmp/results"
cat "$tmp/results"

# The program's output must not change under the recorder.
for m in "${modes[@]}"; do
  cmp -s "$tmp/plain.out" "$tmp/heaprec-$m.out" || { echo "output differs under --unwind $m" >&2; exit 1; }
done

echo
echo "| run | wall s (best of $runs) | slowdown | CPU s (best) | peak RSS MiB | mean stack depth |"
echo "| --- | --- | --- | --- | --- | --- |"
depth() {  # mean frames per allocation stack (heapman stacks: folded, weighted by bytes)
  if [ -x "$heapman" ]; then
    "$heapman" stacks "$1" --at end -o "$tmp/folded" >/dev/null 2>&1 &&
      awk '{ n = split($1, f, ";"); w = $NF; s += n * w; t += w } END { if (t) printf "%.1f", s / t; else printf "—" }' "$tmp/folded" ||
      printf "—"
  else
    printf "—"
  fi
}
awk '{ if (!($1 in w) || $2 < w[$1]) w[$1] = $2; if (!($1 in c) || $3 < c[$1]) c[$1] = $3;
       if ($4 > m[$1]) m[$1] = $4 }
     END { for (k in w) print k, w[k], c[k], m[k] }' "$tmp/results" | sort >"$tmp/best"
plain=$(awk '$1 == "plain" { print $2 }' "$tmp/best")
while read -r label wall cpu rss; do
  d="—"
  case $label in heaprec-*) d=$(depth "$tmp/${label#heaprec-}.hml") ;; esac
  awk -v l="$label" -v w="$wall" -v p="$plain" -v c="$cpu" -v r="$rss" -v d="$d" \
    'BEGIN { printf "| %s | %.2f | %.2fx | %.2f | %.0f | %s |\n", l, w, w / p, c, r / 1024, d }'
done <"$tmp/best"
