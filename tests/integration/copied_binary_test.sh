#!/usr/bin/env bash
# A heapman binary copied where no share/heapman/default_exclusions.txt stands next to it charges
# allocations to the same frames as the built one (the list embedded in the binary is its
# default), and `--exclude FILE` still replaces that list.
#
#   copied_binary_test.sh HEAPMAN HEAPREC GC_GAME
set -euo pipefail
HEAPMAN=$(realpath "${1:?usage: copied_binary_test.sh HEAPMAN HEAPREC GC_GAME}")
HEAPREC=$(realpath "${2:?usage: copied_binary_test.sh HEAPMAN HEAPREC GC_GAME}")
GC_GAME=$(realpath "${3:?usage: copied_binary_test.sh HEAPMAN HEAPREC GC_GAME}")
source "$(dirname "${BASH_SOURCE[0]}")/support/harness.sh"
enter_work copied

"$HEAPREC" run -o game.hml -- "$GC_GAME" >/dev/null 2>rec.err || { cat rec.err >&2; exit 1; }
mkdir -p alone/bin
cp "$HEAPMAN" alone/bin/heapman
[[ ! -e alone/share ]] || fail "alone/ must have no share/ directory"

"$HEAPMAN" blame game.hml --top 10 --csv built.csv >/dev/null
alone/bin/heapman blame game.hml --top 10 --csv copied.csv >/dev/null
cmp -s built.csv copied.csv || { fail "the copied binary blames other frames:"; diff built.csv copied.csv >&2 || true; }
# The default list matters on this program (the collector's and libc's frames are left out):
# without any exclusion the leaf frames are others.
: >empty.txt
alone/bin/heapman blame game.hml --top 10 --exclude empty.txt --csv none.csv >/dev/null
cmp -s built.csv none.csv && fail "an empty --exclude list blames the same frames as the default"
# The first row is the game's own function, not the collector's allocator.
sed -n 2p copied.csv | grep -q '^"\?[^,]*loadAsset' || fail "first row is not loadAsset: $(sed -n 2p copied.csv)"

finish "copied binary: same blame as the built one"
