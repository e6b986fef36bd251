#!/usr/bin/env bash
# What RAM dumps cost a real bdwgc program: guile (Debian's guile-3.0) running
# bench/guile_dumps.scm recorded with --ram-dumps off and every, RUNS times each, interleaved.
# Prints wall seconds, peak RSS and the log's size per run.
#
#   bench/run_dump_bench.sh BUILD_DIR [RUNS]
set -euo pipefail
build=${1:?usage: run_dump_bench.sh BUILD_DIR [RUNS]}
runs=${2:-3}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
heaprec="$build/recorder/heaprec"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GUILE_AUTO_COMPILE=0
for ((i = 1; i <= runs; i++)); do
  for mode in off every; do
    /usr/bin/time -f "%e %M" -o "$work/time" "$heaprec" run --ram-dumps "$mode" -o "$work/g.hml" \
      -- guile "$here/guile_dumps.scm" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
    read -r secs rss <"$work/time"
    printf 'dumps %-5s  %6.2f s  %7d KiB peak  log %d bytes\n' "$mode" "$secs" "$rss" \
      "$(stat -c %s "$work/g.hml")"
  done
done
