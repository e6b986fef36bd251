#!/usr/bin/env bash
# The two set-up commands of README.md. Each installs the Debian packages it needs, builds, and runs.
#
#   cmake/setup.sh main   build the tools and samples (no tests) and install them to
#                         out/install, then run the main job: record the
#                         bdwgc sample game with heaprec, replay it (GCs, blame at the end of
#                         level 2, growth diff over level 2, churn, folded stacks) and write CSV
#                         and folded-stack outputs; the same for the C# sample on mono-boehm
#                         and the C++-heap sample, and the paths that hold the C# game's
#                         leaked enemies (heap graph of a RAM dump: DOT, SVG, GEXF); a heap
#                         map of each game at a level end (PNG) and a video of each (MP4 with
#                         WebVTT subtitles). Outputs go to out/.
#   cmake/setup.sh test   build with -Werror, run every test (CTest), then build the reader's
#                         libFuzzer target with clang and ASan/UBSan and fuzz it briefly.
#                         This is what CI runs (.ci/run).
#
# Environment: JOBS (default 2), FUZZ_SECONDS (default 60).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
jobs=${JOBS:-2}
mode=${1:-}

case "$mode" in
  main)
    cmake/deps.sh build
    # The tools and the sample programs only: the test command builds the tests (in build-ci).
    cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHEAPMAN_TESTS=OFF -DHEAPMAN_BENCH=OFF \
      >/dev/null
    cmake --build build -j"$jobs"
    cmake --install build --prefix out/install >/dev/null
    mkdir -p out
    bin=out/install/bin
    # Record the sample game on the Boehm collector (levels, frames, a leaking cache, churn, two
    # threads), with RAM dumps at the first collection after each level ends.
    "$bin"/heaprec run -o out/gc_game.hml --ram-dumps event:level_end -- build/samples/gc_game 3 300
    "$bin"/heapman info out/gc_game.hml
    "$bin"/heapman verify out/gc_game.hml
    # The log holds the program's memory (its RAM dumps; the log is 0600): a copy to share has none.
    "$bin"/heapman strip out/gc_game.hml -o out/gc_game-shared.hml
    # Replay: the collections, who holds the memory at the end of level 2, what grew during it,
    # who made the garbage; CSV and folded stacks for tools (flamegraph.pl, speedscope).
    "$bin"/heapman gcs out/gc_game.hml
    "$bin"/heapman blame out/gc_game.hml --at level_end#2 --top 10 --csv out/gc_game-blame.csv
    "$bin"/heapman blame out/gc_game.hml --at level_end#2 --top 10
    "$bin"/heapman diff out/gc_game.hml --from level_start#2 --to level_end#2 --top 10 \
      --csv out/gc_game-diff.csv
    "$bin"/heapman diff out/gc_game.hml --from level_start#2 --to level_end#2 --top 10
    "$bin"/heapman churn out/gc_game.hml --from level_start#2 --to level_end#2 --top 10
    "$bin"/heapman stacks out/gc_game.hml --at level_end#2 -o out/gc_game-live.folded
    # The same kind of game in C# on mono-boehm: class names and managed stacks; the event
    # handlers every level leaves subscribed keep its enemies alive.
    "$bin"/heaprec run -o out/mono_game.hml --ram-dumps event:level_end \
      -- mono-boehm build/samples/MonoGame.exe 4 300
    "$bin"/heapman blame out/mono_game.hml --at level_end#3 --top 10 --csv out/mono_game-blame.csv
    "$bin"/heapman blame out/mono_game.hml --at level_end#3 --top 10
    "$bin"/heapman diff out/mono_game.hml --from level_end#1 --to level_end#3 --top 10 \
      --csv out/mono_game-diff.csv
    "$bin"/heapman types out/mono_game.hml --at level_end#3 --compare level_end#1 --top 10
    # Who holds the enemies: the heap graph of the RAM dump after level 3 (retained sizes from
    # its dominator tree, the paths from the roots merged per type, as Graphviz and Gephi files).
    "$bin"/heapman retained out/mono_game.hml --at level_end#3 --by type --top 10
    "$bin"/heapman paths out/mono_game.hml --at level_end#3 --type 'Game\.Enemy$' --max-paths 1 \
      --dot out/mono_game-enemy-paths.dot --gexf out/mono_game-enemy-paths.gexf
    if command -v dot >/dev/null; then
      dot -Tsvg out/mono_game-enemy-paths.dot -o out/mono_game-enemy-paths.svg
    fi
    # The same game on the C++ heap (new/delete), recorded and blamed the same way.
    "$bin"/heaprec run -o out/native_game.hml -- build/samples/native_game 3 200
    "$bin"/heapman blame out/native_game.hml --at level_end#2 --top 10 --csv out/native_game-blame.csv
    "$bin"/heapman info out/native_game.hml --json out/native_game-info.json
    # Heap maps: each sample game's heap at a level end (PNG), and a video of each over its run
    # (H.264 MP4, WebVTT subtitles of its events and frame numbers beside it).
    "$bin"/heapman map out/gc_game.hml --at level_end#2 --color function -o out/gc_game-map.png
    "$bin"/heapman video out/gc_game.hml --every frame:3 --color function -o out/gc_game-heap.mp4
    "$bin"/heapman map out/mono_game.hml --at level_end#3 --color type -o out/mono_game-map.png
    "$bin"/heapman video out/mono_game.hml --every frame:3 --color type -o out/mono_game-heap.mp4
    "$bin"/heapman map out/native_game.hml --at level_end#2 --color function \
      -o out/native_game-map.png
    "$bin"/heapman video out/native_game.hml --every frame:2 --color function \
      -o out/native_game-heap.mp4
    # Leak suspects of both games: what grows at every level_end, the container where it
    # collects, the static that holds it, and its root path (Graphviz).
    "$bin"/heapman leaks out/gc_game.hml --top 3 --dot-dir out/gc_game-leaks
    "$bin"/heapman leaks out/mono_game.hml --top 3 --dot-dir out/mono_game-leaks \
      --json out/mono_game-leaks.json
    # One HTML page per sample game (live heap over time, blame, growth, churn, flame graphs,
    # retained sizes): self-contained, open it in a browser.
    for game in gc_game mono_game native_game; do
      "$bin"/heapman report out/$game.hml -o out/$game-report.html
    done
    echo
    echo "outputs in out/:"
    echo "  gc_game.hml              the log of the bdwgc sample game (heapman gc_game.hml: a shell on it)"
    echo "  gc_game-shared.hml       the same log without its RAM dumps (the program's memory), to share"
    echo "  gc_game-blame.csv        live bytes per blame function at level_end#2"
    echo "  gc_game-diff.csv         growth per function from level_start#2 to level_end#2"
    echo "  gc_game-live.folded      folded stacks of the live set at level_end#2"
    echo "  mono_game.hml, mono_game-blame.csv, mono_game-diff.csv   the C# sample on mono-boehm"
    echo "  mono_game-enemy-paths.dot/.svg/.gexf   what holds its enemies after level 3 (Graphviz, Gephi)"
    echo "  native_game.hml, native_game-blame.csv, native_game-info.json   the C++ heap sample"
    echo "  gc_game-map.png, mono_game-map.png, native_game-map.png   each game's heap at a level end"
    echo "  gc_game-heap.mp4, mono_game-heap.mp4, native_game-heap.mp4 (+ .vtt)   its heap over the run"
    echo "  gc_game-leaks/, mono_game-leaks/   the leak suspects' root paths (suspect-N.dot)"
    echo "  gc_game-report.html, mono_game-report.html, native_game-report.html   one HTML page per game"
    echo "report pages: $(cd out && for g in gc_game mono_game native_game; do printf '%s ' "$PWD/$g-report.html"; done)"
    echo "to explore a log in the browser, any moment of it: out/install/bin/heapman serve out/gc_game.hml (then open the URL it prints)"
    ;;
  test)
    cmake/deps.sh test
    cmake -S . -B build-ci -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHEAPMAN_WERROR=ON >/dev/null
    cmake --build build-ci -j"$jobs"
    (cd build-ci && ctest --output-on-failure -j"$jobs")
    # Fuzzing the reader: clang + libFuzzer, ASan and UBSan on everything but the fuzz engine.
    CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DHEAPMAN_WERROR=ON -DHEAPMAN_FUZZ=ON -DHEAPMAN_SANITIZE=ON -DHEAPMAN_BENCH=OFF >/dev/null
    cmake --build build-fuzz -j"$jobs" --target reader_fuzz demo_log
    tests/fuzz/run_fuzz.sh build-fuzz/tests/fuzz/reader_fuzz build-fuzz/samples/demo_log "${FUZZ_SECONDS:-60}"
    echo "all tests passed"
    ;;
  *)
    echo "usage: cmake/setup.sh main|test" >&2
    exit 2
    ;;
esac
