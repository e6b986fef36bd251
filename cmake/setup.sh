#!/usr/bin/env bash
# The two set-up commands of README.md. Each installs the Debian packages it needs, builds, and runs.
#
#   cmake/setup.sh main   build and install to out/install, then run the main job: record the
#                         sample game with heaprec, print `heapman info` of the log, write its
#                         JSON summary. Outputs go to out/.
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
    cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build build -j"$jobs"
    cmake --install build --prefix out/install >/dev/null
    mkdir -p out
    # Record the sample game (C++ heap, two threads, levels and frames), then summarize the log.
    out/install/bin/heaprec run -o out/native_game.hml -- build/samples/native_game 3 200
    out/install/bin/heapman info out/native_game.hml
    out/install/bin/heapman info out/native_game.hml --json >out/native_game-info.json
    out/install/bin/heapman verify out/native_game.hml
    echo
    echo "outputs: out/native_game.hml (the log), out/native_game-info.json (its summary for tools)"
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
