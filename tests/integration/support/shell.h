// What the integration tests share: running a shell command with its output captured, and a
// temporary directory that is removed unless HEAPMAN_KEEP_TEST_FILES is set.
#pragma once

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace hmtest {

struct ShellResult {
  int status = -1;  // the exit status; -1 when the command did not exit (a signal)
  std::string out, err;
};

// Runs `cmd` with /bin/sh; its stdout and stderr apart.
inline ShellResult runShell(const std::string& cmd) {
  static int serial = 0;
  std::string errFile = (std::filesystem::temp_directory_path() /
                         ("heapman-test-err-" + std::to_string(getpid()) + "-" +
                          std::to_string(++serial)))
                            .string();
  ShellResult r;
  FILE* p = popen(("{ " + cmd + "\n} 2>'" + errFile + "'").c_str(), "r");
  REQUIRE(p);
  char buf[65536];
  while (size_t n = fread(buf, 1, sizeof buf, p)) r.out.append(buf, n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  std::ifstream e(errFile);
  r.err.assign(std::istreambuf_iterator<char>(e), std::istreambuf_iterator<char>());
  std::filesystem::remove(errFile);
  return r;
}

// A new directory under $TMPDIR (or /tmp) named heapman-TAG-XXXXXX.
inline std::string makeTempDir(const std::string& tag) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/heapman-" + tag + "-XXXXXX";
  std::vector<char> dir(pattern.begin(), pattern.end());
  dir.push_back('\0');
  REQUIRE(mkdtemp(dir.data()));
  return dir.data();
}

// Removes `dir` and what it holds, unless HEAPMAN_KEEP_TEST_FILES is set (to look at them).
inline void removeTempDir(const std::string& dir) {
  if (!dir.empty() && !std::getenv("HEAPMAN_KEEP_TEST_FILES")) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
}

}  // namespace hmtest
