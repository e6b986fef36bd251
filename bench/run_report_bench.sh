#!/usr/bin/env bash
# Report benchmark: `heapman report` on a generated game log (bench/report_log: a collected heap
# with a GC every 100 000 events, levels, frame marks; EVENTS events), the page's size, and the
# time headless Chromium takes to open it:
# data-render-ms is performance.now() when the page has drawn everything (from the start of the
# navigation: parsing the HTML and its JSON, then the drawing), best and worst of ROUNDS loads.
#
#   bench/run_report_bench.sh BUILD_DIR [EVENTS] [ROUNDS]     (REPORT_BENCH_KEEP=FILE keeps the page)
set -euo pipefail
build=${1:?usage: run_report_bench.sh BUILD_DIR [EVENTS] [ROUNDS]}
events=${2:-100000000}
rounds=${3:-5}
gen="$build/bench/report_log"
hm="$build/heapman/heapman"
chromium=${CHROMIUM:-chromium}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$gen" "$tmp/game.hml" "$events"
echo "log: $(stat -c %s "$tmp/game.hml") bytes, $events events"
TIMEFORMAT='%R %U %S'
{ time "$hm" info "$tmp/game.hml" >/dev/null; } 2>"$tmp/itime"
echo "first open (index): $(cat "$tmp/itime") (wall, user, sys s)"
{ time "$hm" report "$tmp/game.hml" -o "$tmp/report.html" >/dev/null; } 2>"$tmp/time"
read -r wall user sys <"$tmp/time"
size=$(stat -c %s "$tmp/report.html")
[ -z "${REPORT_BENCH_KEEP:-}" ] || cp "$tmp/report.html" "$REPORT_BENCH_KEEP"
echo "heapman report: $wall s wall, $user s user + $sys s sys; page $size bytes"
best="" worst=""
for _ in $(seq "$rounds"); do
  # Real time (no --virtual-time-budget: Chromium's virtual time would also drive
  # performance.now()); the page draws on DOMContentLoaded, before --dump-dom reads it.
  dom=$("$chromium" --headless --no-sandbox --disable-gpu --user-data-dir="$tmp/profile" \
        --dump-dom "file://$tmp/report.html" 2>/dev/null)
  errors=$(grep -oE '<html[^>]*' <<<"$dom" | sed -nE 's/.*data-js-errors="([0-9]+)".*/\1/p')
  ms=$(grep -oE '<html[^>]*' <<<"$dom" | sed -nE 's/.*data-render-ms="([0-9.]+)".*/\1/p')
  [ "$errors" = 0 ] || { echo "the page had $errors JavaScript errors" >&2; exit 1; }
  [ -n "$ms" ] || { echo "the page did not finish drawing" >&2; exit 1; }
  best=$(awk -v a="${best:-$ms}" -v b="$ms" 'BEGIN { print (b < a ? b : a) }')
  worst=$(awk -v a="${worst:-$ms}" -v b="$ms" 'BEGIN { print (b > a ? b : a) }')
done
echo "page load in headless Chromium (navigation start to drawn): best $best ms, worst $worst ms of $rounds"
echo
echo "| figure ($events events) | value |"
echo "| --- | --- |"
echo "| heapman report, wall s (user + sys s) | $wall ($user + $sys) |"
echo "| page size, bytes | $size |"
echo "| open in headless Chromium, ms (best-worst of $rounds) | $best-$worst |"
