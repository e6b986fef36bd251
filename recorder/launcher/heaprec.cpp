// heaprec: record a program's heap activity into a HeapMan log.
//
//   heaprec run [-o FILE] [--depth N] [--follow-exec] -- PROGRAM [ARGS...]
//
// Runs PROGRAM with the recorder module preloaded, waits for it, and exits with its status
// (128 + signal number when a signal killed it). PROGRAM's output is its own; heaprec adds one
// line on stderr at the end saying where the log went.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>
#include <algorithm>

#include "heapman/logformat/reader.h"
#include "heapman/logformat/summary.h"

namespace po = boost::program_options;

namespace {

constexpr int kUsage = 2;
constexpr int kCannotRun = 127;

const char* kSynopsis =
    "usage: heaprec run [-o FILE] [--depth N] [--unwind fp|auto|dwarf] [--time-resolution NS]\n"
    "                   [--alloc-time-every N]\n"
    "                   [--follow-exec] [--ram-dumps off|every|every:N|event:NAME]\n"
    "                   [--mono-stacks on|off] [--mono-malloc]\n"
    "                   -- PROGRAM [ARGS...]\n";

std::string selfDir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

// The preload module: beside heaprec in a build tree, under ../lib/heapman when installed.
std::string findModule() {
  std::string dir = selfDir();
  for (const std::string& c : {dir + "/" HEAPMAN_PRELOAD_NAME,
                               dir + "/" HEAPMAN_PRELOAD_RELDIR "/" HEAPMAN_PRELOAD_NAME}) {
    if (access(c.c_str(), R_OK) == 0) {
      char real[PATH_MAX];
      return realpath(c.c_str(), real) ? std::string(real) : c;
    }
  }
  return {};
}

std::string absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[PATH_MAX];
  return getcwd(cwd, sizeof cwd) ? std::string(cwd) + "/" + path : path;
}

