# Sourced by the shell integration tests: a work directory of their own, removed at exit, failures
# counted rather than stopping at the first, and the verdict at the end.

# enter_work NAME: makes $WORK under $TMPDIR (or /tmp), removed when the test exits, and enters it.
enter_work() {
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/heapman-$1-XXXXXX")
  trap 'rm -rf "$WORK"' EXIT
  cd "$WORK"
}

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# expect_grep NAME FILE REGEX: FILE must match the extended regex.
expect_grep() {
  local name=$1 file=$2 re=$3
  if ! grep -Eq -- "$re" "$file"; then
    fail "$name: $file does not match /$re/"
    sed 's/^/  | /' "$file" >&2
  fi
}

# finish MESSAGE: exit 1 saying how many checks failed, or print MESSAGE.
finish() {
  if ((failures)); then
    echo "$failures check(s) failed" >&2
    exit 1
  fi
  echo "$1"
}
