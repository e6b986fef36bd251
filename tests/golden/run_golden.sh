#!/usr/bin/env bash
# One golden test: runs `heapman ARGS...` in a scratch copy of the golden logs and diffs its
# stdout, stderr and exit status against EXPECTED. HEAPMAN_GOLDEN_UPDATE=1 rewrites EXPECTED.
#
#   run_golden.sh HEAPMAN LOG_DIR EXPECTED ARGS...
set -uo pipefail

HEAPMAN=$(realpath "$1")
LOGS=$(realpath "$2")
HERE=$(cd "$(dirname "$0")" && pwd)
EXPECTED=$3
shift 3
WORK=$(mktemp -d "${TMPDIR:-/tmp}/heapman-golden-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cp "$LOGS"/*.hml "$WORK"/
cp "$HERE"/*.txt "$WORK"/
cd "$WORK"

# Commands for the shell test come from input/NAME.in.
INPUT="$(dirname "$0")/input/$(basename "$EXPECTED" .txt).in"
[[ -f "$INPUT" ]] || INPUT=/dev/null
export HOME="$WORK" XDG_CACHE_HOME="$WORK/cache"
rc=0
"$HEAPMAN" "$@" >stdout.txt 2>stderr.txt <"$INPUT" || rc=$?
{
  echo "\$ heapman $*"
  cat stdout.txt
  if [[ -s stderr.txt ]]; then
    echo "[stderr]"
    cat stderr.txt
  fi
  echo "[exit $rc]"
} >actual.txt

if [[ "${HEAPMAN_GOLDEN_UPDATE:-0}" == 1 ]]; then
  cp actual.txt "$EXPECTED"
  echo "updated $EXPECTED"
  exit 0
fi
if ! diff -u "$EXPECTED" actual.txt; then
  echo "golden output differs from $EXPECTED (HEAPMAN_GOLDEN_UPDATE=1 to accept)" >&2
  exit 1
fi
