#!/usr/bin/env bash
# Installs the Debian packages HeapMan needs to build, test and run, skipping those already present.
# Usage: cmake/deps.sh [build|test|bench]   (test adds what the test suite needs: clang for the
# fuzzer, Node.js and puppeteer-core for the browser test; bench what bench/ records and compares
# with: sqlite3, heaptrack, w3m, gbrainy under Xvfb)
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  liblz4-dev capnproto libcapnp-dev libxxhash-dev libboost-program-options-dev catch2 libre2-dev
  libunwind-dev libdw-dev libgc-dev
  # Mono with the Boehm collector: the runtime, the C# compiler and assemblies (mono-devel), the
  # profiler API headers (libmono-2.0-dev), Mono's own log profiler (the benchmark's peer)
  mono-runtime-boehm mono-devel libmono-2.0-dev libmono-profiler
  # Graphviz: the main job renders the heap graph's paths (dot -Tsvg); the tests open them too
  graphviz
  # heap-map pictures (libpng, the field's standard) and videos (Debian's ffmpeg, through a pipe)
  libpng-dev ffmpeg
  # heapman serve: a maintained HTTP server library
  libcpp-httplib-dev
  # the store of many runs (SQLite) and budget files (TOML: toml++, JSON: nlohmann/json)
  libsqlite3-dev libtomlplusplus-dev nlohmann-json3-dev
)
if [ "${1:-build}" = test ]; then
  # clang: the fuzzer; python3: the CLI tests parse JSON; guile, ecl: real bdwgc programs to record
  packages+=(clang-14 libclang-rt-14-dev python3 guile-3.0 ecl)
  # the graph exporters' files opened by the real tools: xmllint (GEXF 1.3 XSD), networkx with
  # pydot on the system python3 (and Graphviz, above)
  packages+=(libxml2-utils python3-networkx python3-pydot)
  # leaks --json validated against docs/leaks.schema.json by the real validator
  packages+=(python3-jsonschema)
  # the ClickHouse store's tests start a server of their own (its package's service stays off)
  packages+=(clickhouse-server)
  # the HTML report loaded by a real browser (headless, JavaScript errors counted)
  packages+=(chromium)
  # heapman serve's page driven in that browser: Node.js and npm (Debian's, unless a node and an
  # npm are there already), then puppeteer-core from npm, below
  command -v node >/dev/null || packages+=(nodejs)
  command -v npm >/dev/null || packages+=(npm)
fi
if [ "${1:-build}" = bench ]; then
  # Real programs without frame pointers to record (run_unwind_bench.sh), and the peer profiler
  packages+=(sqlite3 heaptrack w3m)
  # a real GTK# game on mono-boehm, run under a virtual X server (run_recording_cost.sh)
  packages+=(gbrainy xvfb xauth)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ "${1:-build}" = test ]; then
  # puppeteer-core for tests/integration/serve/browser, as its lock file pins it, into that
  # directory; it drives Debian's Chromium and never downloads a browser of its own.
  browser_test="$(cd "$(dirname "$0")/.." && pwd)/tests/integration/serve/browser"
  if ! (cd "$browser_test" && node -e "process.exit(require('./node_modules/puppeteer-core/package.json').version ===
        require('./package-lock.json').packages['node_modules/puppeteer-core'].version ? 0 : 1)" 2>/dev/null); then
    echo "deps: npm ci in $browser_test (puppeteer-core)" >&2
    (cd "$browser_test" && PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund >/dev/null)
  fi
fi