int run(const std::vector<std::string>& options, const std::vector<std::string>& program) {
  po::options_description desc("heaprec run options");
  desc.add_options()("help,h", "show this help")(
      "output,o", po::value<std::string>(),
      "log file (default: heaprec.PROGRAM.PID.hml in the current directory)")(
      "depth", po::value<unsigned>()->default_value(32), "stack frames recorded per event (1-256)")(
      "unwind", po::value<std::string>()->default_value("auto"),
      "stacks: fp (frame pointers only), auto (fp, libunwind where the chain breaks), dwarf "
      "(libunwind always: exact without frame pointers, slower)")(
      "time-resolution", po::value<unsigned>()->default_value(10000),
      "event time resolution in ns (coarser: smaller logs)")(
      "alloc-time-every", po::value<unsigned>()->default_value(16),
      "an allocation reads the clock at least every Nth of its thread (and after its thread "
      "paused); the others take the last reading: 1 reads it for every allocation, slower")(
      "follow-exec", "record programs PROGRAM executes too (default: only PROGRAM and its forks)")(
      "ram-dumps", po::value<std::string>()->default_value("off"),
      "bdwgc programs: copy the live heap, roots and stacks at collections: off, every, "
      "every:N (every Nth collection), event:NAME (the first collection after each custom "
      "event NAME)")(
      "mono-stacks", po::value<std::string>()->default_value("on"),
      "Mono programs: managed stacks of allocations (on: call instrumentation keeps a shadow "
      "stack; off: faster, allocations carry no stack)")(
      "mono-malloc", "Mono programs: record the runtime's own malloc/free too (default: only "
      "the managed heap)");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(options).options(desc).run(), vm);
    po::notify(vm);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "heaprec: %s\n%s", e.what(), kSynopsis);
    return kUsage;
  }
  if (vm.count("help")) {
    std::cout << kSynopsis << desc;
    return 0;
  }
  if (program.empty()) {
    std::fprintf(stderr, "heaprec: no program to run\n%s", kSynopsis);
    return kUsage;
  }
  unsigned depth = vm["depth"].as<unsigned>();
  if (depth < 1 || depth > 256) {
    std::fprintf(stderr, "heaprec: --depth must be between 1 and 256\n");
    return kUsage;
  }
  std::string ramDumps = vm["ram-dumps"].as<std::string>();
  if (!(ramDumps == "off" || ramDumps == "every" ||
        (ramDumps.rfind("every:", 0) == 0 && ramDumps.size() > 6 &&
         ramDumps.size() < 16 && ramDumps.find_first_not_of("0123456789", 6) == std::string::npos &&
         std::stoul(ramDumps.substr(6)) > 0) ||
        (ramDumps.rfind("event:", 0) == 0 && ramDumps.size() > 6))) {
    std::fprintf(stderr,
                 "heaprec: --ram-dumps must be off, every, every:N (N >= 1) or event:NAME, not "
                 "'%s'\n",
                 ramDumps.c_str());
    return kUsage;
  }
  std::string monoStacks = vm["mono-stacks"].as<std::string>();
  if (monoStacks != "on" && monoStacks != "off") {
    std::fprintf(stderr, "heaprec: --mono-stacks must be on or off, not '%s'\n", monoStacks.c_str());
    return kUsage;
  }
  std::string unwind = vm["unwind"].as<std::string>();
  if (unwind != "fp" && unwind != "auto" && unwind != "dwarf") {
    std::fprintf(stderr, "heaprec: --unwind must be fp, auto or dwarf, not '%s'\n", unwind.c_str());
    return kUsage;
  }
  std::string module = findModule();
  if (module.empty()) {
    std::fprintf(stderr,
                 "heaprec: cannot find %s next to heaprec or in %s/%s; reinstall HeapMan\n",
                 HEAPMAN_PRELOAD_NAME, selfDir().c_str(), HEAPMAN_PRELOAD_RELDIR);
    return kCannotRun;
  }

  // The log's name needs the child's pid: the child waits on a pipe until the parent knows it.
  int gate[2];
  if (pipe2(gate, O_CLOEXEC) != 0) {
    std::perror("heaprec: pipe");
    return kCannotRun;
  }
  std::string output = vm.count("output") ? absolute(vm["output"].as<std::string>()) : "";
  pid_t child = fork();
  if (child < 0) {
    std::perror("heaprec: fork");
    return kCannotRun;
  }
  if (child == 0) {
    close(gate[1]);
    char out[PATH_MAX + 1] = {};
    ssize_t n = read(gate[0], out, PATH_MAX);
    if (n <= 0) _exit(kCannotRun);
    std::string pre = module;
    if (const char* old = getenv("LD_PRELOAD"); old && *old) pre += std::string(":") + old;
    setenv("LD_PRELOAD", pre.c_str(), 1);
    setenv("HEAPMAN_OUTPUT", out, 1);
    setenv("HEAPMAN_DEPTH", std::to_string(depth).c_str(), 1);
    setenv("HEAPMAN_TIME_RES_NS", std::to_string(std::max(1u, vm["time-resolution"].as<unsigned>())).c_str(), 1);
    setenv("HEAPMAN_ALLOC_TIME_EVERY",
           std::to_string(std::max(1u, vm["alloc-time-every"].as<unsigned>())).c_str(), 1);
    setenv("HEAPMAN_UNWIND", unwind.c_str(), 1);
    if (ramDumps != "off") setenv("HEAPMAN_RAM_DUMPS", ramDumps.c_str(), 1);
    if (vm.count("follow-exec")) setenv("HEAPMAN_FOLLOW_EXEC", "1", 1);
    // A Mono program loads the recorder as its profiler module too (the module removes this
    // again in a program that is not Mono).
    std::string mono = "--profile=heapman";
    if (const char* old = getenv("MONO_ENV_OPTIONS"); old && *old) mono += std::string(" ") + old;
    setenv("MONO_ENV_OPTIONS", mono.c_str(), 1);
    if (monoStacks == "off") setenv("HEAPMAN_MONO_NOSTACKS", "1", 1);
    if (vm.count("mono-malloc")) setenv("HEAPMAN_MONO_MALLOC", "1", 1);
    std::vector<char*> argv;
    for (const std::string& a : program) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "heaprec: cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(errno == ENOENT ? kCannotRun : 126);
  }
  close(gate[0]);
  if (output.empty()) {
    std::string name = program[0].substr(program[0].rfind('/') + 1);
    output = absolute("heaprec." + name + "." + std::to_string(child) + ".hml");
  }
  (void)!write(gate[1], output.c_str(), output.size());
  close(gate[1]);

  // Like a shell: the terminal's interrupt goes to the program, heaprec waits for it.
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

  try {
    heapman::log::LogReader reader = heapman::log::LogReader::open(output);
    uint64_t events = reader.index() ? reader.index()->eventCount
                                     : heapman::log::summarize(reader).events;
    std::fprintf(stderr, "heaprec: wrote %s (%llu events%s)\n", output.c_str(),
                 static_cast<unsigned long long>(events),
                 reader.end().complete ? "" : ", truncated: the program did not exit normally");
  } catch (const std::exception& e) {
    // Not a regular file (e.g. /dev/full): the recorder already said what went wrong.
    struct stat st;
    if (stat(output.c_str(), &st) != 0 || S_ISREG(st.st_mode))
      std::fprintf(stderr, "heaprec: no readable log at %s (%s)\n", output.c_str(), e.what());
  }
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::fputs(kSynopsis, args.empty() ? stderr : stdout);
    return args.empty() ? kUsage : 0;
  }
  if (args[0] != "run") {
    std::fprintf(stderr, "heaprec: unknown command '%s'\n%s", args[0].c_str(), kSynopsis);
    return kUsage;
  }
  // Options up to "--" (or up to the first word that is not an option) are heaprec's.
  std::vector<std::string> options, program;
  size_t i = 1;
  for (; i < args.size(); ++i) {
    if (args[i] == "--") {
      ++i;
      break;
    }
    if (args[i].empty() || args[i][0] != '-') break;
    options.push_back(args[i]);
    if ((args[i] == "-o" || args[i] == "--output" || args[i] == "--depth" ||
         args[i] == "--time-resolution" || args[i] == "--alloc-time-every" || args[i] == "--unwind" || args[i] == "--ram-dumps" ||
         args[i] == "--mono-stacks") &&
        i + 1 < args.size())
      options.push_back(args[++i]);
  }
  program.assign(args.begin() + static_cast<long>(i), args.end());
  return run(options, program);
}
