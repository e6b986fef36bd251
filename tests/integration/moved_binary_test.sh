#!/usr/bin/env bash
# A log read where its program's files are not where they were recorded (another machine, another
# root, a stripped build): frames named module+offset say so on stderr, once a module, with what
# to do; --path-map FROM=TO finds the moved file and --debug-dir DIR a separate debug file, and
# the answer is then the one given before the move, byte for byte.
#
#   moved_binary_test.sh HEAPMAN HEAPREC GC_GAME
set -euo pipefail
usage="usage: moved_binary_test.sh HEAPMAN HEAPREC GC_GAME"
HEAPMAN=$(realpath "${1:?$usage}")
HEAPREC=$(realpath "${2:?$usage}")
GC_GAME=$(realpath "${3:?$usage}")
source "$(dirname "${BASH_SOURCE[0]}")/support/harness.sh"
enter_work moved

# The game, recorded from a directory of its own.
mkdir -p rec/bin
cp "$GC_GAME" rec/bin/game
"$HEAPREC" run -o game.hml -- rec/bin/game >/dev/null 2>rec.err || { cat rec.err >&2; exit 1; }
"$HEAPMAN" blame game.hml --top 10 --csv before.csv >/dev/null 2>before.err
[[ -s before.err ]] && fail "blame with the program in place wrote to stderr: $(cat before.err)"
sed -n 2p before.csv | grep -q '^"\?[^,]*loadAsset' || fail "first row is not loadAsset: $(sed -n 2p before.csv)"
# Every frame of every stack: libgc's static functions have no symbol (libgc.so.1+0x...) while
# its exported ones are named; such a module is not worth a note.
"$HEAPMAN" stacks game.hml >stacks.out 2>stacks.err
[[ -s stacks.err ]] && fail "stacks with the program in place wrote to stderr: $(cat stacks.err)"

# Moved: the game's own frames are module+offset, and stderr says why and what to do.
mv rec moved
"$HEAPMAN" blame game.hml --top 10 --csv moved.csv >/dev/null 2>moved.err
cmp -s before.csv moved.csv && fail "the moved program's frames are still named"
grep -q 'game+0x' moved.csv || fail "no game+0x frame in the answer without the file: $(head -3 moved.csv)"
expect_grep moved moved.err "^heapman: [0-9]+ frames? in game \($WORK/rec/bin/game\) named module\+offset: module file not found; recorded on another machine\? --path-map FROM=TO looks for it under TO$"
[[ $(wc -l <moved.err) -eq 1 ]] || fail "more than the one note: $(cat moved.err)"

"$HEAPMAN" blame game.hml --top 10 --csv mapped.csv --path-map "$WORK/rec=$WORK/moved" >/dev/null 2>mapped.err
cmp -s before.csv mapped.csv || { fail "--path-map does not give the answer from before the move:"; diff before.csv mapped.csv >&2 || true; }
[[ -s mapped.err ]] && fail "blame --path-map wrote to stderr: $(cat mapped.err)"
# A map that does not apply changes nothing; one without '=' is refused.
"$HEAPMAN" blame game.hml --top 10 --csv unrelated.csv --path-map /nowhere=/else >/dev/null 2>/dev/null
cmp -s moved.csv unrelated.csv || fail "an unrelated --path-map changed the answer"
rc=0
"$HEAPMAN" blame game.hml --path-map "$WORK/rec" >/dev/null 2>nomap.err || rc=$?
[[ $rc -eq 2 ]] || fail "--path-map without '=': exit $rc, not 2"
expect_grep nomap nomap.err "^heapman blame: --path-map '$WORK/rec': give FROM=TO"

# The shell takes them as options of its log: named in every command, the note once a module.
printf 'blame --top 10 --csv -\nblame --top 10 --csv -\n' |
  "$HEAPMAN" game.hml --path-map "$WORK/rec=$WORK/moved" >shell_mapped.out 2>shell_mapped.err
grep -q 'loadAsset' shell_mapped.out || fail "the shell with --path-map names no loadAsset"
grep -q 'named module+offset' shell_mapped.err && fail "the shell with --path-map noted: $(cat shell_mapped.err)"
printf 'blame --top 10\nblame --top 10\n' | "$HEAPMAN" game.hml >shell.out 2>shell.err
[[ $(grep -c 'named module+offset' shell.err) -eq 1 ]] || fail "the shell did not note the module once: $(cat shell.err)"

# Stripped, its debug information in a build-id tree of its own: --debug-dir finds it.
mkdir -p stripped/bin
objcopy --only-keep-debug moved/bin/game game.debug
strip --strip-all -o stripped/bin/game moved/bin/game
id=$(readelf -n stripped/bin/game | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p')
[[ -n $id ]] || { echo "FAIL: the game has no build id" >&2; exit 1; }
mkdir -p "debug/.build-id/${id:0:2}"
mv game.debug "debug/.build-id/${id:0:2}/${id:2}.debug"
"$HEAPREC" run -o stripped.hml -- stripped/bin/game >/dev/null 2>rec2.err || { cat rec2.err >&2; exit 1; }
"$HEAPMAN" blame stripped.hml --top 10 --csv bare.csv >/dev/null 2>bare.err
expect_grep stripped bare.err "^heapman: [0-9]+ frames? in game \($WORK/stripped/bin/game\) named module\+offset: no debug info and no symbol; it is stripped: install its debug symbols .* or give --debug-dir DIR"
"$HEAPMAN" blame stripped.hml --top 10 --csv debug.csv --debug-dir debug >/dev/null 2>debug.err
[[ -s debug.err ]] && fail "blame --debug-dir wrote to stderr: $(cat debug.err)"
sed -n 2p debug.csv | grep -q '^"\?[^,]*loadAsset' || fail "--debug-dir: first row is not loadAsset: $(sed -n 2p debug.csv)"
grep -q 'game+0x' debug.csv && fail "--debug-dir left game+0x frames: $(grep 'game+0x' debug.csv | head -2)"
# --no-symbols names by module+offset on purpose: nothing to say.
"$HEAPMAN" blame stripped.hml --top 10 --no-symbols >/dev/null 2>nosym.err
[[ -s nosym.err ]] && fail "blame --no-symbols wrote to stderr: $(cat nosym.err)"

finish "moved binary: said why, and named again by --path-map and --debug-dir"
